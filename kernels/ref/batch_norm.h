// kernels/ref/batch_norm.h — reference batch normalization over N, H, W per channel.
// Training forward normalizes with the batch statistics and saves them (biased variance);
// inference forward uses the running statistics; backward gives dx (accumulated), dscale,
// dshift. update_running_stats follows PyTorch (unbiased variance in the running estimate).
#pragma once

#include <cmath>
#include <cstdint>

namespace cnnbench::ref {

struct BatchNormGeometry {
  int64_t n, c, hw;
  double epsilon;
};

template <class T>
void batch_norm_forward_training(const T* x, const T* scale, const T* shift, T* y, T* saved_mean,
                                 T* saved_var, const BatchNormGeometry& g) {
  const double m = static_cast<double>(g.n * g.hw);
  for (int64_t c = 0; c < g.c; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t p = 0; p < g.hw; ++p) sum += static_cast<double>(x[(n * g.c + c) * g.hw + p]);
    const double mean = sum / m;
    double sq = 0;
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t p = 0; p < g.hw; ++p) {
        const double d = static_cast<double>(x[(n * g.c + c) * g.hw + p]) - mean;
        sq += d * d;
      }
    const double var = sq / m;
    const double inv_std = 1.0 / std::sqrt(var + g.epsilon);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t p = 0; p < g.hw; ++p) {
        const int64_t i = (n * g.c + c) * g.hw + p;
        y[i] = static_cast<T>((static_cast<double>(x[i]) - mean) * inv_std * scale[c] + shift[c]);
      }
    saved_mean[c] = static_cast<T>(mean);
    saved_var[c] = static_cast<T>(var);
  }
}

template <class T>
void batch_norm_forward_inference(const T* x, const T* scale, const T* shift, const T* mean,
                                  const T* var, T* y, const BatchNormGeometry& g) {
  for (int64_t c = 0; c < g.c; ++c) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(var[c]) + g.epsilon);
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t p = 0; p < g.hw; ++p) {
        const int64_t i = (n * g.c + c) * g.hw + p;
        y[i] = static_cast<T>((static_cast<double>(x[i]) - mean[c]) * inv_std * scale[c] + shift[c]);
      }
  }
}

template <class T>
void batch_norm_backward(const T* x, const T* dy, const T* scale, const T* saved_mean,
                         const T* saved_var, T* dx, T* dscale, T* dshift,
                         const BatchNormGeometry& g) {
  const double m = static_cast<double>(g.n * g.hw);
  for (int64_t c = 0; c < g.c; ++c) {
    const double mean = saved_mean[c];
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(saved_var[c]) + g.epsilon);
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t p = 0; p < g.hw; ++p) {
        const int64_t i = (n * g.c + c) * g.hw + p;
        sum_dy += static_cast<double>(dy[i]);
        sum_dy_xhat += static_cast<double>(dy[i]) * (static_cast<double>(x[i]) - mean) * inv_std;
      }
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t p = 0; p < g.hw; ++p) {
        const int64_t i = (n * g.c + c) * g.hw + p;
        const double xhat = (static_cast<double>(x[i]) - mean) * inv_std;
        const double d = scale[c] * inv_std * (dy[i] - sum_dy / m - xhat * sum_dy_xhat / m);
        dx[i] = static_cast<T>(static_cast<double>(dx[i]) + d);
      }
    dscale[c] = static_cast<T>(sum_dy_xhat);
    dshift[c] = static_cast<T>(sum_dy);
  }
}

template <class T>
void update_running_stats(const T* saved_mean, const T* saved_var, T* running_mean,
                          T* running_var, double momentum, const BatchNormGeometry& g) {
  const double m = static_cast<double>(g.n * g.hw);
  const double unbias = m > 1 ? m / (m - 1) : 1.0;
  for (int64_t c = 0; c < g.c; ++c) {
    running_mean[c] = static_cast<T>((1 - momentum) * running_mean[c] + momentum * saved_mean[c]);
    running_var[c] = static_cast<T>((1 - momentum) * running_var[c] + momentum * saved_var[c] * unbias);
  }
}

}  // namespace cnnbench::ref
