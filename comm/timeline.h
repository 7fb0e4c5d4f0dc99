// comm/timeline.h — Timeline (--timeline=FILE, as HOROVOD_TIMELINE): what each rank did when,
// as spans and instants on named tracks (compute, communication, update, input, checkpoint,
// device, device communication), kept in memory during the run and written once at the end by
// rank 0 as a Chrome trace-event JSON (opens in Perfetto and chrome://tracing) with one process
// per rank (harness/report/timeline_file.h).
//
// Times are steady_clock shifted onto rank 0's clock by an offset measured at start (ping-pong
// over MPI, the round trip with the least delay), so skew between ranks shows. Recording an
// event takes a mutex and appends to a reserved vector; a run without --timeline has no
// Timeline and pays one null check per place that would record. A long run (a convergence run
// of many epochs) keeps its first max_events events and counts the rest as dropped, so memory
// stays bounded (about 100 bytes an event).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace cnnbench {

class Communicator;

// compute: the training thread's steps, phases, layers and evaluation; communication: the
// reducer's bucket allreduces; update: the optimizer; input: waits for the next batch;
// checkpoint: checkpoint writes; device: a GPU's compute stream (its phase times) and
// device_communication: its NCCL stream (each bucket's allreduce), both measured on the device's
// clock and placed on the host's by an event whose host time is known.
enum class Track { compute, communication, update, input, checkpoint, device, device_communication };
const char* track_name(Track t);
// Trace ids from 1: a viewer takes pid or tid 0 for "none" (Perfetto gives a tid 0 its pid, which
// put rank 1's compute on its communication track), so rank r is pid r + 1 and a track tid its
// enum value + 1.
inline int trace_pid(int rank) { return rank + 1; }
inline int trace_tid(Track t) { return static_cast<int>(t) + 1; }

// Numbers shown with an event (-1: not given).
struct TimelineArgs {
  int64_t step = -1, bucket = -1, bytes = -1, node = -1;
  double queued_us = -1;  // time a bucket waited between ready and its allreduce
};

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  static constexpr size_t kMaxEvents = size_t{1} << 20;

  explicit Timeline(int rank, size_t expected_events = 1 << 16, size_t max_events = kMaxEvents);

  void span(Track track, std::string name, Clock::time_point start, Clock::time_point end,
            const TimelineArgs& args = {});
  void instant(Track track, std::string name, Clock::time_point at, const TimelineArgs& args = {});

  // Collective: measures this rank's clock against rank 0's (rank 0: 0).
  void align_clocks(const Communicator& comm);

  // The earliest event's time (rank 0's clock, microseconds); infinity without events.
  double first_us() const;
  // This rank's events as trace-event JSON objects, comma-separated (no brackets), with times
  // counted from origin_us, after the names of the tracks it used (trace_pid, trace_tid).
  std::string events_json(double origin_us) const;
  size_t size() const;
  size_t dropped() const;  // events not kept: past max_events

 private:
  struct Event {
    Track track;
    char phase;  // 'X' span, 'I' instant (the letter every reader knows: DevTools and TracerBench skip 'i')
    std::string name;
    double start_us, duration_us;
    TimelineArgs args;
  };
  double micros(Clock::time_point t) const;

  bool keep();  // with mutex_ held: room for one more event?

  int rank_;
  size_t max_events_, dropped_ = 0;
  double offset_us_ = 0;
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

}  // namespace cnnbench
