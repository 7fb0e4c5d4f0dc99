// cnnbench: trains (or runs forward) a CNN on synthetic or real data across MPI ranks and
// reports images/sec in tf_cnn_benchmarks' format, plus a summary, a JSON document and a CSV
// row; or runs the allreduce or input-pipeline microbenchmark, or a subcommand.
//   mpiexec -np N cnnbench --model=resnet50 --batch_size=32 ...     (or srun, or one process)
//   cnnbench compare BASE NEW [--tolerance=PCT] [--check_only]       (results against results)
//   cnnbench make_tfrecords JPEG_ROOT OUT_DIR [--train_shards=N] ...  (ImageNet shards from JPEGs)
//   cnnbench --mode=input --data_dir=DIR [--num_data_workers=N]       (the input pipeline alone)
#include <fmt/format.h>
#include <malloc.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <limits>

#include "comm/communicator.h"
#include "harness/run/allreduce_bench.h"
#include "harness/compare/compare.h"
#include "harness/data/make_tfrecords.h"
#include "harness/cli/config.h"
#include "harness/cli/run_settings.h"
#include "harness/run/convergence_run.h"
#include "harness/run/input_bench.h"
#include "harness/run/run_setup.h"
#include "harness/run/step_loop.h"
#include "harness/run/training_run.h"
#include "harness/report/output_paths.h"
#include "harness/report/result_fields.h"
#include "harness/report/run_context.h"
#include "kernels/backend.h"
#include "kernels/cpu_peak.h"
#include "kernels/dtype.h"
#include "kernels/threads.h"
#include "models/model_zoo.h"

namespace cnnbench {
namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

// --peak: every rank measures its own threads' FMA peak (ranks on one host share its cores, as
// their training would); rank 0 prints each rank's figure and the sum.
int print_peak(const Config& config) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const DType type = config.use_fp16 ? DType::bf16 : parse_dtype(config.precision).value_or(DType::f32);
  const int threads = configure_threads(static_cast<int>(config.num_intra_threads));
  MPI_Barrier(MPI_COMM_WORLD);  // all ranks measure at once
  const PeakResult peak = measure_peak(type, threads);
  double mine = peak.supported ? peak.gflops : 0, total = 0;
  MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (world_rank() != 0) return 0;
  if (!peak.supported) {
    std::printf("%s FMA peak: no fast path for %s on this CPU\n", dtype_name(type), dtype_name(type));
    return 0;
  }
  std::printf("%s FMA peak: %.1f GFLOP/s per rank (%d thread%s, %s)%s\n", dtype_name(type), peak.gflops, threads,
              threads == 1 ? "" : "s", peak.isa.c_str(),
              size > 1 ? fmt::format(", {:.1f} GFLOP/s over {} ranks", total, size).c_str() : "");
  return 0;
}

// A failure on this rank alone: says so, naming the rank, and ends every rank of the job at once
// (none is left waiting in a collective). Returns the exit code for a job of one rank.
int end_job_from_this_rank(const std::string& what, int exit_code) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::fprintf(stderr, "cnnbench: rank %d: %s\n", world_rank(), what.c_str());
  std::fflush(stderr);
  if (size > 1) MPI_Abort(MPI_COMM_WORLD, exit_code);
  return exit_code;
}

// --version: what a result's context records of the build, on one line
void print_version() {
  const RunContext c = collect_run_context();
  std::string backends;
  for (const std::string& b : backend_names()) backends += (backends.empty() ? "" : ", ") + b;
  std::printf("cnnbench %s (git %s; %s; oneDNN %s; backends %s)\n", c.cnnbench_version.c_str(), c.git_revision.c_str(),
              c.compiler.c_str(), c.onednn_version.c_str(), backends.c_str());
}

void list_models() {
  fmt::print("{:<16} {:<14} {:>10} {:>8} {:>14} {:>12} {:>9}  {}\n", "model", "data", "input", "classes", "parameters",
             "GMACs/image", "batch", "network");
  for (const ModelInfo& m : model_zoo()) {
    const Graph g = m.build(1);
    fmt::print("{:<16} {:<14} {:>10} {:>8} {:>14} {:>12.3f} {:>9}  {}\n", m.name, m.dataset,
               fmt::format("{}x{}x{}", m.channels, m.image_size, m.image_size), m.classes, g.param_count(),
               static_cast<double>(g.forward_macs_per_image()) / 1e9, m.default_batch_size, m.network);
  }
}

}  // namespace
}  // namespace cnnbench

