// harness/run/loss_scaler.h — loss scaling as tf_cnn_benchmarks defines it for half precision:
// the loss (so every gradient) is multiplied by a scale before backward and the gradients are
// divided by it before the update. Static (--fp16_loss_scale) or dynamic
// (--fp16_enable_auto_loss_scale): a step whose gradients hold inf or NaN is skipped and the
// scale halved; after --fp16_inc_loss_scale_every_n good steps in a row it is doubled.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "harness/cli/config.h"

namespace cnnbench {

// What a checkpoint keeps of a scaler, so that a resumed run goes on at the scale it had reached
// (not the initial one, which a dynamic scaler would halve again over skipped steps).
struct LossScaleState {
  double scale = 0;
  int64_t good_in_a_row = 0, skipped = 0;
};

class LossScaler {
 public:
  LossScaler(double initial_scale, bool dynamic, int64_t increase_every);

  double scale() const { return scale_; }
  int64_t skipped_steps() const { return skipped_; }
  // After the gradients are final (reduced across ranks, so every rank decides alike): true if
  // the step may be applied; false if it must be skipped (the scale is lowered when dynamic).
  bool accept(std::span<const float> gradients);
  // The same, given whether every gradient is finite (checked where they are, e.g. on a GPU).
  bool record(bool finite);

  LossScaleState state() const { return {scale_, good_in_a_row_, skipped_}; }
  // A checkpoint's state: a dynamic scaler takes all of it; a static one its count of skipped
  // steps alone (its scale is the flag's).
  void restore(const LossScaleState& saved);

 private:
  double scale_;
  bool dynamic_;
  int64_t increase_every_, good_in_a_row_ = 0, skipped_ = 0;
};

// The scaler the flags ask for, or null (no loss scaling).
std::unique_ptr<LossScaler> make_loss_scaler(const Config& config);

}  // namespace cnnbench
