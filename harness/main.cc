// cnnbench: trains (or runs forward) a CNN on synthetic data and reports images/sec in
// tf_cnn_benchmarks' format, plus a summary, a JSON document and a CSV row.
#include <fmt/format.h>

#include <cstdio>

#include "harness/benchmark.h"
#include "harness/config.h"
#include "harness/peak.h"
#include "harness/result_record.h"
#include "harness/run_context.h"
#include "harness/run_settings.h"
#include "harness/run_summary.h"
#include "harness/synthetic_data.h"
#include "harness/tf_log.h"
#include "kernels/backend.h"
#include "kernels/threads.h"

namespace cnnbench {
namespace {

void list_models() {
  fmt::print("{:<11} {:<14} {:>10} {:>8} {:>14} {:>12} {:>9}\n", "model", "data", "input", "classes", "parameters",
             "GMACs/image", "batch");
  for (const ModelInfo& m : model_zoo()) {
    const Graph g = m.build(1);
    fmt::print("{:<11} {:<14} {:>10} {:>8} {:>14} {:>12.3f} {:>9}\n", m.name, m.dataset,
               fmt::format("{}x{}x{}", m.channels, m.image_size, m.image_size), m.classes, g.param_count(),
               static_cast<double>(g.forward_macs_per_image()) / 1e9, m.default_batch_size);
  }
}

void print_peak(int threads) {
  for (DType t : {DType::f32, DType::bf16}) {
    const PeakResult p = measure_peak(t, threads);
    if (p.supported)
      fmt::print("{} peak: {:.1f} GFLOP/s ({} thread{}, {})\n", dtype_name(t), p.gflops, threads, threads == 1 ? "" : "s",
                 p.isa);
    else
      fmt::print("{} peak: no fast {} instructions on this CPU\n", dtype_name(t), dtype_name(t));
  }
}

int run(const Config& config) {
  const int threads = configure_threads(static_cast<int>(config.num_intra_threads));
  if (config.peak) {
    print_peak(threads);
    return 0;
  }
  const RunSettings settings = resolve_settings(config, /*ranks=*/1, threads);
  const Graph graph = build_model(settings.model.name, settings.batch_size);
  PlanOptions options;
  options.compute = settings.precision;
  options.input_nhwc = config.data_format == "NHWC";
  TfLog log(stdout, settings, config);
  log.header("['/cpu:0']", fmt::format("{}, {} thread{}", config.backend, threads, threads == 1 ? "" : "s"));

  auto plan = compile_plan(config.backend, graph, options);
  init_parameters(plan->layout(), plan->parameters().data(), plan->buffers().data(), config.seed);
  const Shape& in = graph.input().out;
  const Batch batch = make_synthetic_batch(in.n, in.c, in.h, in.w, graph.num_classes(), config.seed + 1);
  const PeakResult peak = measure_peak(settings.precision, threads);

  StepLoopEvents events;
  events.warmup_started = [&] { log.warmup_started(); };
  events.warmup_done = [&] { log.warmup_done(); };
  events.step_done = [&](int64_t i, const std::vector<StepRecord>& steps) { log.step(i, steps); };
  const std::vector<StepRecord> steps =
      run_step_loop(settings, config, *plan, batch.images.data(), batch.labels.data(), events);

  const RunSummary summary = summarize(settings, graph, steps, peak);
  log.total(summary.images_per_sec);
  print_summary(stdout, summary, settings);
  if (config.layer_timing) print_layer_table(stdout, graph, plan->layer_times(), summary.timed_steps);
  const RunContext context = collect_run_context();
  const ResultInputs inputs{config, settings, graph, context, steps, summary,
                            config.layer_timing ? &plan->layer_times() : nullptr, config.backend, 1};
  const std::string json_path = write_results(inputs);
  fmt::print("  results         {} (JSON), {}/results.csv (row appended)\n", json_path, config.benchmark_log_dir);
  return 0;
}

}  // namespace
}  // namespace cnnbench

int main(int argc, char** argv) {
  using namespace cnnbench;
  Config config;
  try {
    config = parse_command_line(argc, argv);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "cnnbench: %s\n", e.what());
    return 2;
  }
  if (config.help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (config.list_models) {
    list_models();
    return 0;
  }
  try {
    return run(config);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "cnnbench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnnbench: error: %s\n", e.what());
    return 1;
  }
}