int main(int argc, char** argv) {
  using namespace cnnbench;
  // Comparing result files needs no MPI: it runs anywhere, with no launcher.
  if (argc > 1 && std::string(argv[1]) == "compare")
    return compare_command(std::vector<std::string>(argv + 2, argv + argc), stdout, stderr);
  if (argc > 1 && std::string(argv[1]) == "make_tfrecords")
    return make_tfrecords_command(std::vector<std::string>(argv + 2, argv + argc), stdout, stderr);
  // Keep freed memory in the process: glibc otherwise hands large blocks back to the kernel
  // and every step pays page faults again (Open MPI's allreduce allocates a buffer per call:
  // 0.6 GB/s instead of 12 GB/s for 64 MB here). One malloc arena: a thread's own arena
  // cannot hold a 100 MB buffer and trims it, so the communication thread paid the faults.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_ARENA_MAX, 1);
  // Waiting ranks yield their core: ranks may share cores with compute threads.
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  // Open MPI over TCP: its emulated RDMA pipeline for large messages ("put") moved an
  // allreduce between two hosts at 53% of a shaped 1 Gbit/s or 200 Mbit/s link; plain
  // send/receive reaches 94-95% (scripts/netns_allreduce.sh). A user's own setting wins.
  setenv("OMPI_MCA_btl_tcp_flags", "send,inplace,need-ack,need-csum,hetero-rdma", 0);
  try {
    init_mpi(&argc, &argv);
  } catch (const LaunchError& e) {
    std::fprintf(stderr, "cnnbench: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnnbench: %s\n", e.what());
    return 1;
  }
  try {
    check_launcher_agrees();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnnbench: %s\n", e.what());
    finalize_mpi();
    return 2;
  }

  // 1. flags, the same on every rank: errors reported once, by rank 0
  Config config;
  std::string error;
  try {
    config = parse_command_line(argc, argv);
  } catch (const ConfigError& e) {
    error = e.what();
  }
  if (report_errors_together(error)) {
    finalize_mpi();
    return 2;
  }
  try {
    check_ranks_agree(config);
  } catch (const ConfigError& e) {
    error = e.what();
  }
  if (report_errors_together(error)) {
    finalize_mpi();
    return 2;
  }
  if (config.help || config.list_models || config.list_result_fields || config.version) {
    if (world_rank() == 0) {
      if (config.version) print_version();
      if (config.help) std::fputs(usage().c_str(), stdout);
      if (config.list_models) list_models();
      if (config.list_result_fields) std::puts(result_fields_json().dump(1).c_str());
    }
    finalize_mpi();
    return 0;
  }
  // a flag this run does not read is said so, once: the command line still runs
  if (world_rank() == 0)
    for (const std::string& note : flag_notes(config)) std::fprintf(stderr, "cnnbench: note: %s\n", note.c_str());
  if (config.peak) {
    const int code = print_peak(config);
    finalize_mpi();
    return code;
  }

  // 2. the run: errors in setting it up are gathered and printed once by rank 0 (exit 2); any
  // later failure ends the whole job at once, naming the rank, so no rank waits in a collective.
  int exit_code = 0;
  try {
    // every output path checked before the first step, so a wrong one costs nothing
    std::string bad_output;
    if (world_rank() == 0) {
      try {
        check_output_paths(config);
      } catch (const std::exception& e) {
        bad_output = e.what();
      }
    }
    if (report_errors_together(bad_output)) throw ErrorsReported{2};
    std::unique_ptr<Communicator> comm;
    std::string not_built;
    try {
      comm = make_communicator(config.allreduce, config.collective_timeout_sec, config.hierarchical_allreduce);
    } catch (const std::exception& e) {
      not_built = std::string("--allreduce: ") + e.what();
    }
    if (report_errors_together(not_built)) throw ErrorsReported{2};
    comm->watch_collectives(config.collective_timeout_sec);
    // no rate or schedule given: the model's own, as tf_cnn_benchmarks runs it (recorded as given)
    apply_model_schedule(config, comm->size());
    if (config.mode == "allreduce")
      run_allreduce_benchmark(config, *comm);
    else if (config.mode == "input")
      run_input_benchmark(config, *comm);
    else if (!config.data_dir.empty())
      run_convergence(config, *comm);
    else
      run_training(config, *comm);
  } catch (const ErrorsReported& e) {
    exit_code = e.exit_code;
  } catch (const DivergedError& e) {
    exit_code = end_job_from_this_rank(e.what(), 3);  // a diverged loss: the others would wait for this rank
  } catch (const std::exception& e) {
    exit_code = end_job_from_this_rank(std::string("error: ") + e.what(), 1);
  }
  finalize_mpi();
  return exit_code;
}
