// harness/run/progress_bar.h — whether a run on real data draws its progress bar (`\r` lines):
// only where a person watches. --progress_bar=auto draws it on rank 0 when its output is a
// terminal and no launcher started it (mpiexec gives each rank a pty even when the job's output
// goes to a file, so under a launcher a rank cannot tell); true draws it on any terminal, a
// launcher's pty included; false never. Output to a file or a pipe never gets one.
#pragma once

#include "harness/cli/config.h"

namespace cnnbench {

bool draws_progress_bar(const Config& config, bool leader);

}  // namespace cnnbench
