// harness/report/timeline_file.h — the --timeline file: every rank's Timeline gathered and
// written by rank 0 as one Chrome trace-event JSON ({"traceEvents": [...]}), one process per rank
// named "rank R (host)", one thread per track, times in microseconds from the first event.
#pragma once

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/timeline.h"

namespace cnnbench {

// Collective, at the start of a run: null when path is empty; otherwise the folder of `path` is
// made (when it cannot be, every rank throws ErrorsReported now rather than after the run) and the
// timeline's clock aligned to rank 0's.
std::unique_ptr<Timeline> start_timeline(const Communicator& comm, const std::string& path);

// The closing line: "  timeline        FILE (N events on rank 0)", with the events dropped past
// the cap when there were any.
std::string timeline_line(const std::string& path, const Timeline& timeline);

// Collective. Rank 0 writes the trace and returns true; where a file that is not a cnnbench trace
// appeared at `path` since the run began, it says so on stderr, keeps it, and returns false.
// Throws std::runtime_error on rank 0 when the file cannot be written (an old file at `path` is
// left as it was).
bool write_timeline(const Communicator& comm, const Timeline& timeline, const std::string& path);

}  // namespace cnnbench
