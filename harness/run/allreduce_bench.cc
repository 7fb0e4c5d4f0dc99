#include "harness/run/allreduce_bench.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include "comm/gradient_reducer.h"
#include "comm/wire_cast.h"
#include "harness/report/result_fields.h"
#include "harness/report/result_files.h"
#include "harness/report/run_context.h"
#include "harness/run/run_setup.h"
#include "kernels/arena.h"
#include "kernels/param_layout.h"
#include "models/model_zoo.h"

namespace cnnbench {

namespace {
// 0-3 by element, without a period: the top two bits of splitmix64's mix of i (a sum landing
// at another offset, a share gathered to the wrong place, differs at about 3 elements in 4;
// i % 4 hid any shift by a multiple of 4)
unsigned check_pattern(size_t i) {
  uint64_t z = uint64_t{i} + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<unsigned>((z ^ (z >> 31)) >> 62);
}
}  // namespace

float allreduce_check_value(int rank, size_t i) { return static_cast<float>(check_pattern(i) + 1 + rank % 2); }

float allreduce_expected_sum(int ranks, size_t i) {
  return static_cast<float>(static_cast<double>(ranks) * static_cast<double>(check_pattern(i) + 1) + ranks / 2);
}

namespace {

double now_sec() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct SizeResult {
  size_t bytes, count;
  double time_sec, algbw, busbw;
  int64_t wrong;
};

// Sum over ranks of elements that differ from the closed-form result.
int64_t count_wrong(Communicator& comm, const void* data, size_t count, WireType wire) {
  const double tolerance = wire == WireType::f32 ? 0.0 : wire == WireType::f16 ? 1.0 / 1024 : 1.0 / 128;
  double wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    float got;
    if (wire == WireType::f32) {
      got = static_cast<const float*>(data)[i];
    } else {
      cast_from_wire(static_cast<const uint16_t*>(data) + i, &got, 1, wire, 1.0f);
    }
    const float expected = allreduce_expected_sum(comm.size(), i);
    if (!(std::fabs(got - expected) <= tolerance * expected)) ++wrong;
  }
  comm.allreduce_sum(&wrong, 1);
  return static_cast<int64_t>(wrong);
}

SizeResult measure_size(Communicator& comm, void* buffer, size_t bytes, WireType wire) {
  const size_t element = wire_type_size(wire), count = bytes / element;
  // correctness: seeded data, one allreduce, compare with the closed form
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = allreduce_check_value(comm.rank(), i);
  if (wire == WireType::f32)
    std::copy(values.begin(), values.end(), static_cast<float*>(buffer));
  else
    cast_to_wire(values.data(), static_cast<uint16_t*>(buffer), count, wire);
  comm.allreduce_sum(buffer, count, wire);
  const int64_t wrong = count_wrong(comm, buffer, count, wire);
  // timing: the same number of calls on every rank, about 1 GiB moved or half a second (slow
  // links), at least 3 and at most 200; zeros keep values finite
  std::memset(buffer, 0, bytes);
  comm.barrier();
  double warm = now_sec();
  comm.allreduce_sum(buffer, count, wire);
  warm = now_sec() - warm;
  comm.allreduce_max(&warm, 1);
  const size_t by_bytes = (size_t{1} << 30) / bytes, by_time = static_cast<size_t>(0.5 / std::max(warm, 1e-9));
  const int iterations = static_cast<int>(std::clamp<size_t>(std::min(by_bytes, by_time), 3, 200));
  comm.barrier();
  const double start = now_sec();
  for (int i = 0; i < iterations; ++i) comm.allreduce_sum(buffer, count, wire);
  double seconds = (now_sec() - start) / iterations;
  comm.allreduce_max(&seconds, 1);
  // one rank reduces and sends nothing: a bandwidth of a call that returns at once is no figure
  const double algbw = comm.size() > 1 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
  const double busbw = algbw * 2.0 * (comm.size() - 1) / comm.size();
  return {bytes, count, seconds, algbw, busbw, wrong};
}

struct ExchangeResult {
  std::string label;
  int allreduces;
  double time_sec;
  size_t bytes;  // what one rank sends per step
};

// The gradient exchange of one training step, through the GradientReducer as training runs
// it (every tensor reported ready at once: no backward to overlap with).
ExchangeResult time_exchange(const std::string& label, Communicator& comm, float* gradients,
                             const std::vector<TensorExtent>& tensors, size_t threshold_bytes, WireType wire,
                             const PowerSgdSettings* powersgd = nullptr) {
  GradientReducer reducer(comm, gradients, tensors, threshold_bytes, wire, powersgd);
  auto one = [&] {
    for (int t = 0; t < static_cast<int>(tensors.size()); ++t) reducer.tensor_ready(t);
    reducer.wait_for_buckets(nullptr);
  };
  one();  // warm-up
  comm.barrier();
  const int iterations = 5;
  const double start = now_sec();
  for (int i = 0; i < iterations; ++i) one();
  double seconds = (now_sec() - start) / iterations;
  comm.allreduce_max(&seconds, 1);
  const int allreduces = static_cast<int>(reducer.powersgd() ? reducer.powersgd()->allreduces() : reducer.buckets().size());
  return {label, allreduces, seconds, comm.size() > 1 ? reducer.sent_bytes_per_step() : 0};
}

}  // namespace

