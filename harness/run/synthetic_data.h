// harness/run/synthetic_data.h — one batch of random images and labels, made once in memory before
// timing starts and fed every step, as tf_cnn_benchmarks does for synthetic data.
#pragma once

#include <cstdint>
#include <vector>

namespace cnnbench {

struct Batch {
  std::vector<float> images;   // n x c x h x w, or n x h x w x c when nhwc
  std::vector<int32_t> labels;
};

Batch make_synthetic_batch(int64_t n, int64_t c, int64_t h, int64_t w, int64_t classes, uint64_t seed);

}  // namespace cnnbench
