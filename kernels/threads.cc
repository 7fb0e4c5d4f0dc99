#include "kernels/threads.h"

#include <omp.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <vector>

namespace cnnbench {
namespace {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

std::vector<int>& recorded_thread_ids() {
  static std::vector<int> ids;
  return ids;
}

// The calling thread's mask before configure_threads() pinned it (the main thread is the
// OpenMP team's first): what the process was given, which its own mask no longer says.
int& cpus_before_pinning() {
  static int cpus = 0;
  return cpus;
}

}  // namespace

int available_cpus() {
  if (cpus_before_pinning() > 0) return cpus_before_pinning();
  const auto cpus = allowed_cpus();
  return cpus.empty() ? 1 : static_cast<int>(cpus.size());
}

const std::vector<int>& compute_thread_ids() { return recorded_thread_ids(); }

int configure_threads(int count) {
  const std::vector<int> cpus = allowed_cpus();
  if (count <= 0) count = cpus.empty() ? 1 : static_cast<int>(cpus.size());
  omp_set_num_threads(count);
  // the team OpenMP keeps for every later parallel region of this size
  std::vector<int>& ids = recorded_thread_ids();
  ids.assign(static_cast<size_t>(count), 0);
#pragma omp parallel num_threads(count)
  ids[static_cast<size_t>(omp_get_thread_num())] = static_cast<int>(syscall(SYS_gettid));
  // Pin only when the process owns exactly as many CPUs as threads: with a wider mask (an
  // oversubscribed or unbound launch) several ranks would pin onto the same first CPUs.
  if (!cpus.empty() && count == static_cast<int>(cpus.size())) {
    if (cpus_before_pinning() == 0) cpus_before_pinning() = count;
#pragma omp parallel num_threads(count)
    {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[omp_get_thread_num()], &one);
      sched_setaffinity(0, sizeof(one), &one);
    }
  }
  return count;
}

}  // namespace cnnbench
