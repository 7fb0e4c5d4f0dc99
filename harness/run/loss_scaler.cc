#include "harness/run/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include "harness/cli/limits.h"

namespace cnnbench {

LossScaler::LossScaler(double initial_scale, bool dynamic, int64_t increase_every)
    : scale_(initial_scale), dynamic_(dynamic), increase_every_(increase_every) {}

bool LossScaler::accept(std::span<const float> gradients) {
  bool finite = true;
#pragma omp parallel for reduction(&& : finite) schedule(static)
  for (size_t i = 0; i < gradients.size(); ++i) finite = finite && std::isfinite(gradients[i]);
  return record(finite);
}

bool LossScaler::record(bool finite) {
  if (!finite) {
    ++skipped_;
    good_in_a_row_ = 0;
    if (dynamic_) scale_ = std::max(1.0, scale_ / 2);
    return false;
  }
  if (dynamic_ && ++good_in_a_row_ >= increase_every_) {
    // at most the flag's limit (2^24, as apex's max_loss_scale): in bf16 nothing overflows, and
    // an unbounded scale reached infinity, where halving no longer brings it back
    scale_ = std::min(scale_ * 2, max_loss_scale);
    good_in_a_row_ = 0;
  }
  return true;
}

void LossScaler::restore(const LossScaleState& saved) {
  skipped_ = saved.skipped;
  if (!dynamic_) return;
  scale_ = saved.scale;
  good_in_a_row_ = saved.good_in_a_row;
}

}  // namespace cnnbench

namespace cnnbench {

std::unique_ptr<LossScaler> make_loss_scaler(const Config& config) {
  // fp32 has the range: the flags are noted as ignored there (flag_table.cc), and are ignored
  if (!config.use_fp16 && config.precision == "fp32") return nullptr;
  if (config.forward_only) return nullptr;  // no gradients: noted as ignored too
  if (config.fp16_enable_auto_loss_scale)
    return std::make_unique<LossScaler>(config.fp16_loss_scale > 0 ? config.fp16_loss_scale : 65536.0, true,
                                        config.fp16_inc_loss_scale_every_n);
  if (config.fp16_loss_scale > 0) return std::make_unique<LossScaler>(config.fp16_loss_scale, false, 1);
  return nullptr;
}

}  // namespace cnnbench
