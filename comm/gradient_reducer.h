// comm/gradient_reducer.h — GradientReducer: averages gradients across ranks while backward
// is still running. The compute thread reports each tensor as backward finishes it
// (tensor_ready, through the Plan's hook); when a bucket is complete a communication thread
// allreduces it in place (casting to fp16/bf16 and back when compressing). After backward, the
// caller takes the reduced buckets one by one (wait_for_buckets), so the optimizer can update
// bucket k while later buckets are still on the wire. Sums become averages because the loss
// gradient is pre-scaled by 1/ranks. With PowerSGD settings, buckets go through the low-rank
// factors instead (comm/powersgd.h), on the same thread. Buckets go in backward order, or with
// forward priority (--overlap_forward) in the order the ranks agree on bucket by bucket.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "comm/bucket_plan.h"
#include "comm/communicator.h"
#include "comm/gradient_exchange.h"
#include "comm/powersgd.h"

namespace cnnbench {

class GradientReducer final : public GradientExchange {
 public:
  GradientReducer(Communicator& comm, float* gradients, const std::vector<TensorExtent>& tensors,
                  const BucketSizes& bucket_sizes, WireType wire, const PowerSgdSettings* powersgd = nullptr);
  ~GradientReducer() override;
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Compute thread: tensor `index` (into the extents given at construction) is final.
  void tensor_ready(int index) override;
  // Compute thread, after backward: calls on_reduced(bucket) for every bucket in order as soon
  // as it is reduced, then readies the reducer for the next step. Rethrows a communication error.
  ReducerStepStats wait_for_buckets(const std::function<void(const Bucket&)>& on_reduced) override;
  double wait_for_bucket(int bucket) override;
  ReducerStepStats end_step(std::chrono::steady_clock::time_point since) override;
  void set_forward_priority(bool on) override {
    std::lock_guard<std::mutex> lock(mutex_);
    forward_priority_ = on;
  }

  const std::vector<Bucket>& buckets() const override { return buckets_; }
  const PowerSgd* powersgd() const { return powersgd_.get(); }
  // Between steps only (no bucket on the wire): the communication thread owns it meanwhile.
  std::string state() const override { return powersgd_ ? powersgd_->state() : std::string(); }
  void restore_state(const std::string& state) override;
  size_t sent_bytes_per_step() const override;
  int64_t bytes_sent() const override { return bytes_sent_.load(); }

 private:
  void communicate();
  int agree_on_next_bucket();  // forward priority: a collective on the communication thread

  Communicator& comm_;
  float* gradients_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_tensor_;
  std::vector<int> remaining_;  // tensors still missing, per bucket
  WireType wire_;
  std::vector<uint16_t> wire_buffer_;
  std::vector<float> votes_;  // forward priority: per bucket, 1 if queued here; summed over ranks
  std::unique_ptr<PowerSgd> powersgd_;

  std::mutex mutex_;
  std::condition_variable work_ready_, bucket_done_;
  std::deque<int> queue_;
  std::vector<char> reduced_;  // per bucket, this step
  std::vector<std::chrono::steady_clock::time_point> ready_at_;  // per bucket, with a timeline
  // per bucket, this step: when its reduction started and ended
  std::vector<std::chrono::steady_clock::time_point> started_at_, ended_at_;
  double comm_sec_ = 0;  // this step
  std::atomic<int64_t> bytes_sent_{0};  // every step so far, the votes included
  bool forward_priority_ = false;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace cnnbench
