#include "harness/run/training_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "comm/gradient_reducer.h"
#include "harness/run/step_loop.h"
#include "harness/compare/baseline.h"
#include "harness/report/cpu_wait.h"
#include "harness/run/fault_injection.h"
#include "kernels/cpu_peak.h"
#include "harness/report/result_record.h"
#include "harness/run/run_setup.h"
#include "harness/report/run_context.h"
#include "harness/cli/run_settings.h"
#include "harness/report/run_summary.h"
#include "harness/run/synthetic_data.h"
#include "harness/report/event_file.h"
#include "harness/report/tf_log.h"
#include "harness/report/timeline_file.h"
#include "harness/report/result_files.h"
#include "kernels/backend.h"
#include "kernels/device_plan.h"
#include "kernels/threads.h"

namespace cnnbench {
namespace {

// Keeps the timed steps with time_sec replaced by the max over ranks, synchronising at the
// steps where every rank calls sync_through (the display points and the end).
class GlobalSteps {
 public:
  explicit GlobalSteps(const Communicator& comm) : comm_(comm) {}
  const std::vector<StepRecord>& sync_through(const std::vector<StepRecord>& local) {
    std::vector<double> times;
    for (size_t i = global_.size(); i < local.size(); ++i) times.push_back(local[i].time_sec);
    if (comm_.size() > 1 && !times.empty()) comm_.allreduce_max(times.data(), times.size());
    for (size_t i = global_.size(), j = 0; i < local.size(); ++i, ++j) {
      global_.push_back(local[i]);
      global_.back().time_sec = times[j];
    }
    return global_;
  }

 private:
  const Communicator& comm_;
  std::vector<StepRecord> global_;
};

// One whole run of the step loop on setup's plan: the figures the results are made of if it is
// the one reported.
struct RunOutcome {
  std::vector<StepRecord> steps;  // time_sec: the max over ranks
  RunSummary summary;
  std::vector<LayerTime> layers;  // with --layer_timing
};

// --summary_dir: the scalars of every save_summaries_steps-th step in `steps` not written yet.
// Step numbers are 1-based and go on across --repeats (`offset`).
class StepSummaries {
 public:
  StepSummaries(EventWriter* file, const Config& config, const RunSettings& settings, int64_t offset)
      : file_(file), every_(config.save_summaries_steps), settings_(settings), offset_(offset) {}
  void write(const std::vector<StepRecord>& steps) {
    if (!file_) return;
    for (; written_ < static_cast<int64_t>(steps.size()); ++written_) {
      if ((written_ + 1) % every_ != 0) continue;
      const StepRecord& r = steps[written_];
      const int64_t step = offset_ + written_ + 1;
      write_step_scalars(*file_, step, r, settings_.global_batch);
    }
  }

