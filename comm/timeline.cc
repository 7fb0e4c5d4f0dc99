#include "comm/timeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "comm/communicator.h"

namespace cnnbench {

const char* track_name(Track t) {
  switch (t) {
    case Track::compute: return "compute";
    case Track::communication: return "communication";
    case Track::update: return "update";
    case Track::input: return "input";
    case Track::checkpoint: return "checkpoint";
    case Track::device: return "device";
    case Track::device_communication: return "device communication";
  }
  return "?";
}

Timeline::Timeline(int rank, size_t expected_events, size_t max_events) : rank_(rank), max_events_(max_events) {
  events_.reserve(std::min(expected_events, max_events));
}

bool Timeline::keep() {
  if (events_.size() < max_events_) return true;
  ++dropped_;
  return false;
}

double Timeline::micros(Clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count() + offset_us_;
}

void Timeline::span(Track track, std::string name, Clock::time_point start, Clock::time_point end,
                    const TimelineArgs& args) {
  const double begin = micros(start), duration = std::chrono::duration<double, std::micro>(end - start).count();
  std::lock_guard<std::mutex> lock(mutex_);
  if (keep()) events_.push_back({track, 'X', std::move(name), begin, duration, args});
}

void Timeline::instant(Track track, std::string name, Clock::time_point at, const TimelineArgs& args) {
  const double when = micros(at);
  std::lock_guard<std::mutex> lock(mutex_);
  if (keep()) events_.push_back({track, 'I', std::move(name), when, 0, args});
}

void Timeline::align_clocks(const Communicator& comm) { offset_us_ = comm.clock_offset_to_rank0_sec() * 1e6; }

size_t Timeline::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

size_t Timeline::dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

namespace {

std::string escaped(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

double Timeline::first_us() const {
  std::lock_guard<std::mutex> lock(mutex_);
  double first = std::numeric_limits<double>::infinity();
  for (const Event& e : events_) first = std::min(first, e.start_us);
  return first;
}

std::string Timeline::events_json(double origin_us) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  out.reserve(events_.size() * 160);
  std::set<Track> used;
  for (const Event& e : events_) used.insert(e.track);
  for (const Track t : used)
    out += fmt::format(
        R"j({}{{"name":"thread_name","cat":"__metadata","ph":"M","ts":0,"pid":{},"tid":{},"args":{{"name":"{}"}}}})j",
        out.empty() ? "" : ",\n", trace_pid(rank_), trace_tid(t), track_name(t));
  // in start order, the longer of two that start together first: readers that nest slices in
  // file order (catapult, TracerBench) take the first as the parent; a span is recorded when it
  // ends, after the spans inside it
  std::vector<const Event*> ordered;
  ordered.reserve(events_.size());
  for (const Event& e : events_) ordered.push_back(&e);
  // compared as written, to the nanosecond
  const auto ns = [origin_us](double us) { return std::llround((us - origin_us) * 1000.0); };
  std::stable_sort(ordered.begin(), ordered.end(), [&](const Event* a, const Event* b) {
    const int64_t sa = ns(a->start_us), sb = ns(b->start_us);
    return sa < sb || (sa == sb && std::llround(a->duration_us * 1000.0) > std::llround(b->duration_us * 1000.0));
  });
  for (const Event* event : ordered) {
    const Event& e = *event;
    if (!out.empty()) out += ",\n";
    out += fmt::format(R"j({{"name":"{}","cat":"{}","ph":"{}","pid":{},"tid":{},"ts":{:.3f})j", escaped(e.name),
                       track_name(e.track), e.phase, trace_pid(rank_), trace_tid(e.track), e.start_us - origin_us);
    if (e.phase == 'X') out += fmt::format(R"j(,"dur":{:.3f})j", e.duration_us);
    if (e.phase == 'I') out += R"(,"s":"t")";
    std::string args;
    auto add = [&](const char* key, int64_t v) {
      if (v >= 0) args += fmt::format(R"j({}"{}":{})j", args.empty() ? "" : ",", key, v);
    };
    add("step", e.args.step);
    add("bucket", e.args.bucket);
    add("bytes", e.args.bytes);
    add("node", e.args.node);
    if (e.args.queued_us >= 0)
      args += fmt::format(R"j({}"queued_us":{:.3f})j", args.empty() ? "" : ",", e.args.queued_us);
    if (!args.empty()) out += R"(,"args":{)" + args + "}";
    out += "}";
  }
  return out;
}

}  // namespace cnnbench
