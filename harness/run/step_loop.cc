#include "harness/run/step_loop.h"
#include "harness/run/lr_schedule.h"

#include <fmt/format.h>
#include <cmath>

#include <algorithm>
#include <chrono>

#include "harness/run/fault_injection.h"
#include "kernels/device_plan.h"

namespace cnnbench {
namespace {

// A device's phase times are durations on its clock: they end where synchronize() returned, as
// the update is the step's last device work.
void record_device_phases(Timeline& timeline, const StepPhases& p, std::chrono::steady_clock::time_point end) {
  auto before = [&](double sec) {
    return end - std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(sec));
  };
  const auto update = before(p.update_sec), backward = before(p.update_sec + p.backward_sec),
             forward = before(p.update_sec + p.backward_sec + p.forward_sec);
  timeline.span(Track::device, "forward", forward, backward);
  timeline.span(Track::device, "backward", backward, update);
  timeline.span(Track::device, "update", update, end);
}

// --overlap_forward: what the pending updates cost, as part of the step that paid for them.
void add_exchange(StepRecord& r, const OverlapStats& o) {
  r.update_sec += o.update_sec;
  r.exposed_sec += o.wait_sec;
  r.comm_sec += o.comm_sec;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

StepRecord one_step(const RunSettings& settings, const SgdConfig& sgd, double learning_rate, Plan& plan,
                    GradientExchange* reducer, ForwardOverlap* overlap, LossScaler* scaler, const float* images,
                    const int32_t* labels, bool timed, int64_t index, Timeline* timeline) {
  const auto start = std::chrono::steady_clock::now();
  if (images) plan.set_input(images);  // null: the images are on the device already
  StepRecord r = train_step(plan, reducer, sgd, static_cast<float>(learning_rate), labels, settings.training, scaler,
                            timeline, overlap);
  r.learning_rate = settings.training ? learning_rate : 0;
  // --overlap_forward: each step applies the step before's updates, the first timed one the last
  // warm-up step's, so N timed steps carry N exchanges; the last step's own are finished outside
  // the timing (inside it only without warm-up steps, whose first timed step applied none)
  const bool last = overlap && timed && index + 1 == settings.timed_steps;
  if (last && settings.warmup_steps == 0) add_exchange(r, overlap->finish());
  if (timed) slow_step_if_asked(index);  // CNNBENCH_TEST_SLOW_STEP_MS: a slower run, for the tests
  r.time_sec = seconds_since(start);
  r.ended_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (last && settings.warmup_steps > 0) overlap->finish();
  if (timeline)  // numbered from 1, as the log's step lines and TensorBoard number them
    timeline->span(Track::compute, timed ? "step" : "warm-up step", start, std::chrono::steady_clock::now(),
                   {.step = index + 1});
  return r;
}

}  // namespace

void check_finite_loss(const StepRecord& r, const Config& config, int64_t step, bool warmup, int64_t epoch) {
  if (std::isfinite(r.loss) || r.skipped || config.allow_nonfinite_loss) return;
  throw DivergedError(fmt::format("the loss is {} at {}step {}{}: the run diverged (lower --init_learning_rate, or "
                                  "--allow_nonfinite_loss to go on); no result written",
                                  r.loss, warmup ? "warm-up " : "", step,
                                  epoch > 0 ? fmt::format(" (epoch {})", epoch) : ""));
}

SgdConfig sgd_config(const Config& config) {
  SgdConfig sgd;
  sgd.momentum = config.optimizer == "sgd" ? 0.0f : static_cast<float>(config.momentum);
  sgd.lars = config.optimizer == "lars";
  sgd.lars_eta = static_cast<float>(config.lars_eta);
  sgd.weight_decay = static_cast<float>(config.weight_decay);
  sgd.decay_batch_norm = config.weight_decay_on_batch_norm;
  sgd.nesterov = config.nesterov;
  return sgd;
}

StepRecord train_step(Plan& plan, GradientExchange* reducer, const SgdConfig& sgd, float lr, const int32_t* labels,
                      bool training, LossScaler* scaler, Timeline* timeline, ForwardOverlap* overlap) {
  if (overlap && (scaler || plan.device()))
    throw std::logic_error("--overlap_forward: not with loss scaling or a device plan");
  StepRecord r;
  DevicePlan* device = plan.device();
  const auto start = std::chrono::steady_clock::now();
  auto phase = start;
  const double loss_scale = scaler ? scaler->scale() : 1.0;
  if (scaler) plan.set_loss_scale(static_cast<float>(loss_scale));
  plan.forward(training ? Mode::training : Mode::inference);  // --overlap_forward: last step's updates, too
  LossResult loss = plan.loss(labels);  // deferred on a device until synchronize()
  if (overlap) {  // what forward waited for and updated is not forward's own time
    const OverlapStats o = overlap->finish();
    r.forward_sec = seconds_since(phase) - o.wait_sec - o.update_sec;
    add_exchange(r, o);
    r.hidden_by_forward_sec = o.hidden_sec();
  } else {
    r.forward_sec = seconds_since(phase);
  }
  if (timeline) timeline->span(Track::compute, "forward", phase, std::chrono::steady_clock::now());
  if (training) {
    phase = std::chrono::steady_clock::now();
    plan.backward();
    r.backward_sec = seconds_since(phase);
    if (timeline) timeline->span(Track::compute, "backward", phase, std::chrono::steady_clock::now());
    phase = std::chrono::steady_clock::now();
    const bool update_per_bucket = reducer && !scaler && !overlap;  // the timeline's update spans, too
    if (overlap) {
      overlap->defer(sgd, lr);  // the updates wait for the next forward pass
    } else if (scaler) {
      // every bucket must be known finite before any is applied
      if (reducer) {
        const ReducerStepStats stats = reducer->wait_for_buckets(nullptr);
        r.comm_sec = stats.comm_sec;
        r.exposed_sec = stats.exposed_sec;
      }
      SgdConfig unscaled = sgd;
      unscaled.gradient_scale = static_cast<float>(1.0 / loss_scale);
      if (device) {
        device->sgd_step_if_finite(unscaled, lr);  // the outcome is known after synchronize()
      } else {
        r.skipped = !scaler->record(plan.gradients_finite());
        if (!r.skipped) plan.sgd_step(unscaled, lr);
      }
    } else if (update_per_bucket) {
      int bucket = 0;
      const ReducerStepStats stats = reducer->wait_for_buckets([&](const Bucket& b) {
        const auto update_start = std::chrono::steady_clock::now();
        plan.sgd_step(sgd, lr, b.offset, b.count);
        if (timeline)
          timeline->span(Track::update, "update", update_start, std::chrono::steady_clock::now(), {.bucket = bucket});
        ++bucket;
      });
      r.comm_sec = stats.comm_sec;
      r.exposed_sec = stats.exposed_sec;
    } else {
      plan.sgd_step(sgd, lr);
    }
    if (!overlap) r.update_sec = seconds_since(phase) - r.exposed_sec;
    if (timeline && !update_per_bucket && !overlap)
      timeline->span(Track::update, "update", phase, std::chrono::steady_clock::now());
  }
  std::chrono::steady_clock::time_point synchronized;
  if (device) {  // a device plan's step ends here; nothing to wait for on a CPU
    device->synchronize(&loss);
    synchronized = std::chrono::steady_clock::now();
    if (training && scaler) r.skipped = !scaler->record(device->last_update_applied());
  }
  if (reducer) {
    const ReducerStepStats device = reducer->finish_step();
    r.comm_sec += device.comm_sec;
    r.exposed_sec += device.exposed_sec;
  }
  if (StepPhases p; device && device->device_phase_times(&p)) {  // host times above were only the queuing
    r.forward_sec = p.forward_sec;
    r.backward_sec = p.backward_sec;
    r.update_sec = std::max(0.0, p.update_sec - r.exposed_sec);
    if (timeline) record_device_phases(*timeline, p, synchronized);
  }
  if (training && scaler) r.loss_scale = scaler->scale();
  r.time_sec = seconds_since(start);
  r.loss = loss.loss;
  r.top1_correct = loss.top1_correct;
  r.top5_correct = loss.top5_correct;
  return r;
}

std::vector<StepRecord> run_step_loop(const RunSettings& settings, const Config& config, Plan& plan,
                                      GradientExchange* reducer, ForwardOverlap* overlap, LossScaler* scaler,
                                      const float* images, const int32_t* labels, const StepLoopEvents& events) {
  const SgdConfig sgd = sgd_config(config);
  if (plan.device()) {  // synthetic images stay on the GPU, as tf_cnn_benchmarks' did
    plan.set_input(images);
    images = nullptr;
  }
  // tf_cnn_benchmarks applies its schedules on synthetic data too, counting epochs of the data
  // set's size from the first warm-up step
  const double images_per_epoch = static_cast<double>(std::max<int64_t>(1, dataset_train_size(settings.dataset)));
  const double epochs_per_step = static_cast<double>(settings.global_batch) / images_per_epoch;
  const LrSchedule schedule = make_lr_schedule(
      settings.learning_rate, config.piecewise_learning_rate_schedule, config.num_learning_rate_warmup_epochs,
      config.cosine_learning_rate, static_cast<double>(settings.warmup_steps + settings.timed_steps) * epochs_per_step,
      settings.global_batch, config.learning_rate_base_batch);
  auto rate_at = [&](int64_t step) { return schedule.at(static_cast<double>(step) * epochs_per_step); };
  if (events.warmup_started) events.warmup_started();
  for (int64_t i = 0; i < settings.warmup_steps; ++i) {
    const StepRecord r = one_step(settings, sgd, rate_at(i), plan, reducer, overlap, scaler, images, labels,
                                  /*timed=*/false, i, events.timeline);
    check_finite_loss(r, config, i + 1, /*warmup=*/true);
  }
  if (events.warmup_done) events.warmup_done();

  if (config.layer_timing) plan.set_layer_timing(true);
  std::vector<StepRecord> steps;
  steps.reserve(settings.timed_steps);
  // the L2 term of the loss the log prints (tf_cnn_benchmarks' total_loss), from the weights the
  // step starts from, read outside the step's time (with --overlap_forward, before the previous
  // step's update, which the step applies in its forward pass; the read, milliseconds on the
  // printed steps alone, then runs beside that update's exchange)
  const bool l2_term = settings.training && config.weight_decay > 0;
  for (int64_t i = 0; i < settings.timed_steps; ++i) {
    const double l2_loss = l2_term && step_line_shown(i, config.display_every)
                               ? config.weight_decay * plan.decayed_weights_l2(sgd)
                               : 0;
    steps.push_back(one_step(settings, sgd, rate_at(settings.warmup_steps + i), plan, reducer, overlap, scaler, images,
                             labels, /*timed=*/true, i, events.timeline));
    steps.back().l2_loss = l2_loss;
    check_finite_loss(steps.back(), config, i + 1, /*warmup=*/false);
    if (events.step_done) events.step_done(i, steps);
  }
  if (overlap) overlap->finish();  // no timed steps: the warm-up's updates
  return steps;
}

}  // namespace cnnbench
