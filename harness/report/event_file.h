// harness/report/event_file.h — TensorBoard event files (--summary_dir): DIR/events.out.tfevents.
// <seconds>.<host>.<pid>, a file of its own for every run (made exclusively; .1, .2 ... after it
// should one exist), TFRecord-framed Event protos (proto/event.proto): a file-version event first,
// then scalar summaries by step. A thread flushes what was written every 2 seconds, so that
// TensorBoard shows a running job however long its steps; rank 0 writes, the other ranks hold no
// writer.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "harness/report/step_record.h"

namespace cnnbench {

class TfRecordWriter;

class EventWriter {
 public:
  explicit EventWriter(const std::string& dir);  // throws std::runtime_error naming the file
  ~EventWriter();
  // wall_time: seconds since the Unix epoch the value belongs to (0: now)
  void scalar(const std::string& tag, int64_t step, double value, double wall_time = 0);
  void flush();
  const std::string& path() const { return path_; }
  int64_t events() const { return events_; }

 private:
  void write_event(const std::string& serialized);
  void flush_every_2_seconds();  // the flusher thread

  std::string path_;
  std::unique_ptr<TfRecordWriter> writer_;
  int64_t events_ = 0;
  std::mutex mutex_;  // writer_, unflushed_, flush_error_, stop_: the run's thread and the flusher
  std::condition_variable wake_;
  bool unflushed_ = false, stop_ = false;
  std::string flush_error_;  // the flusher's failure, thrown by the next write
  std::thread flusher_;
};

// The scalars of one training step, under the same tags in every mode: loss, learning_rate,
// images_per_sec (global batch / the step's time), allreduce_exposed_sec, and loss_scale where
// loss scaling is on (the step's record has one), stamped with the step's end where the record
// keeps it (a benchmark writes its steps at the log's display points, not as each ends).
void write_step_scalars(EventWriter& file, int64_t step, const StepRecord& r, int64_t global_batch);

class Communicator;

// Collective: the writer a run asks for, on rank 0 with --summary_dir and --summary_verbosity >= 1
// (none elsewhere). A folder or file that cannot be made is a set-up error (exit 2, every rank).
std::unique_ptr<EventWriter> open_event_writer(const Communicator& comm, const std::string& dir, int64_t verbosity);

}  // namespace cnnbench
