// kernels/ref/loss.h — reference softmax cross-entropy: mean loss over the batch and its
// gradient d(mean loss)/d(logits) = (softmax - onehot) / n, computed in double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace cnnbench::ref {

template <class T>
double softmax_cross_entropy(const T* logits, const int32_t* labels, T* dlogits, int64_t n,
                             int64_t classes) {
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T* z = logits + i * classes;
    double max = z[0];
    for (int64_t k = 1; k < classes; ++k) max = std::max<double>(max, z[k]);
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(z[k] - max);
    const double log_sum = std::log(sum) + max;
    total += log_sum - z[labels[i]];
    for (int64_t k = 0; k < classes; ++k) {
      const double p = std::exp(z[k] - log_sum);
      dlogits[i * classes + k] = static_cast<T>((p - (k == labels[i] ? 1.0 : 0.0)) / n);
    }
  }
  return total / n;
}

}  // namespace cnnbench::ref
