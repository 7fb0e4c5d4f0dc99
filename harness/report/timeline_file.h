// harness/report/timeline_file.h — the --timeline file: every rank's Timeline gathered and
// written by rank 0 as one Chrome trace-event JSON ({"traceEvents": [...]}), one process per rank
// named "rank R (host)", one thread per track, times in microseconds from the first event.
#pragma once

#include <string>

#include "comm/communicator.h"
#include "comm/timeline.h"

namespace cnnbench {

// Collective. Throws std::runtime_error on rank 0 when the file cannot be written (an old file
// at `path` is left as it was).
void write_timeline(const Communicator& comm, const Timeline& timeline, const std::string& path);

}  // namespace cnnbench
