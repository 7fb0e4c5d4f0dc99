#include "harness/run/run_setup.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>

#include "kernels/backend.h"
#include "kernels/device_plan.h"
#include "comm/gradient_exchange.h"
#include "kernels/error_context.h"
#include "kernels/threads.h"
#include "harness/cli/flag_spec.h"
#include "harness/run/algorithm_cache.h"
#include "harness/run/cgroup_limits.h"
#include "harness/run/fault_injection.h"
#include "harness/run/real_data.h"

namespace cnnbench {
namespace {

std::string serialize(const Config& config) {
  std::string out;
  for (const auto& [key, value] : config_values(config)) out += key + "=" + value + "\n";
  return out;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  for (size_t at = 0, next; at < s.size(); at = next + 1) {
    next = s.find('\n', at);
    out.push_back(s.substr(at, next - at));
  }
  return out;
}

// The CPUs this rank may run on; where the launcher did not bind ranks (every rank sees every
// CPU of the host), the host's CPUs shared among its ranks.
int host_cpus_shared(const Communicator& comm) {
  const int mine = available_cpus();
  const int host = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (comm.local_size() > 1 && mine >= host) return std::max(1, host / comm.local_size());
  return mine;
}

// --num_intra_threads=0: the CPUs this rank may use (rank_cpus: within a container's CPU quota);
// under srun, at most its --cpus-per-task.
int default_threads(const Config& config, const Communicator& comm) {
  const int mine = available_cpus();
  // OpenMP threads spin at every barrier: far more of them than CPUs never finish a step (1024 on
  // 2 CPUs sat in the first layer for minutes; 64 on 2 took 13 s for trivial's two steps), so the
  // bound is what the rank can run. Generous: a rank bound to one core by the launcher keeps
  // running the thread counts it ran before.
  constexpr int most_per_cpu = 64;
  if (config.num_intra_threads > static_cast<int64_t>(most_per_cpu) * mine)
    throw ConfigError(fmt::format("--num_intra_threads={}: this rank may run on {} CPU{}; at most {} threads ({} per "
                                  "CPU)",
                                  config.num_intra_threads, mine, mine == 1 ? "" : "s", most_per_cpu * mine,
                                  most_per_cpu));
  if (config.num_intra_threads > 0) return static_cast<int>(config.num_intra_threads);
  // a task of a Slurm step: the CPUs --cpus-per-task gave it, also where Slurm's task plugin
  // did not bind it to them (task/none: it sees the node's CPUs)
  const char* slurm_cpus = std::getenv("SLURM_CPUS_PER_TASK");
  const long given = slurm_cpus && std::getenv("SLURM_STEP_ID") ? std::strtol(slurm_cpus, nullptr, 10) : 0;
  const int cpus = rank_cpus(comm), shared = host_cpus_shared(comm);
  if (comm.rank() == 0 && cpus < shared)  // only a container's CPU quota takes rank_cpus below
    fmt::print(stderr, "cnnbench: note: the container's CPU quota ({:.3g} CPUs for {} rank{} on this host) sets {} "
               "thread{} per rank, where it would take {} CPUs otherwise (--num_intra_threads to choose)\n",
               cgroup_limits().cpus.value_or(0), comm.local_size(), comm.local_size() == 1 ? "" : "s", cpus,
               cpus == 1 ? "" : "s", shared);
  return given > 0 && given < cpus ? static_cast<int>(given) : cpus;
}

}  // namespace

void check_ranks_agree(const Config& config) {
  // the flags that print and exit too: a rank asked for --version alone would leave the others
  // waiting in their first collective
  const std::string settings = serialize(config) + fmt::format("help={}\nlist_models={}\nlist_result_fields={}\n",
                                                               config.help, config.list_models,
                                                               config.list_result_fields);
  const std::vector<std::string> all = world_gather_strings(settings);
  for (int r = 1; r < static_cast<int>(all.size()); ++r) {
    if (all[r] == all[0]) continue;
    const auto mine = lines_of(all[0]), theirs = lines_of(all[r]);
    for (size_t i = 0; i < std::min(mine.size(), theirs.size()); ++i)
      if (mine[i] != theirs[i])
        throw ConfigError(fmt::format("ranks disagree on the configuration: rank 0 has {}, rank {} has {}", mine[i], r,
                                      theirs[i]));
    throw ConfigError(fmt::format("ranks disagree on the configuration (rank 0 and rank {})", r));
  }
}

int rank_cpus(const Communicator& comm) {
  const int cpus = host_cpus_shared(comm);
  // a container's CPU quota, shared by the ranks on its host
  const auto quota = cgroup_limits().cpus;
  return quota ? std::min(cpus, threads_within_quota(*quota, comm.local_size())) : cpus;
}

uint64_t dropout_seed(const Config& config, int rank) {
  return config.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(rank);
}

namespace {

// /proc/meminfo's MemAvailable in bytes (0 where it cannot be read: no check).
// Within a container's memory limit, what the container may still take, if less.
size_t available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  size_t kib = 0, available = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  const auto room = cgroup_limits().memory_room;
  // 0 turns the check off: a container at its limit keeps it on, with 1 byte of room
  return room && available > 0 ? std::max<size_t>(1, std::min(available, *room)) : available;
}

// Collective. Each rank's share of its host's MemAvailable: the least any rank on the host read,
// over the ranks on it. Ranks read at different moments and the figure moves, so without the
// agreement each rank would refuse a plan in words of its own (346 against 347 images).
size_t host_memory_share(const Communicator& comm) {
  const std::vector<std::string> readings = comm.gather_strings(comm.host() + " " + std::to_string(available_host_memory()));
  size_t least = std::numeric_limits<size_t>::max();
  for (const std::string& reading : readings) {
    const size_t space = reading.rfind(' ');
    if (reading.compare(0, space, comm.host()) == 0 && space == comm.host().size())
      least = std::min<size_t>(least, std::stoull(reading.substr(space + 1)));
  }
  return least / static_cast<size_t>(comm.local_size());
}

}  // namespace

