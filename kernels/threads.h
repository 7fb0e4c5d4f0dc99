// kernels/threads.h — sets how many threads the compute kernels use and pins them.
// When the process's affinity mask (set by mpiexec or srun binding) holds exactly as many CPUs
// as threads, thread i is pinned to the i-th of them; otherwise placement is left to the OS.
#pragma once

#include <vector>

namespace cnnbench {

// count <= 0 means one thread per CPU the process may run on. Returns the count used.
int configure_threads(int count);

// CPUs in the process's affinity mask (as it was before configure_threads() pinned the calling
// thread to one of them).
int available_cpus();

// The kernel thread ids of the compute threads configure_threads set up (the OpenMP team, the
// calling thread first): what a CPU-wait share is taken over, leaving out communication threads.
const std::vector<int>& compute_thread_ids();

}  // namespace cnnbench
