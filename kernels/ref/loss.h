// kernels/ref/loss.h — reference softmax cross-entropy: mean loss over the batch and its
// gradient d(mean loss)/d(logits) = (softmax - target) / n, computed in double. The target is
// the one-hot label, or with label smoothing s: (1 - s) one-hot + s / classes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace cnnbench::ref {

template <class T>
double softmax_cross_entropy(const T* logits, const int32_t* labels, T* dlogits, int64_t n,
                             int64_t classes, double label_smoothing = 0) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T* z = logits + i * classes;
    double max = z[0];
    for (int64_t k = 1; k < classes; ++k) max = std::max<double>(max, z[k]);
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(z[k] - max);
    const double log_sum = std::log(sum) + max;
    for (int64_t k = 0; k < classes; ++k) {
      const double target = (k == labels[i] ? 1.0 - label_smoothing : 0.0) + label_smoothing / classes;
      total -= target * (z[k] - log_sum);
      const double p = std::exp(z[k] - log_sum);
      dlogits[i * classes + k] = static_cast<T>((p - target) / n);
    }
  }
  return total / n;
}

}  // namespace cnnbench::ref
