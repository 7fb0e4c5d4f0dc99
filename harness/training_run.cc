#include "harness/training_run.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include <unistd.h>

#include "comm/gradient_reducer.h"
#include "harness/benchmark.h"
#include "harness/peak.h"
#include "harness/result_record.h"
#include "harness/run_context.h"
#include "harness/run_settings.h"
#include "harness/run_summary.h"
#include "harness/synthetic_data.h"
#include "harness/tf_log.h"
#include "kernels/backend.h"
#include "kernels/error_context.h"
#include "kernels/threads.h"

namespace cnnbench {
namespace {

std::string serialize(const Config& config) {
  std::string out;
  for (const auto& [key, value] : config_values(config)) out += key + "=" + value + "\n";
  return out;
}

WireType wire_type(const std::string& compression) {
  if (compression == "fp16") return WireType::f16;
  if (compression == "bf16") return WireType::bf16;
  return WireType::f32;
}

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

// --num_intra_threads=0: the CPUs this rank may use; when the launcher did not bind ranks
// (every rank sees every CPU of the host), the host's CPUs shared among its ranks.
int default_threads(const Config& config, const Communicator& comm) {
  if (config.num_intra_threads > 0) return static_cast<int>(config.num_intra_threads);
  const int mine = available_cpus();
  const int host = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (comm.local_size() > 1 && mine >= host) return std::max(1, host / comm.local_size());
  return mine;
}

}  // namespace

void check_ranks_agree(const Config& config, const Communicator& comm) {
  if (comm.size() == 1) return;
  const std::vector<std::string> all = comm.gather_strings(serialize(config));
  for (int r = 1; r < comm.size(); ++r) {
    if (all[r] == all[0]) continue;
    const auto lines = [](const std::string& s) {
      std::vector<std::string> out;
      for (size_t at = 0, next; at < s.size(); at = next + 1) {
        next = s.find('\n', at);
        out.push_back(s.substr(at, next - at));
      }
      return out;
    };
    const auto mine = lines(all[0]), theirs = lines(all[r]);
    for (size_t i = 0; i < std::min(mine.size(), theirs.size()); ++i)
      if (mine[i] != theirs[i])
        throw ConfigError(fmt::format("ranks disagree on the configuration: rank 0 has {}, rank {} has {}", mine[i], r,
                                      theirs[i]));
    throw ConfigError(fmt::format("ranks disagree on the configuration (rank 0 and rank {})", r));
  }
}

void run_training(const Config& config, Communicator& comm) {
  const bool leader = comm.rank() == 0;
  set_error_context(fmt::format("rank {} on host {}", comm.rank(), comm.host()));
  // Setup is local to each rank (but for the agreement check): its errors are gathered and
  // printed once, then every rank leaves together.
  std::string error;
  int threads = 1;
  RunSettings settings;
  Graph graph;
  std::unique_ptr<Plan> plan;
  try {
    check_ranks_agree(config, comm);
    threads = configure_threads(default_threads(config, comm));
    settings = resolve_settings(config, comm.size(), threads);
    graph = build_model(settings.model.name, settings.batch_size);
    PlanOptions options;
    options.compute = settings.precision;
    options.input_nhwc = config.data_format == "NHWC";
    plan = compile_plan(config.backend, graph, options);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (report_errors_together(error)) throw ErrorsReported{2};
  const bool exchange_gradients = comm.size() > 1 && config.variable_update != "independent" && settings.training;

  TfLog log(leader ? stdout : nullptr, settings, config);
  std::string devices = comm.size() == 1 ? "['/cpu:0']"
                                         : fmt::format("{} ranks x ['/cpu:0'] on {} host{}", comm.size(), comm.hosts(),
                                                       comm.hosts() == 1 ? "" : "s");
  std::string note = fmt::format("{}, {} thread{} per rank", config.backend, threads, threads == 1 ? "" : "s");
  if (exchange_gradients)
    note += fmt::format("; allreduce {}, fusion {} MiB, compression {}", comm.backend(), config.fusion_threshold_mb,
                        config.compression);
  log.header(devices, note);

  init_parameters(plan->layout(), plan->parameters().data(), plan->buffers().data(), config.seed);
  comm.broadcast(plan->parameters().data(), plan->parameters().size_bytes(), 0);
  comm.broadcast(plan->buffers().data(), plan->buffers().size_bytes(), 0);

  std::unique_ptr<GradientReducer> reducer;
  if (exchange_gradients) {
    std::vector<TensorExtent> tensors;
    for (const ArenaEntry& e : plan->layout().params)
      tensors.push_back({static_cast<size_t>(e.offset), static_cast<size_t>(e.elements)});
    reducer = std::make_unique<GradientReducer>(comm, plan->gradients().data(), tensors,
                                                static_cast<size_t>(config.fusion_threshold_mb * (1 << 20)),
                                                wire_type(config.compression));
    plan->set_loss_gradient_scale(1.0f / static_cast<float>(comm.size()));
    plan->set_gradient_ready_hook([r = reducer.get()](int index) { r->tensor_ready(index); });
  }

  const Shape& in = graph.input().out;
  // each rank trains on its own images, as data parallelism does
  const Batch batch = make_synthetic_batch(in.n, in.c, in.h, in.w, graph.num_classes(), config.seed + 1 + comm.rank());
  const PeakResult peak = measure_peak(settings.precision, threads);
  comm.barrier();

  GlobalSteps global(comm);
  StepLoopEvents events;
  events.warmup_started = [&] { log.warmup_started(); };
  events.warmup_done = [&] { log.warmup_done(); };
  // Fault injection for the tests: CNNBENCH_TEST_EXIT_AT=R:S makes rank R die after timed
  // step S, as a crashed or killed rank would (no MPI_Finalize, no message to the others).
  int exit_rank = -1, exit_step = -1;
  if (const char* spec = std::getenv("CNNBENCH_TEST_EXIT_AT")) std::sscanf(spec, "%d:%d", &exit_rank, &exit_step);
  events.step_done = [&](int64_t i, const std::vector<StepRecord>& steps) {
    if (comm.rank() == exit_rank && i + 1 == exit_step) {
      std::fprintf(stderr, "cnnbench: rank %d stops dead after step %d (CNNBENCH_TEST_EXIT_AT)\n", exit_rank, exit_step);
      std::_Exit(3);
    }
    if (i == 0 || (i + 1) % config.display_every == 0) log.step(i, global.sync_through(steps));
  };
  const std::vector<StepRecord> local =
      run_step_loop(settings, config, *plan, reducer.get(), batch.images.data(), batch.labels.data(), events);
  const std::vector<StepRecord>& steps = global.sync_through(local);

  RunSummary summary = summarize(settings, graph, steps, peak);
  // per-rank figures: communication as the worst rank saw it, skew of compute time
  double worst[2] = {summary.comm_mean_sec, summary.exposed_mean_sec};
  comm.allreduce_max(worst, 2);
  summary.comm_mean_sec = worst[0];
  summary.exposed_mean_sec = worst[1];
  double compute = 0;
  for (const StepRecord& r : local) compute += r.time_sec - r.exposed_sec;
  compute /= static_cast<double>(std::max<size_t>(1, local.size()));
  double slowest = compute, fastest = compute;
  comm.allreduce_max(&slowest, 1);
  comm.allreduce_min(&fastest, 1);
  summary.rank_skew = fastest > 0 ? slowest / fastest - 1 : 0;
  summary.buckets = reducer ? static_cast<int>(reducer->buckets().size()) : 0;
  if (!config.baseline.empty()) apply_baseline(summary, config.baseline, comm.size());
  if (!leader) return;

  log.total(summary.images_per_sec);
  print_summary(stdout, summary, settings);
  if (config.layer_timing) print_layer_table(stdout, graph, plan->layer_times(), summary.timed_steps);
  const RunContext context = collect_run_context();
  const ResultInputs inputs{config, settings, graph, context, steps, summary,
                            config.layer_timing ? &plan->layer_times() : nullptr, config.backend, comm.hosts(),
                            exchange_gradients ? comm.backend() : "none"};
  const std::string json_path = write_results(inputs);
  fmt::print("  results         {} (JSON), {}/results.csv (row appended)\n", json_path, config.benchmark_log_dir);
}

}  // namespace cnnbench
