// kernels/threads.h — sets how many threads the compute kernels use and pins them.
// When the process's affinity mask (set by mpiexec or srun binding) holds exactly as many CPUs
// as threads, thread i is pinned to the i-th of them; otherwise placement is left to the OS.
#pragma once

namespace cnnbench {

// count <= 0 means one thread per CPU the process may run on. Returns the count used.
int configure_threads(int count);

// CPUs in the process's affinity mask.
int available_cpus();

}  // namespace cnnbench
