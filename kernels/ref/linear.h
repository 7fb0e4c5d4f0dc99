// kernels/ref/linear.h — reference fully connected layer: y = x W^T + b over the flattened
// input (n x in), W is (out x in). Backward-data accumulates into dx.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace cnnbench::ref {

struct LinearGeometry {
  int64_t n, in, out;
};

template <class T>
void linear_forward(const T* x, const T* wt, const T* bias, T* y, const LinearGeometry& g) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.out; ++o) {
      double sum = bias ? static_cast<double>(bias[o]) : 0.0;
      for (int64_t i = 0; i < g.in; ++i) sum += static_cast<double>(x[n * g.in + i]) * wt[o * g.in + i];
      y[n * g.out + o] = static_cast<T>(sum);
    }
}

template <class T>
void linear_backward_data(const T* dy, const T* wt, T* dx, const LinearGeometry& g) {
  std::vector<double> acc(g.in);
  for (int64_t n = 0; n < g.n; ++n) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t o = 0; o < g.out; ++o) {
      const double d = dy[n * g.out + o];
      for (int64_t i = 0; i < g.in; ++i) acc[i] += d * static_cast<double>(wt[o * g.in + i]);
    }
    for (int64_t i = 0; i < g.in; ++i) dx[n * g.in + i] = static_cast<T>(dx[n * g.in + i] + acc[i]);
  }
}

template <class T>
void linear_backward_weights(const T* x, const T* dy, T* dw, T* dbias, const LinearGeometry& g) {
  std::vector<double> acc(g.in);
  for (int64_t o = 0; o < g.out; ++o) {
    std::fill(acc.begin(), acc.end(), 0.0);
    double bias_sum = 0;
    for (int64_t n = 0; n < g.n; ++n) {
      const double d = dy[n * g.out + o];
      bias_sum += d;
      for (int64_t i = 0; i < g.in; ++i) acc[i] += d * static_cast<double>(x[n * g.in + i]);
    }
    for (int64_t i = 0; i < g.in; ++i) dw[o * g.in + i] = static_cast<T>(acc[i]);
    if (dbias) dbias[o] = static_cast<T>(bias_sum);
  }
}

}  // namespace cnnbench::ref
