#include "harness/report/cpu_wait.h"

#include <dirent.h>

#include <cstdio>
#include <string>

namespace cnnbench {

namespace {

// schedstat: time on a CPU, time waiting on a run queue, time slices (ns, ns, count)
bool add_wait(const std::string& task, double& total_ns) {
  FILE* f = std::fopen(("/proc/self/task/" + task + "/schedstat").c_str(), "r");
  if (!f) return false;
  unsigned long long on_cpu = 0, waiting = 0;
  const bool read = std::fscanf(f, "%llu %llu", &on_cpu, &waiting) == 2;
  std::fclose(f);
  if (read) total_ns += static_cast<double>(waiting);
  return read;
}

}  // namespace

double runqueue_wait_sec(const std::vector<int>& thread_ids) {
  double total_ns = 0;
  bool any = false;
  for (int id : thread_ids) any = add_wait(std::to_string(id), total_ns) || any;
  if (thread_ids.empty()) {
    DIR* tasks = opendir("/proc/self/task");
    if (!tasks) return -1;
    while (const dirent* entry = readdir(tasks))
      if (entry->d_name[0] != '.') any = add_wait(entry->d_name, total_ns) || any;
    closedir(tasks);
  }
  return any ? total_ns / 1e9 : -1;
}

}  // namespace cnnbench
