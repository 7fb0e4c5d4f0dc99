// harness/run/lr_schedule.h — the learning rate as a function of the (fractional) epoch:
// tf_cnn_benchmarks' piecewise constant schedule ("0.1;91;0.01;136;0.001": 0.1 until epoch 91,
// 0.01 until 136, then 0.001), or a cosine decay to zero over the run; an optional linear
// warm-up from zero over the first epochs (to the initial rate, as tf_cnn_benchmarks; under a
// cosine, to the decayed rate of the moment); and linear scaling with the global batch
// (Goyal et al.: rate x global batch / base batch).
#pragma once

#include <string>
#include <vector>

namespace cnnbench {

struct LrSchedule {
  double base = 0.1;                 // after linear scaling
  std::vector<double> boundaries;    // epochs
  std::vector<double> rates;         // rates.size() == boundaries.size() + 1 when piecewise
  double warmup_epochs = 0;
  bool cosine = false;
  double total_epochs = 1;

  double at(double epoch) const;
};

// Throws ConfigError for a malformed piecewise schedule (naming the flag and the problem).
LrSchedule make_lr_schedule(double base_rate, const std::string& piecewise, double warmup_epochs, bool cosine,
                            double total_epochs, int64_t global_batch, int64_t base_batch);

}  // namespace cnnbench
