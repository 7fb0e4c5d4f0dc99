#include "harness/run/cgroup_limits.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace cnnbench {
namespace {

// v1 writes "no limit" as the largest page-aligned signed 64-bit number; anything past 2^60
// bytes is that
constexpr double kNoLimitBytes = 1152921504606846976.0;

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<double> read_number(const std::string& path) {
  const auto text = read_text(path);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  double value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

// `key value` in a memory.stat
double stat_value(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string name;
  double value = 0;
  while (in >> name >> value)
    if (name == key) return value;
  return 0;
}

// The file cache a cgroup holds, which the kernel drops before it refuses memory (as MemAvailable
// counts it): v2's inactive_file + active_file, v1's with the prefix total_ (its subtree's).
double file_cache(const std::string& stat, const std::string& prefix) {
  return stat_value(stat, prefix + "inactive_file") + stat_value(stat, prefix + "active_file");
}

// The cgroup's folder and every one above it, under `mount` (the process's cgroup path as
// /proc/self/cgroup names it: inside a container's cgroup namespace that is "/", the mount itself).
std::vector<std::string> folders(const std::string& mount, std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path.back() == '/') path.pop_back();
  for (;;) {
    out.push_back(mount + path);
    const size_t slash = path.rfind('/');
    if (path.empty() || slash == std::string::npos) break;
    path.resize(slash);
  }
  return out;
}

void keep_least(std::optional<double>& least, double value) {
  if (!least || value < *least) least = value;
}

struct CgroupPaths {
  std::optional<std::string> unified, cpu, memory;  // v2's, and v1's cpu and memory controllers'
};

CgroupPaths process_cgroups(const std::string& root) {
  CgroupPaths paths;
  std::ifstream in(root + "/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {  // hierarchy-id:controllers:path
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers(1, ',');  // ",cpu,cpuacct,": a controller is found with its commas
    controllers.append(line, first + 1, second - first - 1).push_back(',');
    const std::string path = line.substr(second + 1);
    if (line.compare(0, first, "0") == 0 && controllers == ",,") paths.unified = path;
    if (controllers.find(",cpu,") != std::string::npos) paths.cpu = path;
    if (controllers.find(",memory,") != std::string::npos) paths.memory = path;
  }
  return paths;
}

}  // namespace

CgroupLimits cgroup_limits(const std::string& given_root) {
  // the CLI tests lay out a container's files under a folder of their own
  const char* test_root = std::getenv("CNNBENCH_TEST_CGROUP_ROOT");
  const std::string root = !given_root.empty() || !test_root ? given_root : std::string(test_root);
  const CgroupPaths paths = process_cgroups(root);
  const std::string mount = root + "/sys/fs/cgroup";
  std::optional<double> cpus, room;
  if (paths.unified) {
    for (const std::string& dir : folders(mount, *paths.unified)) {
      if (const auto text = read_text(dir + "/cpu.max")) {  // "max 100000" or "quota period"
        std::istringstream in(*text);
        std::string quota;
        double period = 0;
        if (in >> quota >> period && quota != "max" && period > 0) {
          char* end = nullptr;
          const double microseconds = std::strtod(quota.c_str(), &end);
          if (*end == '\0' && microseconds > 0) keep_least(cpus, microseconds / period);
        }
      }
      const auto limit = read_number(dir + "/memory.max");  // "max" reads as no number
      const auto held = read_number(dir + "/memory.current");
      if (limit && held)
        keep_least(room, std::max(0.0, *limit - (*held - file_cache(dir + "/memory.stat", ""))));
    }
  }
  if (paths.cpu)
    for (const char* controller : {"/cpu", "/cpu,cpuacct"})
      for (const std::string& dir : folders(mount + controller, *paths.cpu)) {
        const auto quota = read_number(dir + "/cpu.cfs_quota_us"), period = read_number(dir + "/cpu.cfs_period_us");
        if (quota && period && *quota > 0 && *period > 0) keep_least(cpus, *quota / *period);
      }
  if (paths.memory)
    for (const std::string& dir : folders(mount + "/memory", *paths.memory)) {
      const auto limit = read_number(dir + "/memory.limit_in_bytes");
      const auto held = read_number(dir + "/memory.usage_in_bytes");
      if (limit && held && *limit < kNoLimitBytes)
        keep_least(room, std::max(0.0, *limit - (*held - file_cache(dir + "/memory.stat", "total_"))));
    }
  CgroupLimits limits;
  limits.cpus = cpus;
  if (room) limits.memory_room = static_cast<size_t>(*room);
  return limits;
}

// Rounded down: the input workers take their time from the same quota, and threads spinning at
// a barrier spend it; a quota of whole CPUs (the usual) is met exactly.
int threads_within_quota(double cpus, int ranks) {
  return std::max(1, static_cast<int>(std::floor(cpus / std::max(1, ranks) + 1e-9)));
}

}  // namespace cnnbench
