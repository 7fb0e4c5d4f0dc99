// comm/gradient_exchange.h — GradientExchange: what the step loop needs from whatever averages
// gradients across ranks while backward runs: the GradientReducer (host memory, a communication
// thread, MPI or Gloo) or the NcclReducer (device memory, a communication stream).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "comm/bucket_plan.h"
#include "comm/communicator.h"
#include "comm/timeline.h"
#include "kernels/plan.h"

namespace cnnbench {

struct ReducerStepStats {
  double comm_sec = 0;     // time spent reducing (casts included)
  double exposed_sec = 0;  // of which the compute side waited for, after backward
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
  virtual const std::vector<Bucket>& buckets() const = 0;
  // What one rank sends per step (PowerSGD: once past its warm-up), in bytes.
  virtual size_t sent_bytes_per_step() const = 0;
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
                                                      size_t fusion_threshold_bytes, WireType wire);

}  // namespace cnnbench
