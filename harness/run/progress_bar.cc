#include "harness/run/progress_bar.h"

#include <unistd.h>

#include "comm/communicator.h"

namespace cnnbench {

bool draws_progress_bar(const Config& config, bool leader) {
  if (!leader || config.progress_bar == "false" || !isatty(STDOUT_FILENO)) return false;
  return config.progress_bar == "true" || !started_by_launcher();
}

}  // namespace cnnbench
