#include "comm/communicator.h"

#include <mpi.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <filesystem>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <stdexcept>

namespace cnnbench {

const char* wire_type_name(WireType t) {
  switch (t) {
    case WireType::f32: return "fp32";
    case WireType::f16: return "fp16";
    case WireType::bf16: return "bf16";
  }
  return "?";
}

size_t wire_type_size(WireType t) { return t == WireType::f32 ? 4 : 2; }

namespace {

// The session folder base a singleton was given (empty: none), removed after MPI_Finalize.
std::string& own_session_base() {
  static std::string path;
  return path;
}

// Session folders of singletons that ended without MPI_Finalize (killed): removed by the next
// one, where their process is gone.
void remove_stale_session_bases(const std::string& tmp) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(tmp, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("cnnbench-ompi.", 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + 14, nullptr, 10);
    if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) std::filesystem::remove_all(entry.path(), ec);
  }
}

}  // namespace

bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_ID"})
    if (std::getenv(name)) return true;
  // a PMIx launcher's rank, but not Open MPI's singleton, whose MPI_Init sets PMIX_RANK itself
  const char* ess = std::getenv("OMPI_MCA_ess");
  return std::getenv("PMIX_RANK") && !(ess && std::string(ess) == "singleton");
}

void init_mpi(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  // srun of several tasks without the MPI's wiring (no --mpi=pmix): each task would start alone,
  // and Open MPI itself ends each inside MPI_Init, blaming Slurm's build ("OMPI was not built
  // with SLURM's PMI support"), where the fix is one srun flag
  const char* step_tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  if (std::getenv("SLURM_STEP_ID") && step_tasks && std::strtol(step_tasks, nullptr, 10) > 1 &&
      !std::getenv("OMPI_COMM_WORLD_SIZE") && !std::getenv("PMIX_RANK") && !std::getenv("PMI_RANK"))
    throw LaunchError(std::string("srun started ") + step_tasks +
                      " tasks without the MPI's wiring, so each would run alone: launch with srun --mpi=pmix (see "
                      "docs/ranks-and-hosts.md)");
  // Open MPI's hwloc would probe X displays :0 to :N for GPUs' NV-CONTROL (its gl component), and
  // each probe resolves "localhost": 5 s a launch where that goes to a slow DNS server (a
  // container without /etc/hosts). Topology for binding and NCCL does not need it; a user's own
  // HWLOC_COMPONENTS is kept.
  setenv("HWLOC_COMPONENTS", "-gl", 0);
  // A process no launcher started is Open MPI's singleton: it creates, and at its end removes,
  // the per-user session folder <tmp>/ompi.<host>.<uid>, and two singletons starting and ending
  // at once race on it ("A call to mkdir was unable to create ... File exists", orte_init failed:
  // seen twice in one test run of ctest -j2). Each singleton gets a base folder of its own.
  if (!started_by_launcher() && !std::getenv("OMPI_MCA_orte_tmpdir_base")) {
    const char* dir = std::getenv("TMPDIR");
    const std::string tmp = dir && *dir ? dir : "/tmp", base = tmp + "/cnnbench-ompi." + std::to_string(getpid());
    remove_stale_session_bases(tmp);
    if (mkdir(base.c_str(), 0700) == 0) {
      setenv("OMPI_MCA_orte_tmpdir_base", base.c_str(), 1);
      own_session_base() = base;
    }
  }
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  // Errors come back as codes we turn into messages, instead of MPI's default abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_SERIALIZED)
    throw std::runtime_error("the MPI library offers no thread support; cnnbench's communication thread needs it");
}

void check_launcher_agrees() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // the tasks the launcher says it started: mpiexec's, or srun's step (not the allocation's
  // SLURM_NTASKS where mpiexec runs inside it)
  auto number = [](const char* name) -> long {
    const char* v = std::getenv(name);
    return v && *v ? std::strtol(v, nullptr, 10) : -1;
  };
  long tasks = number("OMPI_COMM_WORLD_SIZE");
  const char* launcher = "mpiexec";
  if (tasks < 0 && std::getenv("SLURM_STEP_ID")) {
    tasks = number("SLURM_STEP_NUM_TASKS") >= 0 ? number("SLURM_STEP_NUM_TASKS") : number("SLURM_NTASKS");
    launcher = "srun";
  }
  if (tasks < 0) tasks = number("PMI_SIZE"), launcher = "the launcher";
  if (tasks <= 0 || tasks == size) return;
  const bool srun = std::string(launcher) == "srun";
  throw std::runtime_error(std::string(launcher) + " started " + std::to_string(tasks) + " tasks, but MPI joined " +
                           std::to_string(size) + " of them into this job: they would run as separate " +
                           std::to_string(size) + "-rank benchmarks, each writing results" +
                           (srun ? " (srun needs the MPI's wiring: srun --mpi=pmix, see docs/ranks-and-hosts.md)" : ""));
}

bool mpi_thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided == MPI_THREAD_MULTIPLE;
}