void run_allreduce_benchmark(const Config& config, Communicator& comm) {
  const bool leader = comm.rank() == 0;
  const WireType wire = wire_type(config.compression);
  const size_t largest = static_cast<size_t>(config.allreduce_max_mb * (1 << 20));
  Arena buffer(largest / sizeof(float));
  if (leader) {
    fmt::print("# cnnbench allreduce: {} ranks on {} host{}, backend {}{}, type {}\n", comm.size(), comm.hosts(),
               comm.hosts() == 1 ? "" : "s", comm.backend(),
               config.hierarchical_allreduce ? " (hierarchical: within hosts, then across)" : "", wire_type_name(wire));
    fmt::print("# busbw = algbw x 2(n-1)/n; #wrong: elements differing from the closed-form sum\n");
    if (comm.size() == 1)
      fmt::print(stderr, "cnnbench: note: --mode=allreduce on one rank: nothing is reduced or sent, so bandwidths "
                         "and bytes sent are 0 and the times are of the calls alone (run it under mpiexec -np 2 or "
                         "more)\n");
    if (const std::string note = one_host_hierarchical_note(config, comm); !note.empty())
      fmt::print(stderr, "cnnbench: note: {}\n", note);
    fmt::print("#{:>12} {:>12} {:>6} {:>12} {:>12} {:>12} {:>8}\n", "size(B)", "count", "type", "time(us)",
               "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  }
  // 4 KB doubling, then --allreduce_max_mb itself where doubling steps over it (3 MiB: 2, then 3)
  std::vector<size_t> message_bytes;
  for (size_t bytes = 4096; bytes <= largest; bytes *= 2) message_bytes.push_back(bytes);
  const size_t last = largest / 4 * 4;  // whole elements of any wire type
  if (last >= 4096 && (message_bytes.empty() || message_bytes.back() < last)) message_bytes.push_back(last);
  std::vector<SizeResult> sizes;
  for (const size_t bytes : message_bytes) {
    sizes.push_back(measure_size(comm, buffer.data(), bytes, wire));
    const SizeResult& r = sizes.back();
    if (leader)
      fmt::print(" {:>12} {:>12} {:>6} {:>12.1f} {:>12.3f} {:>12.3f} {:>8}\n", r.bytes, r.count, wire_type_name(wire),
                 r.time_sec * 1e6, r.algbw, r.busbw, r.wrong);
    std::fflush(stdout);
  }

  // the gradient exchange of a model's training step
  const auto info = find_model(config.model, config.data_name);
  const Graph graph = info ? build_model(*info, 1, config.num_classes) : build_model(config.model, 1, config.num_classes);
  const ParamLayout layout = ParamLayout::of(graph);
  std::vector<TensorExtent> tensors;
  for (const ArenaEntry& e : layout.params)
    tensors.push_back(param_extent(e, static_cast<size_t>(e.offset), static_cast<size_t>(e.elements)));
  Arena gradients(layout.param_elements);
  const double total_bytes = static_cast<double>(layout.param_elements) * sizeof(float);
  const size_t threshold = static_cast<size_t>(config.fusion_threshold_mb * (1 << 20));
  std::vector<ExchangeResult> exchange;
  exchange.push_back(time_exchange("one allreduce of all gradients", comm, gradients.data(), tensors, SIZE_MAX / 2, wire));
  exchange.push_back(time_exchange(fmt::format("fused, {} MiB buckets", config.fusion_threshold_mb), comm,
                                   gradients.data(), tensors, threshold, wire));
  exchange.push_back(time_exchange("one allreduce per tensor", comm, gradients.data(), tensors, 0, wire));
  if (std::unique_ptr<PowerSgdSettings> powersgd = powersgd_settings(config)) {
    powersgd->warmup_steps = 0;  // every timed step compressed
    exchange.push_back(time_exchange(fmt::format("fused, PowerSGD rank {}", powersgd->rank), comm, gradients.data(),
                                     tensors, threshold, wire, powersgd.get()));
  }
  const double whole = exchange.front().time_sec;
  if (leader) {
    fmt::print("# gradient exchange of {}: {} tensors, {:.1f} MiB\n", config.model, tensors.size(),
               total_bytes / (1 << 20));
    for (const ExchangeResult& e : exchange)
      fmt::print("#   {:<34} {:>5} allreduce{} {:>10.2f} ms  ({:.2f}x the single allreduce; {:.2f} MiB sent)\n", e.label,
                 e.allreduces, e.allreduces == 1 ? " " : "s", e.time_sec * 1e3, e.time_sec / whole,
                 static_cast<double>(e.bytes) / (1 << 20));
  }
  if (!leader) return;

  const RunContext context = collect_run_context();
  nlohmann::json doc = {{"schema", "cnnbench.allreduce/1"},
                        {"context", to_json(context)},
                        {"run",
                         {{"backend", comm.backend()},
                          {"hierarchical", config.hierarchical_allreduce},
                          {"ranks", comm.size()},
                          {"hosts", comm.hosts()},
                          {"type", wire_type_name(wire)},
                          {"model", config.model},
                          {"fusion_threshold_mb", config.fusion_threshold_mb}}},
                        {"sizes", nlohmann::json::array()},
                        {"gradient_exchange", nlohmann::json::array()}};
  for (const SizeResult& r : sizes)
    doc["sizes"].push_back({{"bytes", r.bytes}, {"count", r.count}, {"time_sec", r.time_sec}, {"algbw_gbps", r.algbw},
                            {"busbw_gbps", r.busbw}, {"wrong", r.wrong}});
  for (const ExchangeResult& e : exchange)
    doc["gradient_exchange"].push_back({{"what", e.label}, {"allreduces", e.allreduces}, {"time_sec", e.time_sec},
                                        {"bytes", e.bytes}, {"tensors", tensors.size()}});
  std::string path = config.result_json;
  if (path.empty()) {
    char stamp[32];
    const std::time_t t = std::time(nullptr);
    std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::gmtime(&t));
    path = fmt::format("{}/allreduce_{}_{}_{}r_{}_{}.json", config.benchmark_log_dir, comm.backend(),
                       wire_type_name(wire), comm.size(), stamp, getpid());
  }
  make_folders(config.benchmark_log_dir);
  // a setting that is not UTF-8 (a Latin-1 path) is written as U+FFFD, never lost to an exception
  write_file_atomically(path, doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  const std::vector<std::string> header = allreduce_csv_header();
  for (const SizeResult& r : sizes)
    append_csv_row(config.benchmark_log_dir + "/allreduce.csv", header,
                   {context.time_utc, comm.backend(), std::to_string(comm.size()), std::to_string(comm.hosts()),
                    wire_type_name(wire), std::to_string(r.bytes), fmt::format("{:.6g}", r.time_sec),
                    fmt::format("{:.6g}", r.algbw), fmt::format("{:.6g}", r.busbw), std::to_string(r.wrong),
                    config.hierarchical_allreduce ? "true" : "false"});
  fmt::print("# results: {} (JSON), {}/allreduce.csv\n", path, config.benchmark_log_dir);
}

}  // namespace cnnbench
