#include "harness/data/tfrecord_stream.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "harness/data/input_pipeline.h"
#include "harness/data/tfrecord.h"

namespace cnnbench {
namespace {

constexpr size_t kRecordsPerQueue = 64;  // per reader, read ahead of the batcher

}  // namespace

std::vector<int32_t> rank_files(int64_t count, int rank, int ranks, uint64_t seed, int64_t pass, bool shuffled) {
  std::vector<int64_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  if (shuffled) order = epoch_order(count, seed ^ 0x5eed5eedull, pass);
  std::vector<int32_t> mine;
  if (count < ranks) {
    for (int64_t f : order) mine.push_back(static_cast<int32_t>(f));
  } else {
    for (int64_t f : rank_shard(order, rank, ranks)) mine.push_back(static_cast<int32_t>(f));
  }
  return mine;
}

RecordStream::RecordStream(std::vector<std::string> files, const RecordStreamOptions& options)
    : files_(std::move(files)), options_(options) {
  const int64_t count = static_cast<int64_t>(files_.size());
  // each reader needs a file in every pass; with fewer shards than ranks, one reader keeps the
  // pass's record count that picks this rank's records
  const int64_t per_rank = count < options_.ranks ? 1 : count / options_.ranks;
  readers_ = static_cast<int>(std::clamp<int64_t>(options_.readers, 1, options_.training ? per_rank : 1));
  queues_.resize(readers_);
  for (int r = 0; r < readers_; ++r) threads_.emplace_back([this, r] { read(r); });
  threads_.emplace_back([this] { batch(); });
}

RecordStream::~RecordStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void RecordStream::fail(std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_) error_ = error;
  changed_.notify_all();
}

void RecordStream::read(int reader) {
  try {
    const int64_t count = static_cast<int64_t>(files_.size());
    const bool interleaved = count < options_.ranks;  // every rank reads every shard
    auto push = [&](StreamRecord&& record) {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || queues_[reader].records.size() < kRecordsPerQueue; });
      if (stop_) return false;
      queues_[reader].records.push_back(std::move(record));
      changed_.notify_all();
      return true;
    };
    for (int64_t pass = options_.first_pass;; ++pass) {
      const std::vector<int32_t> mine =
          rank_files(count, options_.rank, options_.ranks, options_.seed, pass, options_.training);
      int64_t position = 0;  // of the record in the pass (interleaved: one reader)
      for (size_t i = reader; i < mine.size(); i += readers_) {
        TfRecordReader in(files_[mine[i]]);
        StreamRecord record;
        record.file = mine[i];
        while (in.next(record.bytes)) {
          if (interleaved && position++ % options_.ranks != options_.rank) continue;
          record.offset = in.record_offset();
          if (!push(std::move(record))) return;
        }
      }
      StreamRecord end_of_pass;
      end_of_pass.file = -1;
      if (!push(std::move(end_of_pass))) return;
      if (!options_.training) break;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    queues_[reader].ended = true;
    changed_.notify_all();
  } catch (...) {
    fail(std::current_exception());
  }
}

bool RecordStream::pop(int reader, StreamRecord& out) {
  std::unique_lock<std::mutex> lock(mutex_);
  Queue& q = queues_[reader];
  changed_.wait(lock, [&] { return stop_ || error_ || !q.records.empty() || q.ended; });
  if (stop_ || error_ || q.records.empty()) return false;
  out = std::move(q.records.front());
  q.records.pop_front();
  changed_.notify_all();
  return true;
}

void RecordStream::batch() {
  std::mt19937_64 rng(options_.seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(options_.first_pass) + 99);
  const size_t buffer_size = options_.training ? static_cast<size_t>(std::max<int64_t>(1, options_.shuffle_buffer)) : 0;
  std::vector<StreamRecord> buffer, current;
  auto publish = [&] {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return stop_ || static_cast<int>(ready_.size()) < options_.batches_ahead; });
    if (stop_) return false;
    ready_[made_++] = std::move(current);
    current.clear();
    changed_.notify_all();
    return true;
  };
  auto emit = [&](StreamRecord&& record) {
    current.push_back(std::move(record));
    return static_cast<int64_t>(current.size()) < options_.batch_size || publish();
  };
  for (;;) {  // one pass: the readers in turn until each has ended its pass, then the buffer
    std::vector<bool> in_pass(readers_, true);
    for (int reader = 0, live = readers_; live > 0; reader = (reader + 1) % readers_) {
      if (!in_pass[reader]) continue;
      StreamRecord record;
      if (!pop(reader, record)) return;  // stopped, or a reader failed (take() rethrows its error)
      if (record.file < 0) {  // this reader's end of the pass: the others finish theirs first
        in_pass[reader] = false;
        --live;
        continue;
      }
      if (buffer_size > 0) {
        if (buffer.size() < buffer_size) {
          buffer.push_back(std::move(record));
          continue;
        }
        std::swap(buffer[rng() % buffer_size], record);  // `record` is now the one emitted
      }
      if (!emit(std::move(record))) return;
    }
    // the pass's end, as tf.data's shuffle ends its input: the buffered records in random order
    while (!buffer.empty()) {
      std::swap(buffer[rng() % buffer.size()], buffer.back());
      StreamRecord record = std::move(buffer.back());
      buffer.pop_back();
      if (!emit(std::move(record))) return;
    }
    if (!options_.training) break;
  }
  // only evaluation ends: its last, short batch, then the end
  if (!current.empty() && !publish()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ended_ = true;
  changed_.notify_all();
}

bool RecordStream::take(int64_t k, std::vector<StreamRecord>& out) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return interrupted_ || error_ || ready_.count(k) || (ended_ && k >= made_); });
  if (ready_.count(k)) {
    out = std::move(ready_[k]);
    ready_.erase(k);
    changed_.notify_all();
    return true;
  }
  if (error_) std::rethrow_exception(error_);
  if (interrupted_) return false;
  out.clear();  // past the end of the evaluation pass
  return true;
}

void RecordStream::interrupt() {
  std::lock_guard<std::mutex> lock(mutex_);
  interrupted_ = true;
  changed_.notify_all();
}

void RecordStream::resume() {
  std::lock_guard<std::mutex> lock(mutex_);
  interrupted_ = false;
}

}  // namespace cnnbench
