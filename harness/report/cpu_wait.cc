#include "harness/report/cpu_wait.h"

#include <dirent.h>

#include <cstdio>
#include <string>

namespace cnnbench {

double runqueue_wait_sec() {
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return -1;
  double total_ns = 0;
  bool any = false;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    // schedstat: time on a CPU, time waiting on a run queue, time slices (ns, ns, count)
    const std::string path = std::string("/proc/self/task/") + entry->d_name + "/schedstat";
    if (FILE* f = std::fopen(path.c_str(), "r")) {
      unsigned long long on_cpu = 0, waiting = 0;
      if (std::fscanf(f, "%llu %llu", &on_cpu, &waiting) == 2) {
        total_ns += static_cast<double>(waiting);
        any = true;
      }
      std::fclose(f);
    }
  }
  closedir(tasks);
  return any ? total_ns / 1e9 : -1;
}

}  // namespace cnnbench