std::unique_ptr<Plan> compile_run_plan(const Config& config, const RunSettings& settings, const Graph& graph,
                                       const Communicator& comm, const RunSetup& setup) {
  PlanOptions options;
  options.compute = settings.precision;
  // the input pipeline writes NCHW batches: real data is never read as NHWC (flag_table.cc notes it)
  options.input_nhwc = config.data_format == "NHWC" && config.data_dir.empty();
  options.cuda_graphs = config.cuda_graphs;
  options.share_memory = config.share_memory;
  options.fuse = config.fuse_ops;
  if (!is_device_backend(config.backend)) options.host_memory_budget = setup.host_memory_share;
  options.search_choices = setup.search_choices.get();
  const size_t known = setup.search_choices ? setup.search_choices->added() : 0;
  std::unique_ptr<Plan> plan = compile_plan(config.backend, graph, options);
  if (setup.search_choices && setup.search_choices->added() > known)
    if (const std::string why = save_algorithm_cache(config.algorithm_cache, *setup.search_choices); !why.empty())
      std::fprintf(stderr, "cnnbench: note: rank %d: the search's choices were not kept: %s\n", comm.rank(), why.c_str());
  plan->set_label_smoothing(static_cast<float>(config.label_smoothing));
  plan->set_dropout_seed(dropout_seed(config, comm.rank()));
  return plan;
}

