#include "harness/report/timeline_file.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "harness/report/output_paths.h"
#include "harness/report/result_files.h"

namespace cnnbench {

std::unique_ptr<Timeline> start_timeline(const Communicator& comm, const std::string& path) {
  if (path.empty()) return nullptr;
  std::string error;
  const std::string folder = std::filesystem::path(path).parent_path().string();
  try {
    if (comm.rank() == 0 && !folder.empty()) make_folders(folder);
  } catch (const std::exception& e) {
    error = std::string("--timeline: ") + e.what();
  }
  if (report_errors_together(error)) throw ErrorsReported{2};
  auto timeline = std::make_unique<Timeline>(comm.rank());
  timeline->align_clocks(comm);
  return timeline;
}

std::string timeline_line(const std::string& path, const Timeline& timeline) {
  const size_t dropped = timeline.dropped();
  return fmt::format("  timeline        {} ({} events on rank 0{})\n", path, timeline.size(),
                     dropped ? fmt::format("; the {} after those not recorded", dropped) : "");
}

bool write_timeline(const Communicator& comm, const Timeline& timeline, const std::string& path) {
  double origin = timeline.first_us();  // times from the first event of any rank: viewers start at 0
  comm.allreduce_min(&origin, 1);
  if (!std::isfinite(origin)) origin = 0;
  origin -= 1;  // the first event at 1 us: DevTools leaves ts 0 (the metadata's) out of a trace's bounds
  const std::vector<std::string> ranks = comm.gather_strings(timeline.events_json(origin));
  const std::vector<std::string> hosts = comm.gather_strings(comm.host());
  if (comm.rank() != 0) return false;
  std::string out = std::string(kTimelineStart) + fmt::format("{:.3f}", origin) + "},\"traceEvents\":[\n";
  bool first = true;
  auto add = [&](const std::string& event) {
    out += first ? "" : ",\n";
    out += event;
    first = false;
  };
  // metadata as Chrome writes it (cat "__metadata", ts 0: JS readers assume both), on the
  // process's first track (tid 0 means "none" to viewers, as pid 0 does)
  for (int r = 0; r < comm.size(); ++r) {
    const int pid = trace_pid(r), tid = trace_tid(Track::compute);
    add(fmt::format(
        R"j({{"name":"process_name","cat":"__metadata","ph":"M","ts":0,"pid":{},"tid":{},"args":{{"name":"rank {} ({})"}}}})j",
        pid, tid, r, hosts[r]));
    add(fmt::format(
        R"j({{"name":"process_sort_index","cat":"__metadata","ph":"M","ts":0,"pid":{},"tid":{},"args":{{"sort_index":{}}}}})j",
        pid, tid, r));
  }
  for (const std::string& events : ranks)
    if (!events.empty()) add(events);
  out += "\n]}\n";
  try {  // checked before the run too; a file may have appeared since: it is kept, the trace is not written
    check_replaceable_timeline(path, "--timeline");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnnbench: %s; the trace was not written\n", e.what());
    return false;
  }
  write_file_atomically(path, out);
  return true;
}

}  // namespace cnnbench
