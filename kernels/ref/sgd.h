// kernels/ref/sgd.h — reference SGD with momentum, weight decay and optional Nesterov, in the
// form PyTorch and TensorFlow's momentum optimizer share:
//   g' = g + wd * w;  v = mu * v + g';  w -= lr * (nesterov ? g' + mu * v : v)
#pragma once

#include <cstdint>

namespace cnnbench::ref {

template <class T>
void sgd_update(T* w, const T* g, T* v, int64_t count, double lr, double mu, double wd,
                bool nesterov, double gradient_scale = 1.0) {
  for (int64_t i = 0; i < count; ++i) {
    const double grad = gradient_scale * static_cast<double>(g[i]) + wd * w[i];
    const double vel = mu * v[i] + grad;
    v[i] = static_cast<T>(vel);
    w[i] = static_cast<T>(w[i] - lr * (nesterov ? grad + mu * vel : vel));
  }
}

}  // namespace cnnbench::ref
