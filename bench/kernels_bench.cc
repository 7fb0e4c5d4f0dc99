// bench/kernels_bench.cc — cnnbench_kernels_bench: every distinct layer of resnet50, vgg16 and
// resnet20 (bench/kernel_cases.h) on Google Benchmark, forward and each backward direction, per
// backend and precision:
//   onednn    oneDNN's kernels alone (the CPU plan without cnnbench's own kernels)
//   cnnbench  the CPU plan as cnnbench runs it, registered only for the directions one of
//             cnnbench's own kernels takes over (the bf16 weight gradient of 1x1 convolutions;
//             with AMX, their data gradient at stride 1, and bf16 batch norm on channels-last
//             activations, forward and backward)
//   cuda      the GPU plan (cuDNN, cuBLAS and cnnbench's CUDA kernels), where a GPU is visible
// Each iteration runs the layer as the backend's plan runs it inside the model and reports the
// plan's own per-layer time of the measured direction (manual time), so a backward direction
// is timed apart from the forward pass that feeds it. Counters: GFLOP/s and GB/s (each tensor
// read or written once), peak_fraction (of the measured FMA peak, convolutions and linear
// layers) and bandwidth_fraction (of a measured STREAM triad, the other layers).
//   cnnbench_kernels_bench --benchmark_format=json --benchmark_out=kernels.json
//   cnnbench_kernels_bench --benchmark_filter='resnet50/conv.*/backward_weights' --cnnbench_dtypes=bf16
// Own flags: --cnnbench_models=resnet50,vgg16,resnet20 --cnnbench_dtypes=fp32,bf16[,fp16]
// --cnnbench_batch=N (every model; default 32, 16, 128 images). GPU layers run 30 iterations
// each unless --benchmark_min_time is given.
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>

#include "bench/kernel_cases.h"
#include "kernels/cpu_peak.h"
#include "kernels/backend.h"
#include "kernels/device_plan.h"
#include "kernels/param_layout.h"

namespace cnnbench::bench {
namespace {

struct Target {
  std::string backend, label;  // label: onednn, cnnbench, cuda
  DType type = DType::f32;
  bool own_kernels = false;
  double peak_gflops = 0;  // measured, all threads or the GPU
};

// STREAM triad a = b + s c over arrays far larger than the caches: the machine's memory
// bandwidth as a kernel can reach it (GB/s, 3 arrays of traffic), the best of 5.
double triad_gbps() {
  const size_t n = size_t{1} << 25;  // 128 MiB per array
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + 0.5f * c[i];
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, 3.0 * n * sizeof(float) / sec / 1e9);
  }
  benchmark::DoNotOptimize(a.data());
  return best;
}

// Values in [-1, 1): a block of 2^20 drawn once and repeated. A layer's tensors at batch 256 hold
// hundreds of millions of elements; drawing each one took seconds, longer than the benchmark.
std::vector<float> random_floats(int64_t count, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  const size_t block = std::min(v.size(), size_t{1} << 20);
  for (size_t i = 0; i < block; ++i) v[i] = u(random);
  for (size_t i = block; i < v.size(); i += block) std::copy_n(v.begin(), std::min(block, v.size() - i), v.begin() + i);
  return v;
}

std::unique_ptr<Plan> compile_case(const KernelCase& k, const Target& t) {
  PlanOptions options;
  options.compute = t.type;
  options.own_kernels = t.own_kernels;
  options.fuse = k.fuse;
  return compile_plan(t.backend, k.graph, options);
}

// Seconds the plan's layer timing gave the layer (with its fused ReLU) in direction d.
double layer_seconds(const Plan& plan, Direction d) {
  double sec = 0;
  for (const Node& node : plan.graph().nodes) {
    if (node.name != "op" && node.name != "relu") continue;
    const LayerTime& t = plan.layer_times()[node.id];
    switch (d) {
      case Direction::forward: sec += t.forward_sec; break;
      case Direction::backward: sec += t.backward_sec; break;
      case Direction::backward_data: sec += t.backward_sec - t.weight_grad_sec; break;
      case Direction::backward_weights: sec += t.weight_grad_sec; break;
    }
  }
  return sec;
}

