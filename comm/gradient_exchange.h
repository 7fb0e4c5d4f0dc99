// comm/gradient_exchange.h — GradientExchange: what the step loop needs from whatever averages
// gradients across ranks while backward runs: the GradientReducer (host memory, a communication
// thread, MPI or Gloo) or the NcclReducer (device memory, a communication stream).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "comm/bucket_plan.h"
#include "comm/communicator.h"
#include "comm/timeline.h"
#include "kernels/plan.h"

namespace cnnbench {

struct ReducerStepStats {
  double comm_sec = 0;     // time spent reducing (casts included)
  double exposed_sec = 0;  // of which the compute side waited for, after backward
  double comm_after_sec = 0;  // end_step(): reducing time after the time point it was given
};

class GradientExchange {
 public:
  virtual ~GradientExchange() = default;
  // Tensor `index` (into the extents given at construction) is final, or queued to be.
  virtual void tensor_ready(int index) = 0;
  // After backward: calls on_reduced(bucket) for every bucket in order once it is reduced (or,
  // on a device, once the update is ordered after its reduction), then readies the next step.
  virtual ReducerStepStats wait_for_buckets(const std::function<void(const Bucket&)>& on_reduced) = 0;
  // After the step's device work has finished: figures that only the device knows by then.
  virtual ReducerStepStats finish_step() { return {}; }

  // --overlap_forward (host reducers): the updates wait for the next forward pass, which takes
  // the buckets in the order it needs them. wait_for_bucket(b) returns once bucket b is
  // reduced (the seconds it waited); end_step(since), once every bucket was waited for, returns
  // the step's communication time (comm_after_sec: the part after `since`) and readies the next
  // step. With forward priority, the communication thread sends the queued bucket that the
  // forward pass needs first (the last in backward order) instead of the oldest.
  virtual double wait_for_bucket(int /*bucket*/) { throw std::logic_error(no_overlap); }
  virtual ReducerStepStats end_step(std::chrono::steady_clock::time_point /*since*/) {
    throw std::logic_error(no_overlap);
  }
  virtual void set_forward_priority(bool /*on*/) { throw std::logic_error(no_overlap); }
  virtual const std::vector<Bucket>& buckets() const = 0;
  // What a resumed run needs beyond the weights, this rank's own (PowerSGD's warm-up count, Q
  // factors and error feedback); empty when there is nothing. restore_state() takes what
  // state() gave, or throws std::invalid_argument, changing nothing, for another configuration.
  virtual std::string state() const { return {}; }
  virtual void restore_state(const std::string& /*state*/) {
    throw std::logic_error("this gradient exchange keeps no state across steps");
  }
  // CUDA graphs (DevicePlan::set_capture_hooks): a reducer whose launches may be captured with
  // backward's says so; join_capture() ends its part of a capture on the compute stream, and
  // graph_replayed() stands for the tensor_ready() calls a replay made without running them.
  virtual bool capturable() const { return false; }
  virtual void join_capture() { throw std::logic_error("this gradient exchange cannot be captured"); }
  virtual void graph_replayed() { throw std::logic_error("this gradient exchange cannot be captured"); }
  // Called before the communicator aborts (a plan dropping the graphs that hold its collectives).
  virtual void set_before_abort(std::function<void()> /*f*/) {}
  // What one rank sends per step (PowerSGD: once past its warm-up), in bytes.
  virtual size_t sent_bytes_per_step() const = 0;
  // What this rank has sent so far, in bytes, counted as it goes (PowerSGD's warm-up steps send
  // whole gradients); -1 where every step sends sent_bytes_per_step().
  virtual int64_t bytes_sent() const { return -1; }
  // Elements of all buckets together: the gradients (with a device plan's alignment gaps).
  size_t gradient_elements() const {
    size_t elements = 0;
    for (const Bucket& b : buckets()) elements += b.count;
    return elements;
  }
  // --timeline: each bucket's "gradients ready" and its allreduce are recorded there.
  void set_timeline(Timeline* timeline) { timeline_ = timeline; }

 protected:
  Timeline* timeline_ = nullptr;

 private:
  static constexpr const char* no_overlap = "this gradient exchange does not overlap with the forward pass";
};

// A parameter tensor's extent at `offset`, with its matrix shape for PowerSGD: the first
// dimension by the rest (rows 0 for a vector).
inline TensorExtent param_extent(const ArenaEntry& e, size_t offset, size_t count) {
  TensorExtent out{offset, count};
  const std::vector<int64_t>& dims = e.spec->dims;
  if (dims.size() > 1 && count == static_cast<size_t>(e.elements)) {
    out.rows = static_cast<size_t>(dims[0]);
    out.cols = static_cast<size_t>(e.elements / dims[0]);
  }
  return out;
}

// Extents of a plan's gradient tensors as sgd_step() and the exchange address them, each up to
// the next tensor (device plans align tensors; the gaps travel along as zeros).
inline std::vector<TensorExtent> gradient_extents(const Plan& plan) {
  std::vector<TensorExtent> out;
  const int count = static_cast<int>(plan.layout().params.size());
  for (int i = 0; i < count; ++i) {
    const int64_t begin = plan.exchange_offset(i);
    const int64_t end = i + 1 < count ? plan.exchange_offset(i + 1) : plan.exchange_elements();
    out.push_back(param_extent(plan.layout().params[i], static_cast<size_t>(begin), static_cast<size_t>(end - begin)));
  }
  return out;
}

// The exchange for a device plan (gradients in DevicePlan::device_gradients()): NCCL on the
// plan's stream; its watchdog runs while the plan waits. Throws std::invalid_argument for a
// host backend.
std::unique_ptr<GradientExchange> make_device_reducer(Communicator& comm, DevicePlan& plan,
                                                      const std::vector<TensorExtent>& tensors,
                                                      const BucketSizes& bucket_sizes, WireType wire);

}  // namespace cnnbench
