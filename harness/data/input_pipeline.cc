#include "harness/data/input_pipeline.h"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace cnnbench {

std::vector<int64_t> epoch_order(int64_t count, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(epoch) * 7919ull + 17);
  for (int64_t i = count - 1; i > 0; --i) std::swap(order[i], order[static_cast<int64_t>(rng() % (i + 1))]);
  return order;
}

std::vector<int64_t> rank_shard(const std::vector<int64_t>& order, int rank, int ranks) {
  std::vector<int64_t> shard;
  for (size_t i = rank; i < order.size(); i += ranks) shard.push_back(order[i]);
  return shard;
}

BatchPipeline::BatchPipeline(int64_t batch_size, int64_t example_floats, int rank, uint64_t seed, int workers,
                             int depth)
    : batch_size_(batch_size),
      example_floats_(example_floats),
      rank_(rank),
      seed_(seed),
      workers_count_(std::max(1, workers)),
      depth_(std::max(depth, workers_count_ + 2)) {
  images_.assign(depth_, std::vector<float>(batch_size * example_floats_));
  labels_.assign(depth_, std::vector<int32_t>(batch_size));
  valid_.assign(depth_, 0);
  ready_.assign(depth_, -1);
}

double BatchPipeline::images_per_sec_capacity() const {
  return busy_sec_ > 0 ? static_cast<double>(made_) / busy_sec_ * workers_count_ : 0;
}

void BatchPipeline::reset_capacity() {
  std::lock_guard<std::mutex> lock(mutex_);
  busy_sec_ = 0;
  made_ = 0;
}

void BatchPipeline::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  interrupt_fills();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  stop_ = false;
}

void BatchPipeline::start_workers(int64_t epoch) {
  epoch_ = epoch;
  const int64_t first = std::clamp<int64_t>(first_batch_, 0, steps_);
  first_batch_ = 0;
  consumed_ = first;
  std::fill(ready_.begin(), ready_.end(), -1);
  for (int w = 0; w < workers_count_; ++w) workers_.emplace_back([this, w, first] { produce(w, first); });
}

void BatchPipeline::produce(int worker, int64_t first) {
  for (int64_t b = first + worker; b < steps_; b += workers_count_) {
    const int s = slot(b);
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // the slot is free once its previous batch (b - depth_) is done with: the consumer has
      // asked for the batch after it
      changed_.wait(lock, [&] { return stop_ || consumed_ >= b - depth_ + 2; });
      if (stop_) return;
    }
    std::mt19937_64 rng(seed_ ^ (static_cast<uint64_t>(epoch_) << 40) ^ (static_cast<uint64_t>(rank_) << 24) ^
                        static_cast<uint64_t>(b) * 0x9e3779b97f4a7c15ull);
    int64_t valid = 0;
    double waited = 0;
    const auto start = std::chrono::steady_clock::now();
    try {
      valid = fill_batch(b, rng, images_[s].data(), labels_[s].data(), waited);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    if (valid < 0) return;  // interrupted: the pipeline is stopping
    const double busy = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - waited;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      valid_[s] = valid;
      ready_[s] = b;
      busy_sec_ += busy;
      made_ += batch_size_;
    }
    changed_.notify_all();
  }
}

const float* BatchPipeline::next_images() {
  const int64_t b = consumed_;
  const int s = slot(b);
  last_wait_ = {};
  {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto ready = [&] { return ready_[s] == b || error_ != nullptr; };
    if (!ready()) {  // a stall only where the batch was not there yet: the wait, not the lock
      last_wait_.start = std::chrono::steady_clock::now();
      changed_.wait(lock, ready);
      last_wait_.end = std::chrono::steady_clock::now();
    }
    if (ready_[s] != b) std::rethrow_exception(error_);
  }
  stall_sec_ += std::chrono::duration<double>(last_wait_.end - last_wait_.start).count();
  // the slot stays ours until the next call: consumed_ moves on then
  {
    std::lock_guard<std::mutex> lock(mutex_);
    consumed_ = b + 1;
  }
  changed_.notify_all();
  return images_[s].data();
}

InputPipeline::InputPipeline(const ExampleSource& source, int64_t batch_size, int rank, int ranks, uint64_t seed,
                             bool training, int workers, int depth)
    : BatchPipeline(batch_size, source.example_floats(), rank, seed, workers, depth),
      source_(source),
      ranks_(ranks),
      training_(training) {
  // training: every rank steps the same number of times (shards differ by at most one image)
  if (training) steps_ = source.count() / ranks / batch_size;
}

void InputPipeline::start_epoch(int64_t epoch) {
  stop_workers();
  if (training_) {
    shard_ = rank_shard(epoch_order(source_.count(), seed_, epoch), rank_, ranks_);
  } else {
    std::vector<int64_t> in_order(source_.count());
    std::iota(in_order.begin(), in_order.end(), 0);
    shard_ = rank_shard(in_order, rank_, ranks_);
    steps_ = (static_cast<int64_t>(shard_.size()) + batch_size_ - 1) / batch_size_;  // no collective per step
  }
  start_workers(epoch);
}

int64_t InputPipeline::fill_batch(int64_t b, std::mt19937_64& rng, float* images, int32_t* labels, double&) {
  int64_t valid = 0;
  for (int64_t i = 0; i < batch_size_; ++i) {
    const int64_t position = b * batch_size_ + i;
    // evaluation pads its last batch by repeating the shard's first image; it is not counted
    const int64_t index = position < static_cast<int64_t>(shard_.size()) ? shard_[position] : shard_[0];
    valid += position < static_cast<int64_t>(shard_.size());
    source_.make(index, rng, images + i * example_floats_);
    labels[i] = source_.label(index);
  }
  return valid;
}

}  // namespace cnnbench
