// kernels/device_plan.h — DevicePlan: what a plan on an accelerator adds to Plan.
// A device plan keeps parameters, gradients, momentum and buffers on its device: Plan's host
// arenas are copies, sent with upload_state() after the host wrote them and refreshed by
// download_state() before the host reads them. Its launches are asynchronous: Plan::loss()
// returns a deferred result and synchronize() waits for the step and fills it in. Images given
// to set_input() stay on the device until the next set_input(). The harness asks Plan::device()
// and takes these paths only where it answers; a CPU backend never sees this file.
#pragma once

#include <cstdint>
#include <functional>

#include "kernels/plan.h"

namespace cnnbench {

// Device time of one step's phases, measured on the device's own clock.
struct StepPhases {
  double forward_sec = 0, backward_sec = 0, update_sec = 0;
};

class DevicePlan {
 public:
  virtual ~DevicePlan() = default;

  virtual void upload_state() = 0;
  virtual void download_state() = 0;
  // The parameters alone (Plan::parameters()), as download_state() reads them.
  virtual void download_parameters() = 0;
  // Waits for the step's launches; fills in a deferred loss.
  virtual void synchronize(LossResult* loss) = 0;

  virtual void* device_gradients() = 0;  // fp32, in the device layout below
  virtual void* device_stream() = 0;     // cudaStream_t of the plan's launches
  // The device arena may start each tensor on an aligned offset (the gaps stay zero):
  // Plan::exchange_offset() and exchange_elements() answer from these.
  virtual int64_t gradient_offset(int param_index) const = 0;
  virtual int64_t gradient_elements() const = 0;

  // Device time of the last step's phases (forward+loss, backward, update), known after
  // synchronize(); false when the last step did not mark them all.
  virtual bool device_phase_times(StepPhases* phases) const = 0;
  // The most device memory in use at the end of a step so far, in bytes: the driver's figure for
  // the whole device (what nvidia-smi shows: every process on it, the runtime's own included).
  virtual int64_t peak_device_memory_bytes() const = 0;
  // Called every ~100 ms with the seconds waited so far while the plan waits for its device (a
  // watchdog for collectives may throw from it).
  virtual void set_wait_hook(std::function<void(double)> hook) = 0;

  // Loss scaling without a wait inside the step: checks the gradients and skips the update on
  // the device; after synchronize(), last_update_applied() says whether it was applied.
  virtual void sgd_step_if_finite(const SgdConfig& config, float learning_rate) = 0;
  virtual bool last_update_applied() const = 0;

  // CUDA graphs with a gradient hook (PlanOptions::cuda_graphs and an NCCL reducer): backward is
  // captured with the launches its hooks make (after one step run plainly); `join` runs last
  // inside that capture (the hooks' streams rejoin the plan's), and `replayed` after every later
  // replay of it, whose hooks do not run. Without both, a plan with a hook runs without graphs.
  virtual void set_capture_hooks(std::function<void()> /*join*/, std::function<void()> /*replayed*/) {}
  // Destroys the captured graphs (before an NCCL abort, which waits for them); later steps capture again.
  virtual void drop_graphs() {}
};

}  // namespace cnnbench
