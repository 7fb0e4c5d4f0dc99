// kernels/ref/lrn.h — reference local response normalisation across channels (NCHW), as
// TensorFlow's tf.nn.lrn defines it: s[c] = bias + alpha * (sum of x[c']^2 over |c' - c| <= radius),
// y[c] = x[c] * s[c]^-beta. Backward recomputes s and accumulates into dx:
// dx[c] += dy[c] s[c]^-beta - 2 alpha beta x[c] sum over |c' - c| <= radius of dy[c'] x[c'] s[c']^(-beta - 1).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace cnnbench::ref {

struct LrnGeometry {
  int64_t n, c, hw;
  int64_t radius;
  double bias, alpha, beta;
};

namespace detail {
// s for every channel of image b at position p
template <class T>
void lrn_scales(const T* x, const LrnGeometry& g, int64_t b, int64_t p, std::vector<double>& s) {
  s.assign(g.c, 0.0);
  for (int64_t c = 0; c < g.c; ++c) {
    double sum = 0;
    for (int64_t k = std::max<int64_t>(0, c - g.radius); k <= std::min(g.c - 1, c + g.radius); ++k) {
      const double v = x[(b * g.c + k) * g.hw + p];
      sum += v * v;
    }
    s[c] = g.bias + g.alpha * sum;
  }
}
}  // namespace detail

template <class T>
void lrn_forward(const T* x, T* y, const LrnGeometry& g) {
  std::vector<double> s;
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t p = 0; p < g.hw; ++p) {
      detail::lrn_scales(x, g, b, p, s);
      for (int64_t c = 0; c < g.c; ++c) {
        const int64_t i = (b * g.c + c) * g.hw + p;
        y[i] = static_cast<T>(x[i] * std::pow(s[c], -g.beta));
      }
    }
}

template <class T>
void lrn_backward(const T* x, const T* dy, T* dx, const LrnGeometry& g) {
  std::vector<double> s;
  for (int64_t b = 0; b < g.n; ++b)
    for (int64_t p = 0; p < g.hw; ++p) {
      detail::lrn_scales(x, g, b, p, s);
      for (int64_t c = 0; c < g.c; ++c) {
        const int64_t i = (b * g.c + c) * g.hw + p;
        double cross = 0;
        for (int64_t k = std::max<int64_t>(0, c - g.radius); k <= std::min(g.c - 1, c + g.radius); ++k) {
          const int64_t j = (b * g.c + k) * g.hw + p;
          cross += static_cast<double>(dy[j]) * x[j] * std::pow(s[k], -g.beta - 1);
        }
        dx[i] += static_cast<T>(dy[i] * std::pow(s[c], -g.beta) - 2 * g.alpha * g.beta * x[i] * cross);
      }
    }
}

}  // namespace cnnbench::ref