RunSetup set_up_run(const Config& config, Communicator& comm) {
  set_error_context(fmt::format("rank {} on host {}", comm.rank(), comm.host()));
  RunSetup setup;
  setup.host_memory_share = host_memory_share(comm);  // before anything that may fail on one rank only
  std::string error;
  try {
    exit_here_if_asked(comm.rank(), 0);  // CNNBENCH_TEST_EXIT_AT / HANG_AT R:0, for the tests
    setup.threads = configure_threads(default_threads(config, comm));
    // OpenMP's own variable does not set cnnbench's threads (configure_threads sets them): said,
    // where it asks for another count, so that a recipe exporting it knows what ran
    if (const char* omp = std::getenv("OMP_NUM_THREADS");
        comm.rank() == 0 && omp && *omp && std::string(omp) != std::to_string(setup.threads))
      fmt::print(stderr, "cnnbench: note: OMP_NUM_THREADS={}: cnnbench's compute threads are --num_intra_threads "
                         "({} per rank here); ignored\n",
                 printable(omp), setup.threads);
    setup.settings = resolve_settings(config, comm.size(), setup.threads);
    setup.settings.classes = head_classes(config, setup.settings);
    setup.graph = build_model(setup.settings.model, setup.settings.batch_size, setup.settings.classes);
    use_device_for_rank(config.backend, comm.local_rank());
    if (!config.algorithm_cache.empty() && is_device_backend(config.backend))
      setup.search_choices = read_algorithm_cache(config.algorithm_cache);
    setup.plan = compile_run_plan(config, setup.settings, setup.graph, comm, setup);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (comm.report_errors_together(error)) throw ErrorsReported{2};
  return setup;
}

void start_from_rank0_weights(Plan& plan, const Communicator& comm, uint64_t seed) {
  init_parameters(plan.layout(), plan.parameters().data(), plan.buffers().data(), seed);
  comm.broadcast(plan.parameters().data(), plan.parameters().size_bytes(), 0);
  comm.broadcast(plan.buffers().data(), plan.buffers().size_bytes(), 0);
  if (DevicePlan* device = plan.device()) device->upload_state();
}

WireType wire_type(const std::string& compression) {
  if (compression == "fp16") return WireType::f16;
  if (compression == "bf16") return WireType::bf16;
  return WireType::f32;
}

std::unique_ptr<PowerSgdSettings> powersgd_settings(const Config& config) {
  if (config.compression != "powersgd") return nullptr;
  auto out = std::make_unique<PowerSgdSettings>();
  out->rank = static_cast<int>(config.powersgd_rank);
  out->warmup_steps = static_cast<int>(config.powersgd_warmup_steps);
  out->seed = config.seed;
  return out;
}

bool exchanges_gradients(const Communicator& comm, const Config& config, const RunSettings& settings) {
  return exchanges_gradients(config, comm.size(), settings.training);
}

std::unique_ptr<GradientExchange> attach_reducer(Plan& plan, Communicator& comm, const Config& config,
                                                const RunSettings& settings) {
  if (!exchanges_gradients(comm, config, settings)) return nullptr;
  const std::vector<TensorExtent> tensors = gradient_extents(plan);
  const BucketSizes threshold(static_cast<size_t>(config.fusion_threshold_mb * (1 << 20)),
                              static_cast<size_t>(config.first_layers_bucket_mb * (1 << 20)));
  std::unique_ptr<GradientExchange> reducer;
  if (DevicePlan* device = plan.device())
    reducer = make_device_reducer(comm, *device, tensors, threshold, wire_type(config.compression));
  else
    reducer = std::make_unique<GradientReducer>(comm, plan.gradients().data(), tensors, threshold,
                                                wire_type(config.compression), powersgd_settings(config).get());
  plan.set_loss_gradient_scale(1.0f / static_cast<float>(comm.size()));
  plan.set_gradient_ready_hook([r = reducer.get()](int index) { r->tensor_ready(index); });
  if (DevicePlan* device = plan.device(); device && reducer->capturable()) {  // --cuda_graphs: allreduces in backward's graph
    device->set_capture_hooks([r = reducer.get()] { r->join_capture(); }, [r = reducer.get()] { r->graph_replayed(); });
    reducer->set_before_abort([device] { device->drop_graphs(); });
  }
  return reducer;
}

std::unique_ptr<ForwardOverlap> attach_forward_overlap(Plan& plan, GradientExchange* reducer, const Config& config,
                                                       Timeline* timeline) {
  if (!reducer || !config.overlap_forward) return nullptr;
  if (!mpi_thread_multiple())  // the report's collectives meet allreduces still running
    throw std::runtime_error("--overlap_forward needs an MPI library with MPI_THREAD_MULTIPLE");
  return std::make_unique<ForwardOverlap>(plan, *reducer, config.forward_priority, timeline);
}

std::string devices_text(const Communicator& comm, const Plan& plan) {
  const std::string device = "['" + plan.device_name() + "']";
  if (comm.size() == 1) return device;
  return fmt::format("{} ranks x {} on {} host{}", comm.size(), device, comm.hosts(), comm.hosts() == 1 ? "" : "s");
}

void note_unused_exchange_flags(const Config& config, const Communicator& comm, const RunSettings& settings) {
  if (comm.rank() != 0) return;
  for (const std::string& note : exchange_flag_notes(config, comm.size(), settings.training))
    fmt::print(stderr, "cnnbench: note: {}\n", note);
  if (const std::string note = one_host_hierarchical_note(config, comm);
      !note.empty() && exchanges_gradients(config, comm.size(), settings.training))
    fmt::print(stderr, "cnnbench: note: {}\n", note);
}

std::string one_host_hierarchical_note(const Config& config, const Communicator& comm) {
  if (!config.hierarchical_allreduce || comm.size() == 1 || comm.hosts() > 1) return "";
  return fmt::format("--hierarchical_allreduce: all {} ranks are on one host, so every sum is MPI's reduce-scatter "
                     "and allgather within it{}",
                     comm.size(),
                     comm.backend() == "mpi" ? "" : " and --allreduce=" + comm.backend() + " sends nothing");
}

std::string backend_text(const Config& config, const Communicator& comm, int threads, bool exchanging,
                         const Plan& plan) {
  std::string note = is_device_backend(config.backend)
                         ? config.backend + ", one GPU per rank"
                         : fmt::format("{}, {} thread{} per rank", config.backend, threads, threads == 1 ? "" : "s");
  if (exchanging)
    note += fmt::format("; allreduce {}{}, fusion {} MiB{}, compression {}", comm.backend(),
                        config.hierarchical_allreduce ? " (hierarchical)" : "", config.fusion_threshold_mb,
                        config.first_layers_bucket_mb > 0
                            ? fmt::format(" (first layers' bucket {} MiB, doubling)", config.first_layers_bucket_mb)
                            : "",
                        config.compression);
  if (exchanging && config.compression == "powersgd")
    note += fmt::format(" (rank {}, after {} uncompressed steps)", config.powersgd_rank, config.powersgd_warmup_steps);
  if (exchanging && config.overlap_forward)
    note += config.forward_priority ? "; updates in the next forward (first layers' buckets sent first)"
                                    : "; updates in the next forward";
  if (const std::string kernels = plan.kernel_notes(); !kernels.empty()) note += "; " + kernels;
  return note;
}

}  // namespace cnnbench