 private:
  EventWriter* file_;
  int64_t every_;
  const RunSettings& settings_;
  int64_t offset_, written_ = 0;
};

RunOutcome run_once(const Config& config, Communicator& comm, RunSetup& setup, const Batch& batch,
                    const PeakResult& peak, TfLog& log, Timeline* timeline, EventWriter* events_file,
                    int64_t step_offset) {
  const RunSettings& settings = setup.settings;
  Plan* plan = setup.plan.get();
  start_from_rank0_weights(*plan, comm, config.seed);
  std::unique_ptr<GradientExchange> reducer = attach_reducer(*plan, comm, config, settings);
  if (reducer) reducer->set_timeline(timeline);
  const std::unique_ptr<ForwardOverlap> overlap = attach_forward_overlap(*plan, reducer.get(), config, timeline);
  if (timeline && config.layer_timing)
    plan->set_layer_span_hook([timeline, &graph = setup.graph](int node, bool backward, auto start, auto end) {
      timeline->span(Track::compute, graph.nodes[node].name + (backward ? " backward" : " forward"), start, end,
                     {.node = node});
    });

  GlobalSteps global(comm);
  StepSummaries summaries(events_file, config, settings, step_offset);
  StepLoopEvents events;
  events.timeline = timeline;
  double waited_before = 0;
  int64_t sent_before = -1;  // bytes this rank had sent when the timed steps began (-1: not counted)
  int64_t first_timed_exchange = -1;  // --overlap_forward: how many exchanges ended before it
  int64_t sent_at_first = -1;         // and the bytes sent when they had (read after timed step 1)
  std::chrono::steady_clock::time_point timed_start;
  events.warmup_started = [&] { log.warmup_started(); };
  events.warmup_done = [&] {
    log.warmup_done();
    waited_before = runqueue_wait_sec(compute_thread_ids());
    sent_before = reducer ? reducer->bytes_sent() : -1;
    // the last warm-up step's exchange, still on its way, is not a timed step's
    first_timed_exchange = overlap ? overlap->exchanges_finished() + (overlap->exchange_open() ? 1 : 0) : -1;
    timed_start = std::chrono::steady_clock::now();
  };
  events.step_done = [&](int64_t i, const std::vector<StepRecord>& steps) {
    exit_here_if_asked(comm.rank(), i + 1);
    if (i == 0 && overlap) sent_at_first = overlap->bytes_sent_when_finished(first_timed_exchange);
    if (step_line_shown(i, config.display_every)) {
      const std::vector<StepRecord>& synced = global.sync_through(steps);
      log.step(i, synced);
      summaries.write(synced);
    }
  };
  const std::unique_ptr<LossScaler> scaler = make_loss_scaler(config);
  const std::vector<StepRecord> local = run_step_loop(settings, config, *plan, reducer.get(), overlap.get(), scaler.get(),
                                                      batch.images.data(), batch.labels.data(), events);
  // CPU wait over the timed steps, as a share of the compute threads' time; the worst rank's
  const double waited_after = runqueue_wait_sec(compute_thread_ids());
  const double timed_sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - timed_start).count();
  // the compute threads' own wait: a thread waits at most the whole time, a share at most 1
  double wait_fraction = waited_before >= 0 && waited_after >= 0 && timed_sec > 0
                             ? std::clamp((waited_after - waited_before) / (setup.threads * timed_sec), 0.0, 1.0)
                             : -1;
  comm.allreduce_max(&wait_fraction, 1);
  RunOutcome out;
  out.steps = global.sync_through(local);
  summaries.write(out.steps);
  // ranks that exchange no gradients (--variable_update=independent, forward only) never wait for
  // each other: the run took the slowest rank's own time, not the sum of each step's slowest
  double own_sec = 0;
  for (const StepRecord& r : local) own_sec += r.time_sec;
  comm.allreduce_max(&own_sec, 1);
  RunSummary& summary = out.summary;
  summary = summarize(settings, setup.graph, out.steps, peak, reducer || comm.size() == 1 ? 0 : own_sec);
  summary.working_memory_bytes = static_cast<int64_t>(setup.plan->working_memory_bytes());
  summary.unshared_working_memory_bytes = static_cast<int64_t>(setup.plan->unshared_working_memory_bytes());
  const DevicePlan* device = setup.plan->device();
  summary.working_memory_on_device = device != nullptr;
  double device_peak = device ? static_cast<double>(device->peak_device_memory_bytes()) : 0;
  comm.allreduce_max(&device_peak, 1);  // every rank calls it: a collective
  summary.peak_device_memory_bytes = static_cast<int64_t>(device_peak);
  // per-rank figures: communication as the worst rank saw it, skew of compute time
  double worst[2] = {summary.comm_mean_sec, summary.exposed_mean_sec};
  comm.allreduce_max(worst, 2);
  summary.comm_mean_sec = worst[0];
  summary.exposed_mean_sec = worst[1];
  summary.overlap_forward = overlap != nullptr;
  comm.allreduce_min(&summary.hidden_by_forward_mean_sec, 1);
  double compute = 0;
  for (const StepRecord& r : local) compute += r.time_sec - r.exposed_sec;
  compute /= static_cast<double>(std::max<size_t>(1, local.size()));
  double slowest = compute, fastest = compute;
  comm.allreduce_max(&slowest, 1);
  comm.allreduce_min(&fastest, 1);
  summary.rank_skew = fastest > 0 ? slowest / fastest - 1 : 0;
  summary.buckets = reducer ? static_cast<int>(reducer->buckets().size()) : 0;
  if (reducer) {
    // what the timed steps sent, where counted: PowerSGD's uncompressed steps may reach into them
    int64_t sent_after = reducer->bytes_sent();
    // --overlap_forward: a step's exchange ends in the next step's forward, and the counter saw
    // the last warm-up step's too (an audit found 1.20 MiB for 1.03, 4x with PowerSGD, whose
    // warm-up sends whole gradients): the timed steps' own N exchanges, counted from their ends
    if (overlap && sent_at_first >= 0) {
      sent_before = sent_at_first;
      sent_after = overlap->bytes_sent_when_finished(first_timed_exchange + static_cast<int64_t>(local.size()));
    }
    summary.sent_mib_per_step =
        sent_before >= 0 && sent_after >= sent_before && !local.empty()
            ? static_cast<double>(sent_after - sent_before) / static_cast<double>(local.size()) / (1 << 20)
            : static_cast<double>(reducer->sent_bytes_per_step()) / (1 << 20);
    summary.gradient_mib = static_cast<double>(reducer->gradient_elements() * sizeof(float)) / (1 << 20);
  }
  if (scaler) {
    summary.loss_scale = scaler->scale();
    summary.skipped_steps = scaler->skipped_steps();
  }
  if (!config.baseline.empty()) apply_baseline(summary, config.baseline, comm.size());
  summary.cpu_wait_fraction = wait_fraction;
  if (config.layer_timing) out.layers = plan->layer_times();
  return out;
}

}  // namespace

