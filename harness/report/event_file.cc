#include "harness/report/event_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "comm/communicator.h"
#include "harness/data/tfrecord.h"
#include "proto/event.pb.h"

namespace cnnbench {
namespace {

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

EventWriter::EventWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot make the folder (" + ec.message() + ")");
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  // a name of its own: two runs in one second on one host (a sweep's points) never share a file
  const std::string name = dir + "/events.out.tfevents." + std::to_string(static_cast<long long>(std::time(nullptr))) +
                           "." + host + "." + std::to_string(::getpid());
  for (int n = 0;; ++n) {
    path_ = n == 0 ? name : name + "." + std::to_string(n);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      break;
    }
    if (errno != EEXIST || n == 1000) throw std::runtime_error(path_ + ": cannot make the file (" + std::strerror(errno) + ")");
  }
  writer_ = std::make_unique<TfRecordWriter>(path_, /*atomic=*/false);
  tf::Event version;
  version.set_wall_time(wall_time());
  version.set_file_version("brain.Event:2");
  write_event(version.SerializeAsString());
  flush();
  flusher_ = std::thread([this] { flush_every_2_seconds(); });
}

EventWriter::~EventWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  try {
    if (writer_) writer_->close();
  } catch (...) {  // a full disk at the end: the events written so far stay
  }
}

void EventWriter::flush_every_2_seconds() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::seconds(2), [this] { return stop_; })) {
    if (!unflushed_ || !flush_error_.empty()) continue;
    try {
      writer_->flush();
      unflushed_ = false;
    } catch (const std::exception& e) {
      flush_error_ = e.what();
    }
  }
}

void EventWriter::write_event(const std::string& serialized) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!flush_error_.empty()) throw std::runtime_error(flush_error_);
  writer_->write(serialized);
  unflushed_ = true;
  ++events_;
}

void write_step_scalars(EventWriter& file, int64_t step, const StepRecord& r, int64_t global_batch) {
  const double at = r.ended_at;
  file.scalar("loss", step, r.loss, at);
  file.scalar("learning_rate", step, r.learning_rate, at);
  file.scalar("images_per_sec", step, r.time_sec > 0 ? static_cast<double>(global_batch) / r.time_sec : 0, at);
  file.scalar("allreduce_exposed_sec", step, r.exposed_sec, at);
  if (r.loss_scale > 0) file.scalar("loss_scale", step, r.loss_scale, at);
}

void EventWriter::scalar(const std::string& tag, int64_t step, double value, double at) {
  tf::Event e;
  e.set_wall_time(at > 0 ? at : wall_time());
  e.set_step(step);
  tf::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  write_event(e.SerializeAsString());
}

void EventWriter::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  writer_->flush();
  unflushed_ = false;
}

std::unique_ptr<EventWriter> open_event_writer(const Communicator& comm, const std::string& dir, int64_t verbosity) {
  if (dir.empty() || verbosity < 1) return nullptr;
  std::unique_ptr<EventWriter> writer;
  std::string error;
  try {
    if (comm.rank() == 0) writer = std::make_unique<EventWriter>(dir);
  } catch (const std::exception& e) {
    error = std::string("--summary_dir: ") + e.what();
  }
  if (report_errors_together(error)) throw ErrorsReported{2};
  return writer;
}

}  // namespace cnnbench