void finalize_mpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
  if (!own_session_base().empty()) {  // Open MPI removed its folders inside; the base is ours
    std::error_code ec;
    std::filesystem::remove_all(own_session_base(), ec);
    own_session_base().clear();
  }
}

Communicator::Communicator() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  host_.assign(name, length);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
  host_of_rank_ = gather_strings(host_);
  hosts_ = static_cast<int>(std::set<std::string>(host_of_rank_.begin(), host_of_rank_.end()).size());
}

void Communicator::watch_collectives(double timeout_sec) {
  watchdog_ = std::make_unique<CollectiveWatchdog>(timeout_sec, host_of_rank_);
}

void check_mpi(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string(what) + " failed: " + std::string(text, length));
}

void Communicator::broadcast(void* data, size_t bytes, int root) const {
  // MPI counts are int: send large buffers in pieces
  char* p = static_cast<char*>(data);
  for (size_t done = 0; done < bytes;) {
    const int n = static_cast<int>(std::min<size_t>(bytes - done, 1 << 30));
    const auto watching = watch(CollectivePlane::control, "broadcast");
    check_mpi(MPI_Bcast(p + done, n, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
    done += n;
  }
}

void Communicator::barrier() const {
  const auto watching = watch(CollectivePlane::control, "barrier");
  check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

void Communicator::allreduce_max(double* v, size_t n) const {
  const auto watching = watch(CollectivePlane::control, "allreduce of scalars");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, static_cast<int>(n), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
}
void Communicator::allreduce_min(double* v, size_t n) const {
  const auto watching = watch(CollectivePlane::control, "allreduce of scalars");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, static_cast<int>(n), MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
}
void Communicator::allreduce_sum(double* v, size_t n) const {
  const auto watching = watch(CollectivePlane::control, "allreduce of scalars");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
}

double Communicator::clock_offset_to_rank0_sec() const {
  auto now = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  constexpr int kRounds = 10;
  double offset = 0;
  barrier();
  const auto watching = watch(CollectivePlane::control, "clock alignment");
  for (int r = 1; r < size_; ++r) {  // one rank at a time, so rank 0 answers at once
    if (rank_ == 0) {
      for (int i = 0; i < kRounds; ++i) {
        double ping = 0;
        check_mpi(MPI_Recv(&ping, 1, MPI_DOUBLE, r, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        const double reading = now();
        check_mpi(MPI_Send(&reading, 1, MPI_DOUBLE, r, 78, MPI_COMM_WORLD), "MPI_Send");
      }
    } else if (rank_ == r) {
      double best_round_trip = 1e30;
      for (int i = 0; i < kRounds; ++i) {
        const double sent = now();
        check_mpi(MPI_Send(&sent, 1, MPI_DOUBLE, 0, 77, MPI_COMM_WORLD), "MPI_Send");
        double reading = 0;
        check_mpi(MPI_Recv(&reading, 1, MPI_DOUBLE, 0, 78, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        const double back = now();
        if (back - sent < best_round_trip) {
          best_round_trip = back - sent;
          offset = reading - (sent + back) / 2;
        }
      }
    }
  }
  return offset;
}

bool Communicator::report_errors_together(const std::string& mine) const {
  const auto watching = watch(CollectivePlane::control, "gathering of errors");
  return cnnbench::report_errors_together(mine);
}

std::vector<std::string> Communicator::gather_strings(const std::string& mine) const {
  const auto watching = watch(CollectivePlane::control, "gather of strings");
  return world_gather_strings(mine);
}

void Communicator::abort(int exit_code) const {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::exit(exit_code);  // not reached
}

}  // namespace cnnbench

namespace cnnbench {

std::vector<std::string> world_gather_strings(const std::string& mine) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size), offsets(size);
  check_mpi(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(total, '\0');
  check_mpi(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                           MPI_COMM_WORLD),
            "MPI_Allgatherv");
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.push_back(all.substr(offsets[r], lengths[r]));
  return out;
}

bool report_errors_together(const std::string& mine) {
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int failed = mine.empty() ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!failed) return false;
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size), offsets(size);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(rank == 0 ? total : 0, '\0');
  MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank != 0) return true;
  std::vector<std::pair<std::string, std::vector<int>>> distinct;
  for (int r = 0; r < size; ++r) {
    const std::string m = all.substr(offsets[r], lengths[r]);
    if (m.empty()) continue;
    auto it = std::find_if(distinct.begin(), distinct.end(), [&](const auto& d) { return d.first == m; });
    if (it == distinct.end())
      distinct.push_back({m, {r}});
    else
      it->second.push_back(r);
  }
  for (const auto& [message, ranks] : distinct) {
    if (static_cast<int>(ranks.size()) == size) {
      std::fprintf(stderr, "cnnbench: %s\n", message.c_str());
      continue;
    }
    std::string who;
    for (int r : ranks) {
      if (!who.empty()) who += ',';
      who += std::to_string(r);
    }
    std::fprintf(stderr, "cnnbench: rank %s: %s\n", who.c_str(), message.c_str());
  }
  std::fflush(stderr);
  return true;
}

}  // namespace cnnbench
