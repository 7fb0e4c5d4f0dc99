#include "comm/gradient_reducer.h"

#include <algorithm>
#include <chrono>
#include <omp.h>
#include <stdexcept>

#include "comm/wire_cast.h"

namespace cnnbench {

GradientReducer::GradientReducer(Communicator& comm, float* gradients, const std::vector<TensorExtent>& tensors,
                                 size_t fusion_threshold_bytes, WireType wire, const PowerSgdSettings* powersgd)
    : comm_(comm), gradients_(gradients), buckets_(plan_buckets(tensors, fusion_threshold_bytes)), wire_(wire) {
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
  if (wire_ != WireType::f32) wire_buffer_.resize(largest);
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
    int b;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      b = queue_.front();
      queue_.pop_front();
    }
    const auto start = std::chrono::steady_clock::now();
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
      reduced_[b] = 1;
    }
    bucket_done_.notify_all();
  }
}

size_t GradientReducer::sent_bytes_per_step() const {
  if (powersgd_) return powersgd_->wire_elements() * sizeof(float);
  return gradient_elements() * wire_type_size(wire_);
}

ReducerStepStats GradientReducer::wait_for_buckets(const std::function<void(const Bucket&)>& on_reduced) {
  ReducerStepStats stats;
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b) {
    const auto start = std::chrono::steady_clock::now();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      bucket_done_.wait(lock, [&] { return reduced_[b] || error_; });
      if (error_) std::rethrow_exception(error_);
    }
    stats.exposed_sec += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (on_reduced) on_reduced(buckets_[b]);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  stats.comm_sec = comm_sec_;
  comm_sec_ = 0;
  std::fill(reduced_.begin(), reduced_.end(), 0);
  for (int b = 0; b < static_cast<int>(buckets_.size()); ++b)
    remaining_[b] = buckets_[b].last_tensor - buckets_[b].first_tensor + 1;
  return stats;
}

}  // namespace cnnbench
