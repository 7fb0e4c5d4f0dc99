#include "kernels/cpu_ops.h"

#include <algorithm>
#include <cmath>

namespace cnnbench::cpu {

double softmax_cross_entropy(const float* logits, const int32_t* labels, float* dlogits,
                             int64_t n, int64_t classes) {
  double total = 0;
#pragma omp parallel for reduction(+ : total) if (n * classes > 16384)
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits + i * classes;
    float* dz = dlogits + i * classes;
    const float max = *std::max_element(z, z + classes);
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) {
      dz[k] = std::exp(z[k] - max);
      sum += dz[k];
    }
    const float scale = static_cast<float>(1.0 / (sum * static_cast<double>(n)));
    for (int64_t k = 0; k < classes; ++k) dz[k] *= scale;
    dz[labels[i]] -= 1.0f / static_cast<float>(n);
    total += std::log(sum) + max - z[labels[i]];
  }
  return total / static_cast<double>(n);
}

void sgd_update(float* w, const float* g, float* v, int64_t count, float lr, float momentum,
                float weight_decay, bool nesterov, float gradient_scale) {
  if (nesterov) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      const float grad = gradient_scale * g[i] + weight_decay * w[i];
      const float vel = momentum * v[i] + grad;
      v[i] = vel;
      w[i] -= lr * (grad + momentum * vel);
    }
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      const float vel = momentum * v[i] + gradient_scale * g[i] + weight_decay * w[i];
      v[i] = vel;
      w[i] -= lr * vel;
    }
  }
}

void update_running_stats(const float* batch_mean, const float* batch_var, float* running_mean,
                          float* running_var, int64_t channels, float momentum,
                          int64_t values_per_channel) {
  const double m = static_cast<double>(values_per_channel);
  const float unbias = m > 1 ? static_cast<float>(m / (m - 1)) : 1.0f;
  for (int64_t c = 0; c < channels; ++c) {
    running_mean[c] = (1 - momentum) * running_mean[c] + momentum * batch_mean[c];
    running_var[c] = (1 - momentum) * running_var[c] + momentum * batch_var[c] * unbias;
  }
}

}  // namespace cnnbench::cpu
