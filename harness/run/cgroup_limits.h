// harness/run/cgroup_limits.h — the CPU time and memory a container grants the process through
// its cgroup (docker run --cpus/--memory, Kubernetes' limits), which neither the CPUs it may run
// on nor /proc/meminfo show: a pod limited to 16 CPUs on a 64-core node sees all 64, and
// threads for 64 on a quota of 16 spin at every barrier while the quota throttles them.
// cgroup v2 (cpu.max, memory.max) and v1 (cpu.cfs_quota_us over cpu.cfs_period_us,
// memory.limit_in_bytes), the tightest of the process's cgroup and those above it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace cnnbench {

struct CgroupLimits {
  std::optional<double> cpus;         // CPU-seconds per second the cgroup may use
  std::optional<size_t> memory_room;  // bytes it may still take: its limit less what it holds
                                      // (the file cache it may drop not counted)
};

// root: where /proc and /sys are ("" on a machine, or CNNBENCH_TEST_CGROUP_ROOT: a folder of
// files in the tests).
CgroupLimits cgroup_limits(const std::string& root = "");

// Threads for one of `ranks` ranks sharing a quota of `cpus`: its share rounded down, at least 1.
int threads_within_quota(double cpus, int ranks);

}  // namespace cnnbench
