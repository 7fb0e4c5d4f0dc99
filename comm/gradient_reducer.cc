#include "comm/gradient_reducer.h"

#include <algorithm>
#include <chrono>
#include <omp.h>
#include <stdexcept>

#include "comm/wire_cast.h"

namespace cnnbench {

GradientReducer::GradientReducer(Communicator& comm, float* gradients, const std::vector<TensorExtent>& tensors,
                                 const BucketSizes& bucket_sizes, WireType wire, const PowerSgdSettings* powersgd)
    : comm_(comm), gradients_(gradients), buckets_(plan_buckets(tensors, bucket_sizes)), wire_(wire) {
  if (powersgd && wire != WireType::f32)
    throw std::invalid_argument("PowerSGD sends fp32 factors: it does not combine with fp16 or bf16 on the wire");
  if (powersgd) powersgd_ = std::make_unique<PowerSgd>(buckets_, tensors, *powersgd);
  bucket_of_tensor_.resize(tensors.size());
  size_t largest = 0;
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
    for (int t = buckets_[b].first_tensor; t <= buckets_[b].last_tensor; ++t) bucket_of_tensor_[t] = b;
    largest = std::max(largest, buckets_[b].count);
    remaining_.push_back(buckets_[b].last_tensor - buckets_[b].first_tensor + 1);
  }
  reduced_.assign(buckets_.size(), 0);
  ready_at_.resize(buckets_.size());
  started_at_.resize(buckets_.size());
  ended_at_.resize(buckets_.size());
  if (wire_ != WireType::f32) wire_buffer_.resize(largest);
  votes_.resize(buckets_.size());
  thread_ = std::thread([this] { communicate(); });
}

GradientReducer::~GradientReducer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_ready_.notify_all();
  thread_.join();
}

void GradientReducer::tensor_ready(int index) {
  const int b = bucket_of_tensor_.at(index);
  bool complete;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (remaining_[b] <= 0) throw std::logic_error("gradient tensor reported twice in one step");
    complete = --remaining_[b] == 0;
    if (complete) {
      if (timeline_) ready_at_[b] = std::chrono::steady_clock::now();
      queue_.push_back(b);
    }
  }
  if (complete && timeline_)
    timeline_->instant(Track::compute, "gradients ready", ready_at_[b], {.bucket = b});
  if (complete) work_ready_.notify_one();
}

void GradientReducer::communicate() {
  omp_set_num_threads(1);  // PowerSGD's thin products: one thread beside the compute threads
  for (;;) {
    int b = -1;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      if (!forward_priority_) {  // backward order: the oldest, the same bucket on every rank
        b = queue_.front();
        queue_.pop_front();
      }
    }
    const auto start = std::chrono::steady_clock::now();
    if (b < 0) {
      try {
        b = agree_on_next_bucket();
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
      }
      if (b < 0) {  // the ranks could not agree: every wait ends with the error
        bucket_done_.notify_all();
        return;
      }
    }
    size_t sent = buckets_[b].count;  // elements
    try {
      const Bucket& bucket = buckets_[b];
      float* data = gradients_ + bucket.offset;
      if (powersgd_) {
        sent = powersgd_->reduce(comm_, gradients_, b);
      } else if (wire_ == WireType::f32) {
        comm_.allreduce_sum(data, bucket.count, WireType::f32);
      } else {
        cast_to_wire(data, wire_buffer_.data(), bucket.count, wire_);
        comm_.allreduce_sum(wire_buffer_.data(), bucket.count, wire_);
        cast_from_wire(wire_buffer_.data(), data, bucket.count, wire_, 1.0f);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
    }
    const auto end = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(end - start).count();
    if (timeline_) {
      TimelineArgs args{.bucket = b, .bytes = static_cast<int64_t>(sent * wire_type_size(wire_))};
      args.queued_us = std::chrono::duration<double, std::micro>(start - ready_at_[b]).count();
      timeline_->span(Track::communication, "allreduce", start, end, args);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      comm_sec_ += seconds;
      bytes_sent_ += static_cast<int64_t>(sent * (powersgd_ ? sizeof(float) : wire_type_size(wire_)) +
                                          (forward_priority_ ? votes_.size() * sizeof(float) : 0));
      started_at_[b] = start;
      ended_at_[b] = end;
      reduced_[b] = 1;
    }
    bucket_done_.notify_all();
  }
}

// Which queued bucket the ranks send next is timing: each rank's queue holds the buckets its
// own backward has finished. So the ranks vote (a small sum over the data plane, as Horovod's
// coordinator asks which tensors are ready everywhere) and take the one ready on every rank
// that the next forward needs first. Each rank's ready buckets are a prefix of backward order
// less the ones already sent (the same on every rank), so the one with the fewest finished has
// an unsent bucket that all others have finished too: there always is one to agree on.
int GradientReducer::agree_on_next_bucket() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::fill(votes_.begin(), votes_.end(), 0.0f);
    for (int q : queue_) votes_[q] = 1.0f;
  }
  comm_.allreduce_sum(votes_.data(), votes_.size(), WireType::f32);
  std::lock_guard<std::mutex> lock(mutex_);
  for (int b = static_cast<int>(votes_.size()) - 1; b >= 0; --b)
    if (votes_[b] == static_cast<float>(comm_.size())) {
      const auto queued = std::find(queue_.begin(), queue_.end(), b);
      if (queued == queue_.end()) break;
      queue_.erase(queued);
      return b;
    }
  throw std::logic_error("GradientReducer: the ranks found no bucket ready on all of them");
}

void GradientReducer::restore_state(const std::string& state) {
  if (!powersgd_) throw std::logic_error("GradientReducer: no PowerSGD state to restore");
  powersgd_->restore(state);
}

size_t GradientReducer::sent_bytes_per_step() const {
  // forward priority: before each bucket, the ranks' vote (a float per bucket)
  const size_t votes = forward_priority_ ? buckets_.size() * votes_.size() * sizeof(float) : 0;
  if (powersgd_) return powersgd_->wire_elements() * sizeof(float) + votes;
  return gradient_elements() * wire_type_size(wire_) + votes;
}

ReducerStepStats GradientReducer::wait_for_buckets(const std::function<void(const Bucket&)>& on_reduced) {
  ReducerStepStats stats;
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
    stats.exposed_sec += wait_for_bucket(b);
    if (on_reduced) on_reduced(buckets_[b]);
  }
  stats.comm_sec = end_step(std::chrono::steady_clock::now()).comm_sec;
  return stats;
}

double GradientReducer::wait_for_bucket(int b) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  bucket_done_.wait(lock, [&] { return reduced_.at(b) || error_; });
  if (error_) std::rethrow_exception(error_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

ReducerStepStats GradientReducer::end_step(std::chrono::steady_clock::time_point since) {
  ReducerStepStats stats;
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::find(reduced_.begin(), reduced_.end(), 0) != reduced_.end())
    throw std::logic_error("GradientReducer: the step ended before every bucket was reduced");
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b)
    stats.comm_after_sec += std::max(0.0, std::chrono::duration<double>(ended_at_[b] - std::max(started_at_[b], since)).count());
  stats.comm_sec = comm_sec_;
  comm_sec_ = 0;
  std::fill(reduced_.begin(), reduced_.end(), 0);
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b)
    remaining_[b] = buckets_[b].last_tensor - buckets_[b].first_tensor + 1;
  return stats;
}

}  // namespace cnnbench
