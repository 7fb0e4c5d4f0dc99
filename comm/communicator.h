// comm/communicator.h — Communicator: the ranks of a job and what they do together.
// The control plane (rank, size, hosts, broadcast, barrier, scalar reductions, gathers, abort)
// always runs over MPI, which launched the job (mpiexec, or srun through PMI). The data plane,
// allreduce of gradient buckets, is the backend's: MPI_Allreduce, Gloo's ring over TCP, or
// NCCL on GPUs. Backends are chosen by name in comm_registry.cc, the only place with #ifdefs.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/collective_watchdog.h"

namespace cnnbench {

enum class WireType { f32, f16, bf16 };  // element type on the wire (gradient compression)

const char* wire_type_name(WireType t);
size_t wire_type_size(WireType t);

class Communicator {
 public:
  virtual ~Communicator() = default;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // among the ranks on this host
  int local_size() const { return local_size_; }  // ranks on this host
  int hosts() const { return hosts_; }
  const std::string& host() const { return host_; }
  virtual std::string backend() const = 0;

  // Data plane: in-place sum over ranks of `count` elements of type `type` (16-bit types are
  // summed in fp32 pairwise and rounded back). Safe to call from one communication thread.
  virtual void allreduce_sum(void* data, size_t count, WireType type) = 0;

  // Control plane (MPI), called from the main thread.
  void broadcast(void* data, size_t bytes, int root) const;
  void barrier() const;
  void allreduce_max(double* values, size_t count) const;
  void allreduce_min(double* values, size_t count) const;
  void allreduce_sum(double* values, size_t count) const;
  std::vector<std::string> gather_strings(const std::string& mine) const;  // every rank gets all
  // report_errors_together() below, watched: a rank stopped or hung while setting up (reading
  // its data, say) is named after --collective_timeout_sec instead of leaving the others waiting.
  bool report_errors_together(const std::string& mine) const;
  // Seconds to add to this rank's steady_clock to read rank 0's (0 on rank 0): ping-pong with
  // rank 0, the round trip with the least delay taken, its midpoint against rank 0's reading.
  double clock_offset_to_rank0_sec() const;
  [[noreturn]] void abort(int exit_code) const;

  // Collective: from now on a collective that waits longer than `timeout_sec` ends the job,
  // naming the rank that did not arrive (comm/collective_watchdog.h).
  void watch_collectives(double timeout_sec);

 protected:
  Communicator();  // reads rank, size, host and local rank from MPI (initialized by the caller)
  // Marks this rank as inside a collective for the watchdog, if one runs, until it goes away.
  CollectiveWatchdog::Watch watch(CollectivePlane plane, const char* what) const {
    return CollectiveWatchdog::Watch(watchdog_.get(), plane, what);
  }
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, hosts_ = 1;
  std::string host_;
  std::vector<std::string> host_of_rank_;

 private:
  std::unique_ptr<CollectiveWatchdog> watchdog_;
};

// Every rank of MPI_COMM_WORLD calls this with its error message (empty: none); rank 0 prints
// each distinct message once to stderr, naming the ranks unless all share it. True if any failed.
bool report_errors_together(const std::string& mine);
// Every rank's string, on every rank (MPI_COMM_WORLD, outside any watch: before the watchdog
// runs; Communicator::gather_strings is the watched one).
std::vector<std::string> world_gather_strings(const std::string& mine);

// Thrown after report_errors_together() has printed: the caller only exits.
struct ErrorsReported {
  int exit_code;
};

// Throws std::runtime_error("<what> failed: <MPI's message>") unless `code` is MPI_SUCCESS.
void check_mpi(int code, const char* what);

// Whether a launcher started this process (mpiexec, srun, MPICH's hydra), read from its
// environment: before MPI_Init, or after it in a process that has one.
bool started_by_launcher();
// A launch that cannot make one job (srun of several tasks without --mpi=pmix): the user's to mend.
struct LaunchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Initializes MPI once (thread level MULTIPLE) and finalizes it at exit; throws LaunchError
// before MPI_Init for a launch that cannot make one job.
void init_mpi(int* argc, char*** argv);
// After init_mpi: throws std::runtime_error where the launcher started another number of tasks
// than MPI joined into this job (srun without --mpi=pmix starts N singletons, each of which
// would benchmark alone and write its own results).
void check_launcher_agrees();
void finalize_mpi();
// Whether MPI lets several threads call it at once (MPI_THREAD_MULTIPLE was granted).
bool mpi_thread_multiple();

std::vector<std::string> communicator_backends();
// Throws std::invalid_argument for an unknown name or a backend this build lacks.
// timeout_sec: Gloo's own timeout stays behind it; nccl (one rank per GPU) checks NCCL's health
// against it. The watchdog itself starts with watch_collectives(), once every rank has its
// communicator.
// hierarchical (mpi, gloo): sum within each host first (comm/host_communicator.h); throws
// std::invalid_argument if hosts run different numbers of ranks.
std::unique_ptr<Communicator> make_communicator(const std::string& backend, double timeout_sec = 300,
                                                bool hierarchical = false);

}  // namespace cnnbench
