// comm/timeline.h — Timeline (--timeline=FILE, as HOROVOD_TIMELINE): what each rank did when,
// as spans and instants on named tracks (compute, communication, update), kept in
// memory during the run and written once at the end by rank 0 as a Chrome trace-event JSON
// (opens in Perfetto and chrome://tracing) with one process per rank
// (harness/report/timeline_file.h).
//
// Times are steady_clock shifted onto rank 0's clock by an offset measured at start (ping-pong
// over MPI, the round trip with the least delay), so skew between ranks shows. Recording an
// event takes a mutex and appends to a reserved vector; a run without --timeline has no
// Timeline and pays one null check per place that would record.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace cnnbench {

class Communicator;

enum class Track { compute, communication, update };
const char* track_name(Track t);

// Numbers shown with an event (-1: not given).
struct TimelineArgs {
  int64_t step = -1, bucket = -1, bytes = -1, node = -1;
  double queued_us = -1;  // time a bucket waited between ready and its allreduce
};

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Timeline(int rank, size_t expected_events = 1 << 16);

  void span(Track track, std::string name, Clock::time_point start, Clock::time_point end,
            const TimelineArgs& args = {});
  void instant(Track track, std::string name, Clock::time_point at, const TimelineArgs& args = {});

  // Collective: measures this rank's clock against rank 0's (rank 0: 0).
  void align_clocks(const Communicator& comm);

  // The earliest event's time (rank 0's clock, microseconds); infinity without events.
  double first_us() const;
  // This rank's events as trace-event JSON objects, comma-separated (no brackets), with times
  // counted from origin_us.
  std::string events_json(double origin_us) const;
  size_t size() const;

 private:
  struct Event {
    Track track;
    char phase;  // 'X' span, 'i' instant
    std::string name;
    double start_us, duration_us;
    TimelineArgs args;
  };
  double micros(Clock::time_point t) const;

  int rank_;
  double offset_us_ = 0;
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

}  // namespace cnnbench
