#include "harness/run/epoch_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "harness/run/evaluation.h"
#include "harness/run/fault_injection.h"
#include "harness/run/step_loop.h"
#include "kernels/device_plan.h"

namespace cnnbench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// batch-norm statistics averaged over ranks: one model to evaluate and to checkpoint
void average_buffers(Plan& plan, const Communicator& comm, Timeline* timeline) {
  const auto averaging = std::chrono::steady_clock::now();
  DevicePlan* device = plan.device();
  if (device) device->download_state();
  std::vector<double> stats(plan.buffers().begin(), plan.buffers().end());
  comm.allreduce_sum(stats.data(), stats.size());
  for (size_t i = 0; i < stats.size(); ++i) plan.buffers()[i] = static_cast<float>(stats[i] / comm.size());
  if (device) device->upload_state();
  if (timeline)
    timeline->span(Track::compute, "batch-norm statistics averaged", averaging, std::chrono::steady_clock::now());
}

// Collective: the training figures of `trained` steps of the epoch, the same on every rank.
EpochMetrics training_figures(const EpochRun& run, int64_t epoch, int64_t trained, double loss_sum, double correct,
                              double stall_sec, double seconds, double lr) {
  EpochMetrics m;
  m.epoch = epoch + 1;
  double sums[2] = {loss_sum / std::max<int64_t>(1, trained), correct};
  run.comm.allreduce_sum(sums, 2);
  // the slowest rank's seconds, and the most any rank waited for its input: the others wait that
  // out at the next exchange (a mean over ranks hid one rank's stalls)
  double slowest[2] = {seconds, stall_sec};
  run.comm.allreduce_max(slowest, 2);
  seconds = slowest[0];
  const double images = static_cast<double>(trained * run.settings.global_batch);
  m.train_loss = sums[0] / run.comm.size();
  m.train_top1 = sums[1] / images;
  m.input_stall_sec = slowest[1];
  m.seconds = seconds;
  m.learning_rate = lr;
  m.train_steps = trained;
  m.images_per_sec = images / seconds;
  m.compute_images_per_sec = images / (seconds - m.input_stall_sec);
  return m;
}

}  // namespace

bool evaluation_due(int64_t epochs_done, double every) {
  if (!(every > 0)) return false;
  // multiples of `every` up to the end of this epoch and of the one before; a hair of slack so
  // that 0.1 x 30 counts as reaching 3
  auto multiples = [every](double epochs) { return std::floor(epochs / every + 1e-9); };
  return multiples(static_cast<double>(epochs_done)) > multiples(static_cast<double>(epochs_done - 1));
}

EpochMetrics train_epoch(const EpochRun& run, int64_t epoch, int64_t skip, int64_t epoch_steps, int64_t& steps_done) {
  const Config& config = run.config;
  BatchPipeline& input = run.input;
  const int64_t trained = epoch_steps - skip;  // the steps this run trains of this epoch
  input.start_epoch_at(epoch, skip);  // a resume inside the epoch: its batches from there
  const double stall_before = input.stall_sec();
  const auto start = std::chrono::steady_clock::now();
  double loss_sum = 0, correct = 0, lr = 0;
  double checkpoint_sec = 0;  // writing checkpoints inside the epoch (--save_model_steps, --save_model_secs)
  for (int64_t s = skip; s < epoch_steps; ++s) {
    const auto step_start = std::chrono::steady_clock::now();
    lr = run.schedule.at(static_cast<double>(epoch) + static_cast<double>(s) / static_cast<double>(run.steps_per_epoch));
    run.plan.set_input(next_batch(input, run.timeline));
    StepRecord r = train_step(run.plan, run.reducer, run.sgd, static_cast<float>(lr), input.current_labels(), true,
                              run.scaler, run.timeline, run.overlap);
    slow_step_if_asked(s);  // CNNBENCH_TEST_SLOW_STEP_MS, as in a benchmark's timed steps
    check_finite_loss(r, config, steps_done + 1, /*warmup=*/false, epoch + 1);
    if (run.timeline)
      run.timeline->span(Track::compute, "step", step_start, std::chrono::steady_clock::now(), {.step = steps_done + 1});  // from 1, as TensorBoard
    loss_sum += r.loss;
    correct += static_cast<double>(r.top1_correct);
    ++steps_done;
    if (run.events && steps_done % config.save_summaries_steps == 0) {
      r.time_sec = seconds_since(step_start);  // the step as this rank lived it, its wait for input included
      r.learning_rate = lr;
      write_step_scalars(*run.events, steps_done, r, run.settings.global_batch);
    }
    exit_here_if_asked(run.comm.rank(), steps_done);
    raise_signal_if_asked(run.comm.rank(), steps_done);
    // inside the epoch only: its end writes a checkpoint anyway (and a stop waits for it)
    if (run.trigger && run.trigger->after_step(steps_done) != CheckpointTrigger::none && s + 1 < epoch_steps) {
      if (run.overlap) run.overlap->finish();  // this step's updates, before the weights are written
      // the checkpoint's time is not training's: the epoch's seconds leave it out, as they leave
      // out the checkpoint at its end
      const auto pause = std::chrono::steady_clock::now();
      // the ranks' averaged statistics, as at an epoch's end: averaging is linear, so doing it
      // here too leaves the epoch's end where it would have been
      if (run.comm.size() > 1) average_buffers(run.plan, run.comm, run.timeline);
      // the epoch's figures so far go into the checkpoint, for a resume to complete
      run.checkpoint_inside_epoch(steps_done, training_figures(run, epoch, s + 1 - skip, loss_sum, correct,
                                                               input.stall_sec() - stall_before,
                                                               seconds_since(start) - checkpoint_sec, lr));
      checkpoint_sec += seconds_since(pause);
      if (run.trigger->stop_signal() != 0) {
        if (run.progress_bar) fmt::print("\n");
        return EpochMetrics{};
      }
    }
    if (run.progress_bar && (s % config.display_every == 0 || s + 1 == epoch_steps)) {
      const int width = 30, done = static_cast<int>(width * (s + 1) / epoch_steps);
      fmt::print("\rEpoch {}/{} [{}{}] {}/{} loss {:.3f}", epoch + 1, run.epochs, std::string(done, '='),
                 std::string(width - done, ' '), s + 1, epoch_steps, r.loss);
      std::fflush(stdout);
    }
  }
  if (run.progress_bar) fmt::print("\n");
  if (run.overlap) run.overlap->finish();  // the epoch's last updates, before anything reads the weights
  if (run.comm.size() > 1) average_buffers(run.plan, run.comm, run.timeline);
  return training_figures(run, epoch, trained, loss_sum, correct, input.stall_sec() - stall_before,
                          seconds_since(start) - checkpoint_sec, lr);
}

}  // namespace cnnbench
