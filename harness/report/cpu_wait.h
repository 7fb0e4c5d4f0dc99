// harness/report/cpu_wait.h — how long this process's threads were ready to run but waited for a CPU
// another process held: the kernel's run-queue delay (/proc/self/task/*/schedstat). On a shared
// machine this is what makes one run slower than the next, and it tells a run that lost its
// cores to a neighbour from one that was slow by itself.
#pragma once

#include <vector>

namespace cnnbench {

// Seconds spent waiting on a run queue, summed over the given threads of this process (kernel
// thread ids; all of its threads when empty); a negative number where the kernel does not
// report it.
double runqueue_wait_sec(const std::vector<int>& thread_ids = {});

}  // namespace cnnbench