void run_layer(benchmark::State& state, const KernelCase& k, Direction d, const Target& t, double triad) {
  std::unique_ptr<Plan> plan;
  try {
    plan = compile_case(k, t);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  init_parameters(plan->layout(), plan->parameters().data(), plan->buffers().data(), 1);
  DevicePlan* device = plan->device();
  if (device) device->upload_state();
  const std::vector<float> images = random_floats(k.graph.input().out.elements(), 2);
  const std::vector<float> output_grad = random_floats(k.graph.logits().out.elements(), 3);
  plan->set_input(images.data());
  // A device plan copies the output gradient from the host: hundreds of MB at batch 256, which
  // would cost more than the layer, so it is copied once and reused (its values do not change
  // the GPU's time); a CPU plan sets it every time, as a training step does.
  bool output_grad_set = false;
  auto once = [&] {
    plan->forward(Mode::training);
    if (d != Direction::forward) {
      if (!device || !output_grad_set) plan->set_output_grad(output_grad.data());
      output_grad_set = true;
      plan->backward();
    }
    if (device) device->synchronize(nullptr);
  };
  once();  // primitives made, memory touched, algorithms searched: not measured
  double total = 0;
  for (auto _ : state) {
    plan->set_layer_timing(true);  // resets the sums
    once();
    const double sec = layer_seconds(*plan, d);
    if (sec <= 0) {  // timed steps would never add up to the minimum time: the benchmark would not end
      state.SkipWithError("the layer took no time of its own (fused into another?)");
      break;
    }
    state.SetIterationTime(sec);
    total += sec;
  }
  if (total <= 0) return;
  const double iterations = static_cast<double>(state.iterations());
  const double flop = static_cast<double>(k.flop(d)) * iterations;
  const double bytes = static_cast<double>(k.elements(d)) * static_cast<double>(dtype_size(t.type)) * iterations;
  state.counters["batch"] = static_cast<double>(k.graph.batch_size());
  state.counters["GB/s"] = bytes / total / 1e9;
  if (flop > 0) {
    state.counters["GFLOP/s"] = flop / total / 1e9;
    if (t.peak_gflops > 0) state.counters["peak_fraction"] = flop / total / 1e9 / t.peak_gflops;
  } else if (triad > 0 && !device) {
    state.counters["bandwidth_fraction"] = bytes / total / 1e9 / triad;
  }
}

// The directions of this layer that one of cnnbench's own kernels takes over (none: oneDNN's
// alone): the weight gradient of a bf16 1x1 convolution and, with AMX, its data gradient at
// stride 1; both directions of a batch norm on channels-last bf16. Asked of the plan's notes on
// the case (the feeder and sink, 1x1 convolutions too, are not the layer: a convolution's note
// is asked of a one-image plan, whose feeder and sink have no own kernel without the layer's).
std::vector<Direction> own_directions(const KernelCase& k, const Target& t) {
  const Node* op = nullptr;
  for (const Node& n : k.graph.nodes)
    if (n.name == "op") op = &n;
  const bool one_by_one = op && op->kind == OpKind::conv && op->conv.kernel_h == 1 && op->conv.kernel_w == 1;
  if (!op || (!one_by_one && op->kind != OpKind::batch_norm)) return {};
  KernelCase probe = k;
  if (one_by_one)
    for (Node& n : probe.graph.nodes) n.out.n = 1;
  std::string notes;
  try {
    notes = compile_case(probe, t)->kernel_notes();
  } catch (const std::exception&) {
    return {};
  }
  if (one_by_one) {
    std::vector<Direction> own;
    if (notes.find("weight") != std::string::npos) own.push_back(Direction::backward_weights);
    // the sink's data gradient may be a matmul too; the layer's is where it has stride 1
    if (notes.find("data gradients") != std::string::npos && op->conv.stride == 1)
      own.push_back(Direction::backward_data);
    return own;
  }
  if (notes.find("batch norm") == std::string::npos) return {};
  return {Direction::forward, Direction::backward};
}

// "a,b,c" -> {a, b, c}
std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream s(list);
  for (std::string item; std::getline(s, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

struct Options {
  std::vector<std::string> models = {"resnet50", "vgg16", "resnet20"};
  std::vector<std::string> dtypes = {"fp32", "bf16"};
  int64_t batch = 0;  // 0: each model's default below
};

// Takes --cnnbench_* flags out of argv (Google Benchmark refuses flags it does not know).
Options take_own_flags(int& argc, char** argv) {
  Options o;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const size_t n = std::strlen(flag);
      return arg.compare(0, n, flag) == 0 && arg.size() > n && arg[n] == '=' ? argv[i] + n + 1 : nullptr;
    };
    if (const char* v = value("--cnnbench_models")) {
      o.models = split(v);
    } else if (const char* v = value("--cnnbench_dtypes")) {
      o.dtypes = split(v);
    } else if (const char* v = value("--cnnbench_batch")) {
      o.batch = std::atoll(v);
      if (o.batch < 1) throw std::invalid_argument(fmt::format("--cnnbench_batch: not a positive number: '{}'", v));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return o;
}

int64_t default_batch(const std::string& model) {
  if (model == "vgg16") return 16;  // its 224x224 layers take seconds at 32 on two cores
  if (model == "resnet20") return 128;
  return 32;
}

constexpr int kGpuIterations = 30;

int run(int argc, char** argv) {
  const Options options = take_own_flags(argc, argv);
  // 0.1 s of measured time per benchmark unless asked otherwise: each iteration of a backward
  // direction also runs the forward pass and the feeder, so Google Benchmark's 0.5 s default
  // would make the whole suite last an hour on two cores
  std::vector<char*> args(argv, argv + argc);
  char min_time[] = "--benchmark_min_time=0.1";
  const bool min_time_given =
      std::any_of(args.begin(), args.end(), [](const char* a) { return std::strncmp(a, "--benchmark_min_time", 20) == 0; });
  if (!min_time_given) args.insert(args.begin() + 1, min_time);
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  argc = count;
  argv = args.data();
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;

  const int threads = omp_get_max_threads();
  std::vector<Target> targets;
  for (const std::string& name : options.dtypes) {
    const std::optional<DType> type = parse_dtype(name);
    if (!type) throw std::invalid_argument("--cnnbench_dtypes: unknown precision '" + name + "'");
    if (*type != DType::f16) {  // the CPU plan has no fp16
      const PeakResult peak = measure_peak(*type, threads);
      if (peak.supported) {
        targets.push_back({"onednn", "onednn", *type, false, peak.gflops});
        targets.push_back({"onednn", "cnnbench", *type, true, peak.gflops});
        benchmark::AddCustomContext(fmt::format("peak_gflops_{}", dtype_name(*type)),
                                    fmt::format("{:.1f} ({}, {} threads)", peak.gflops, peak.isa, threads));
      } else {
        benchmark::AddCustomContext(fmt::format("peak_gflops_{}", dtype_name(*type)), "no fast path on this CPU: skipped");
      }
    }
  }
  // built with CUDA and a GPU visible: the same layers on it, in every asked precision
  const auto backends = backend_names();
  if (std::find(backends.begin(), backends.end(), "cuda") != backends.end()) {
    try {
      benchmark::AddCustomContext("gpu", use_device_for_rank("cuda", 0));
      for (const std::string& name : options.dtypes) {
        const DType type = *parse_dtype(name);
        const double peak = device_peak_gflops("cuda", type, true);
        targets.push_back({"cuda", "cuda", type, true, peak});
        benchmark::AddCustomContext(fmt::format("gpu_peak_gflops_{}", dtype_name(type)), fmt::format("{:.1f}", peak));
      }
    } catch (const std::exception&) {
      // no GPU visible: the CPU targets alone
    }
  }
  const double triad = triad_gbps();
  benchmark::AddCustomContext("stream_triad_gbps", fmt::format("{:.1f} ({} threads)", triad, threads));

  // The cases live as long as the run; the benchmarks hold pointers to them.
  static std::vector<KernelCase> cases;
  for (const std::string& model : options.models) {
    auto layers = distinct_layers(model, options.batch ? options.batch : default_batch(model));
    std::move(layers.begin(), layers.end(), std::back_inserter(cases));
  }
  for (const KernelCase& k : cases)
    for (const Target& t : targets) {
      const std::vector<Direction> own = t.label == "cnnbench" ? own_directions(k, t) : std::vector<Direction>{};
      if (t.label == "cnnbench" && own.empty()) continue;
      for (const Direction d : k.directions) {
        // the rest is oneDNN's
        if (t.label == "cnnbench" && std::find(own.begin(), own.end(), d) == own.end()) continue;
        const std::string name =
            fmt::format("{}/{}/{}/{}/{}", k.model, k.name, direction_name(d), t.label, dtype_name(t.type));
        auto* b = benchmark::RegisterBenchmark(name.c_str(),
                                               [&k, d, t, triad](benchmark::State& s) { run_layer(s, k, d, t, triad); });
        b->UseManualTime()->Unit(benchmark::kMillisecond);
        // A GPU layer takes microseconds of device time but each iteration costs milliseconds
        // on the host (the layer's forward and per-layer waits), so a minimum device time
        // would take thousands of iterations: a fixed count, averaged, is steady enough there.
        if (t.label == "cuda" && !min_time_given) b->Iterations(kGpuIterations);
      }
    }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace
}  // namespace cnnbench::bench

int main(int argc, char** argv) {
  try {
    return cnnbench::bench::run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "cnnbench_kernels_bench: {}\n", e.what());
    return 2;
  }
}
