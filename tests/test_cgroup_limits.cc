// A container's CPU quota and memory limit, read from cgroup files laid out as a machine has
// them (v2, v1, and v1 beside v2's unified hierarchy, as a hybrid host has them).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness/run/cgroup_limits.h"
#include "tests/cli_run.h"

namespace cnnbench {
namespace {

void put(const std::string& root, const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(root + path).parent_path());
  std::ofstream(root + path) << text;
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

// cgroup v2, a Kubernetes pod's container: its own limits, and a tighter CPU quota on the pod above
TEST(CgroupLimits, V2TakesTheTightestOfTheCgroupAndThoseAbove) {
  const std::string root = fresh_dir("cgroup_v2");
  put(root, "/proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  put(root, "/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "1600000 100000\n");  // 16 CPUs
  put(root, "/sys/fs/cgroup/kubepods/pod1/cpu.max", "1200000 100000\n");      // the pod's: 12
  put(root, "/sys/fs/cgroup/kubepods/cpu.max", "max 100000\n");
  put(root, "/sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "34359738368\n");  // 32 GiB
  put(root, "/sys/fs/cgroup/kubepods/pod1/ctr/memory.current", "6442450944\n");  // 6 GiB held,
  put(root, "/sys/fs/cgroup/kubepods/pod1/ctr/memory.stat",
      "anon 1\nactive_file 1073741824\ninactive_file 1073741824\n");  // 2 of it file cache
  put(root, "/sys/fs/cgroup/kubepods/memory.max", "max\n");
  put(root, "/sys/fs/cgroup/kubepods/memory.current", "99999999999\n");
  const CgroupLimits limits = cgroup_limits(root);
  ASSERT_TRUE(limits.cpus);
  EXPECT_DOUBLE_EQ(*limits.cpus, 12);
  ASSERT_TRUE(limits.memory_room);
  EXPECT_DOUBLE_EQ(static_cast<double>(*limits.memory_room), 28 * kGiB);  // 32 - (6 - 2)
}

// Inside a container's own cgroup namespace the path is "/" and the mount is its cgroup
TEST(CgroupLimits, V2InsideACgroupNamespaceReadsTheMount) {
  const std::string root = fresh_dir("cgroup_v2_ns");
  put(root, "/proc/self/cgroup", "0::/\n");
  put(root, "/sys/fs/cgroup/cpu.max", "250000 100000\n");  // docker run --cpus=2.5
  put(root, "/sys/fs/cgroup/memory.max", "max\n");
  put(root, "/sys/fs/cgroup/memory.current", "123\n");
  const CgroupLimits limits = cgroup_limits(root);
  ASSERT_TRUE(limits.cpus);
  EXPECT_DOUBLE_EQ(*limits.cpus, 2.5);
  EXPECT_FALSE(limits.memory_room) << "memory.max is max";
}

// cgroup v1 beside an empty unified hierarchy (a hybrid host): v1's controllers hold the limits;
// -1 and the page-aligned largest number say none
TEST(CgroupLimits, V1ControllersOnAHybridHost) {
  const std::string root = fresh_dir("cgroup_v1");
  put(root, "/proc/self/cgroup", "9:name=systemd:/\n4:memory:/job/7\n2:cpu,cpuacct:/job/7\n0::/\n");
  put(root, "/sys/fs/cgroup/cpu,cpuacct/job/7/cpu.cfs_quota_us", "400000\n");
  put(root, "/sys/fs/cgroup/cpu,cpuacct/job/7/cpu.cfs_period_us", "100000\n");
  put(root, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  put(root, "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  put(root, "/sys/fs/cgroup/memory/job/7/memory.limit_in_bytes", "8589934592\n");  // 8 GiB
  put(root, "/sys/fs/cgroup/memory/job/7/memory.usage_in_bytes", "2147483648\n");  // 2 GiB, 1 of it cache
  put(root, "/sys/fs/cgroup/memory/job/7/memory.stat",
      "inactive_file 5\nactive_file 5\ntotal_inactive_file 536870912\ntotal_active_file 536870912\n");
  put(root, "/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  put(root, "/sys/fs/cgroup/memory/memory.usage_in_bytes", "10275168256\n");
  const CgroupLimits limits = cgroup_limits(root);
  ASSERT_TRUE(limits.cpus);
  EXPECT_DOUBLE_EQ(*limits.cpus, 4);
  ASSERT_TRUE(limits.memory_room);
  EXPECT_DOUBLE_EQ(static_cast<double>(*limits.memory_room), 7 * kGiB);
}

TEST(CgroupLimits, NoneWhereNothingIsLimitedOrReadable) {
  const std::string root = fresh_dir("cgroup_none");
  EXPECT_FALSE(cgroup_limits(root).cpus) << "no /proc/self/cgroup";
  put(root, "/proc/self/cgroup", "1:cpu:/\n0::/\n");
  put(root, "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
  put(root, "/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  const CgroupLimits limits = cgroup_limits(root);
  EXPECT_FALSE(limits.cpus);
  EXPECT_FALSE(limits.memory_room);
}

// Threads never past the quota's share (a throttled thread holds the team at its next barrier)
TEST(CgroupLimits, ThreadsStayWithinTheQuotasShare) {
  EXPECT_EQ(threads_within_quota(16, 2), 8);
  EXPECT_EQ(threads_within_quota(2.5, 1), 2);
  EXPECT_EQ(threads_within_quota(3, 2), 1);
  EXPECT_EQ(threads_within_quota(0.5, 1), 1);
  EXPECT_EQ(threads_within_quota(4, 4), 1);
}

}  // namespace
}  // namespace cnnbench
