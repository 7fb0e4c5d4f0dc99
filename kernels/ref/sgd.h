// kernels/ref/sgd.h — reference SGD with momentum, weight decay and optional Nesterov, in the
// form PyTorch and TensorFlow's momentum optimizer share (and LARS, below):
//   g' = g + wd * w;  v = mu * v + g';  w -= lr * (nesterov ? g' + mu * v : v)
#pragma once

#include <cmath>
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

// LARS as MLPerf's ResNet-50 reference writes it (see SgdConfig::lars): for a weight tensor
//   g' = g + wd * w;  trust = eta |w| / (|g| + wd |w|) (1 if a norm is 0);  rate = lr * trust
// and for a bias or batch-norm tensor g' = g, rate = lr; then
//   v = mu * v + rate * g';  w -= nesterov ? mu * v + rate * g' : v
template <class T>
void lars_update(T* w, const T* g, T* v, int64_t count, double lr, double mu, double wd, double eta, bool adapt,
                 bool nesterov, double gradient_scale = 1.0) {
  double rate = lr, decay = 0;
  if (adapt) {
    double ww = 0, gg = 0;
    for (int64_t i = 0; i < count; ++i) {
      ww += static_cast<double>(w[i]) * w[i];
      gg += (gradient_scale * g[i]) * (gradient_scale * g[i]);
    }
    const double w_norm = std::sqrt(ww), g_norm = std::sqrt(gg);
    if (w_norm > 0 && g_norm > 0) rate = lr * eta * w_norm / (g_norm + wd * w_norm);
    decay = wd;
  }
  for (int64_t i = 0; i < count; ++i) {
    const double grad = rate * (gradient_scale * static_cast<double>(g[i]) + decay * w[i]);
    const double vel = mu * v[i] + grad;
    v[i] = static_cast<T>(vel);
    w[i] = static_cast<T>(w[i] - (nesterov ? mu * vel + grad : vel));
  }
}

}  // namespace cnnbench::ref