void run_training(const Config& config, Communicator& comm) {
  const bool leader = comm.rank() == 0;
  RunSetup setup = set_up_run(config, comm);
  const RunSettings& settings = setup.settings;
  const Graph& graph = setup.graph;
  const int threads = setup.threads;
  const bool exchange_gradients = exchanges_gradients(comm, config, settings);  // each run attaches a reducer
  // a --baseline that cannot be read is refused now (exit 2), not after the run
  std::string baseline_error;
  try {
    if (!config.baseline.empty())
      check_baseline_workload(read_baseline(config.baseline), config.baseline,
                              baseline_workload(settings, settings.training ? "training" : "forward-only", config.backend,
                                                graph.num_classes(), config.fuse_ops, config.data_format));
  } catch (const std::exception& e) {
    baseline_error = e.what();
  }
  if (comm.report_errors_together(baseline_error)) throw ErrorsReported{2};

  TfLog log(leader ? stdout : nullptr, settings, config);
  log.header(devices_text(comm, *setup.plan), backend_text(config, comm, threads, exchange_gradients, *setup.plan),
             graph);
  note_unused_exchange_flags(config, comm, settings);
  // a warm-up shorter than PowerSGD's (--num_warmup_batches given): timed steps send whole gradients
  if (leader && exchange_gradients && config.compression == "powersgd" &&
      settings.warmup_steps < config.powersgd_warmup_steps)
    fmt::print(stderr,
               "cnnbench: note: --powersgd_warmup_steps: its {} uncompressed steps outlast the {} warm-up steps: "
               "{} of the {} timed steps send whole gradients (the MiB sent per step is what the timed steps sent)\n",
               config.powersgd_warmup_steps, settings.warmup_steps,
               std::min(settings.timed_steps, config.powersgd_warmup_steps - settings.warmup_steps), settings.timed_steps);

  const Shape& in = graph.input().out;
  // each rank trains on its own images, as data parallelism does
  const Batch batch = make_synthetic_batch(in.n, in.c, in.h, in.w, graph.num_classes(), config.seed + 1 + comm.rank());
  const PeakResult peak = is_device_backend(config.backend)
                              ? PeakResult{device_peak_gflops(config.backend, settings.precision, true), 0,
                                           "cuBLAS matmul", true}
                              : measure_peak(settings.precision, threads);
  const std::unique_ptr<Timeline> timeline = start_timeline(comm, config.timeline);
  const std::unique_ptr<EventWriter> events_file = open_event_writer(comm, config.summary_dir, config.summary_verbosity);
  comm.barrier();

  // --repeats: each run on a new plan, its memory allocated and first-touched anew (the previous
  // plan freed first), from the same starting weights, with its own warm-up
  const int64_t repeats = config.repeats;
  std::vector<RunOutcome> outcomes;
  std::vector<double> speeds, waits;
  for (int64_t r = 0; r < repeats; ++r) {
    if (r > 0) {
      setup.plan.reset();
      setup.plan = compile_run_plan(config, settings, graph, comm, setup);
      log.repeat_started(r + 1, repeats);
    }
    outcomes.push_back(run_once(config, comm, setup, batch, peak, log, timeline.get(), events_file.get(),
                                r * settings.timed_steps));  // --num_epochs sets the steps too
    speeds.push_back(outcomes.back().summary.images_per_sec);
    waits.push_back(outcomes.back().summary.cpu_wait_fraction);
    if (repeats > 1) log.repeat_done(r + 1, repeats, speeds.back());
  }
  const RepeatSpeeds repeat = repeat_speeds(speeds, waits);
  const RunOutcome& reported = outcomes[repeat.median_index];
  const bool traced = timeline && write_timeline(comm, *timeline, config.timeline);
  if (!leader) return;

  print_summary(stdout, reported.summary, settings);
  if (repeats > 1) print_repeats(stdout, repeat);
  if (config.layer_timing) {
    std::vector<std::string> kernels;
    for (const Node& node : graph.nodes) kernels.push_back(setup.plan->layer_kernels(node.id));
    print_layer_table(stdout, graph, reported.layers, reported.summary.timed_steps, kernels);
  }
  const RunContext context = collect_run_context();
  ResultInputs inputs{config, settings, graph, context, reported.steps, reported.summary,
                      config.layer_timing ? &reported.layers : nullptr, config.backend, comm.hosts(),
                      exchange_gradients ? comm.backend() : "none"};
  if (repeats > 1) inputs.repeats = &repeat;
  const std::string json_path = write_results(inputs);
  fmt::print("  results         {} (JSON), {}/results.csv (row appended)\n", json_path, config.benchmark_log_dir);
  if (traced) fmt::print("{}", timeline_line(config.timeline, *timeline));
  if (events_file) {
    const int64_t last = repeats * settings.timed_steps;
    events_file->scalar("total_images_per_sec", last, reported.summary.images_per_sec);  // the final scale: per step
    events_file->flush();
    fmt::print("  summaries       {} ({} events)\n", events_file->path(), events_file->events());
  }
  log.total(reported.summary.images_per_sec);  // last: where tf_cnn_benchmarks' log parsers look
}

}  // namespace cnnbench
