// kernels/onednn/sgd.cc — the optimizer step over the plain fp32 arenas: momentum SGD (in runs of
// tensors that take weight decay or not), or LARS tensor by tensor.
#include "kernels/onednn/plan_internal.h"

#include "kernels/cpu_ops.h"

namespace cnnbench::onednn {

void OnednnPlan::sgd_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count) {
  if (config.lars) {  // tensor by tensor: each has its own trust ratio
    for_each_param_in(layout(), static_cast<int64_t>(offset), static_cast<int64_t>(count), [&](const ArenaEntry& e) {
      cpu::lars_update(params_.data() + e.offset, grads_.data() + e.offset, momentum_.data() + e.offset, e.elements,
                       learning_rate, config.momentum, config.weight_decay, config.lars_eta, lars_adapts(*e.spec),
                       config.nesterov, config.gradient_scale);
    });
    return;
  }
  for_each_decay_run(layout(), static_cast<int64_t>(offset), static_cast<int64_t>(count), config.decay_batch_norm,
                     config.weight_decay,
                     [&](int64_t at, int64_t n, bool decays) {
                       cpu::sgd_update(params_.data() + at, grads_.data() + at, momentum_.data() + at, n,
                                       learning_rate, config.momentum, decays ? config.weight_decay : 0.0f,
                                       config.nesterov, config.gradient_scale);
                     });
}

}  // namespace cnnbench::onednn
