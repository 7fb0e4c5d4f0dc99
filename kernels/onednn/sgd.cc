// kernels/onednn/sgd.cc — the optimizer step: momentum SGD over the plain fp32 arenas.
#include "kernels/onednn/plan_internal.h"

#include "kernels/cpu_ops.h"

namespace cnnbench::onednn {

void OnednnPlan::sgd_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count) {
  cpu::sgd_update(params_.data() + offset, grads_.data() + offset, momentum_.data() + offset,
                  static_cast<int64_t>(count), learning_rate, config.momentum, config.weight_decay, config.nesterov,
                  config.gradient_scale);
}

}  // namespace cnnbench::onednn
