#include "harness/run/progress_bar.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace cnnbench {

bool started_by_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_ID"})
    if (std::getenv(name)) return true;
  // a PMIx launcher's rank, but not Open MPI's singleton, whose MPI_Init sets PMIX_RANK itself
  const char* ess = std::getenv("OMPI_MCA_ess");
  return std::getenv("PMIX_RANK") && !(ess && std::string(ess) == "singleton");
}

bool draws_progress_bar(const Config& config, bool leader) {
  if (!leader || config.progress_bar == "false" || !isatty(STDOUT_FILENO)) return false;
  return config.progress_bar == "true" || !started_by_launcher();
}

}  // namespace cnnbench
