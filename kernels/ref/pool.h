// kernels/ref/pool.h — reference max and average pooling (square windows, symmetric padding)
// and global average pooling. Max pooling ignores padding (pads with -inf) and sends the
// gradient to the first maximum of each window. Backward accumulates into dx.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace cnnbench::ref {

struct PoolGeometry {
  int64_t n, c, h, w;
  int64_t kernel, stride, pad;
  int64_t oh, ow;
  bool count_include_pad;
};

namespace detail {
template <class F>
void for_each_window(const PoolGeometry& g, F&& f) {
  for (int64_t nc = 0; nc < g.n * g.c; ++nc)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        const int64_t y0 = oy * g.stride - g.pad, x0 = ox * g.stride - g.pad;
        f(nc, oy, ox, y0, x0);
      }
}
}  // namespace detail

template <class T>
void max_pool_forward(const T* x, T* y, const PoolGeometry& g) {
  detail::for_each_window(g, [&](int64_t nc, int64_t oy, int64_t ox, int64_t y0, int64_t x0) {
    T best = -std::numeric_limits<T>::infinity();
    for (int64_t iy = y0; iy < y0 + g.kernel; ++iy)
      for (int64_t ix = x0; ix < x0 + g.kernel; ++ix)
        if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w && x[(nc * g.h + iy) * g.w + ix] > best)
          best = x[(nc * g.h + iy) * g.w + ix];
    y[(nc * g.oh + oy) * g.ow + ox] = best;
  });
}

template <class T>
void max_pool_backward(const T* x, const T* dy, T* dx, const PoolGeometry& g) {
  detail::for_each_window(g, [&](int64_t nc, int64_t oy, int64_t ox, int64_t y0, int64_t x0) {
    int64_t best_index = -1;
    T best = -std::numeric_limits<T>::infinity();
    for (int64_t iy = y0; iy < y0 + g.kernel; ++iy)
      for (int64_t ix = x0; ix < x0 + g.kernel; ++ix)
        if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w && x[(nc * g.h + iy) * g.w + ix] > best) {
          best = x[(nc * g.h + iy) * g.w + ix];
          best_index = (nc * g.h + iy) * g.w + ix;
        }
    if (best_index >= 0) dx[best_index] += dy[(nc * g.oh + oy) * g.ow + ox];
  });
}

namespace detail {
inline int64_t window_count(const PoolGeometry& g, int64_t y0, int64_t x0) {
  if (g.count_include_pad) return g.kernel * g.kernel;
  const int64_t ys = std::max<int64_t>(y0, 0), ye = std::min<int64_t>(y0 + g.kernel, g.h);
  const int64_t xs = std::max<int64_t>(x0, 0), xe = std::min<int64_t>(x0 + g.kernel, g.w);
  return (ye - ys) * (xe - xs);
}
}  // namespace detail

template <class T>
void avg_pool_forward(const T* x, T* y, const PoolGeometry& g) {
  detail::for_each_window(g, [&](int64_t nc, int64_t oy, int64_t ox, int64_t y0, int64_t x0) {
    double sum = 0;
    for (int64_t iy = y0; iy < y0 + g.kernel; ++iy)
      for (int64_t ix = x0; ix < x0 + g.kernel; ++ix)
        if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) sum += x[(nc * g.h + iy) * g.w + ix];
    y[(nc * g.oh + oy) * g.ow + ox] = static_cast<T>(sum / detail::window_count(g, y0, x0));
  });
}

template <class T>
void avg_pool_backward(const T* dy, T* dx, const PoolGeometry& g) {
  detail::for_each_window(g, [&](int64_t nc, int64_t oy, int64_t ox, int64_t y0, int64_t x0) {
    const double d = dy[(nc * g.oh + oy) * g.ow + ox] / static_cast<double>(detail::window_count(g, y0, x0));
    for (int64_t iy = y0; iy < y0 + g.kernel; ++iy)
      for (int64_t ix = x0; ix < x0 + g.kernel; ++ix)
        if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
          dx[(nc * g.h + iy) * g.w + ix] = static_cast<T>(dx[(nc * g.h + iy) * g.w + ix] + d);
  });
}

template <class T>
void global_avg_pool_forward(const T* x, T* y, int64_t nc, int64_t hw) {
  for (int64_t i = 0; i < nc; ++i) {
    double sum = 0;
    for (int64_t p = 0; p < hw; ++p) sum += x[i * hw + p];
    y[i] = static_cast<T>(sum / hw);
  }
}

template <class T>
void global_avg_pool_backward(const T* dy, T* dx, int64_t nc, int64_t hw) {
  for (int64_t i = 0; i < nc; ++i)
    for (int64_t p = 0; p < hw; ++p) dx[i * hw + p] = static_cast<T>(dx[i * hw + p] + dy[i] / static_cast<double>(hw));
}

}  // namespace cnnbench::ref
