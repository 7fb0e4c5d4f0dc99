#include "harness/run/synthetic_data.h"

#include <random>

namespace cnnbench {

Batch make_synthetic_batch(int64_t n, int64_t c, int64_t h, int64_t w, int64_t classes, uint64_t seed) {
  Batch batch;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> pixel(0.0f, 1.0f);  // images as they look after normalisation
  batch.images.resize(n * c * h * w);
  for (float& v : batch.images) v = pixel(rng);
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(classes - 1));
  batch.labels.resize(n);
  for (int32_t& l : batch.labels) l = label(rng);
  return batch;
}

}  // namespace cnnbench
