// kernels/ref/elementwise.h — reference ReLU, ReLU6, residual add, the CIFAR option-A shortcut
// (subsample by stride, place the channels at pad_front of a zero tensor) and channel
// concatenation (NCHW), dropout. Backward accumulates into its input gradients.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/dropout_mask.h"

namespace cnnbench::ref {

template <class T>
void relu_forward(const T* x, T* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}

template <class T>
void relu_backward(const T* x, const T* dy, T* dx, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (x[i] > T(0)) dx[i] += dy[i];
}

// ReLU6: min(max(x, 0), 6); the gradient passes where 0 < x < 6.
template <class T>
void relu6_forward(const T* x, T* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = std::min(std::max(x[i], T(0)), T(6));
}

template <class T>
void relu6_backward(const T* x, const T* dy, T* dx, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (x[i] > T(0) && x[i] < T(6)) dx[i] += dy[i];
}

// Dropout with its mask (kernels/dropout_mask.h): kept elements scaled by 1 / (1 - rate).
template <class T>
void dropout_forward(const T* x, T* y, int64_t count, uint64_t seed, int node, uint64_t step, float rate) {
  const T scale = T(1) / (T(1) - T(rate));
  for (int64_t i = 0; i < count; ++i)
    y[i] = dropout_keeps(seed, node, step, static_cast<uint64_t>(i), rate) ? x[i] * scale : T(0);
}

template <class T>
void dropout_backward(const T* dy, T* dx, int64_t count, uint64_t seed, int node, uint64_t step, float rate) {
  const T scale = T(1) / (T(1) - T(rate));
  for (int64_t i = 0; i < count; ++i)
    if (dropout_keeps(seed, node, step, static_cast<uint64_t>(i), rate)) dx[i] += dy[i] * scale;
}

template <class T>
void add_forward(const T* a, const T* b, T* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) y[i] = a[i] + b[i];
}

template <class T>
void add_backward(const T* dy, T* da, T* db, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    da[i] += dy[i];
    db[i] += dy[i];
  }
}

struct ShortcutGeometry {
  int64_t n, c, h, w;              // input
  int64_t out_c, oh, ow, stride, pad_front;
  int64_t offset = 0;              // models/graph.h, ShortcutAttrs
  // the input row (or column) output row `o` reads, or -1 where it reads past the input's edge
  int64_t source(int64_t o, int64_t size) const {
    const int64_t s = o * stride + offset;
    return s < size ? s : -1;
  }
};

template <class T>
void shortcut_forward(const T* x, T* y, const ShortcutGeometry& g) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oc = 0; oc < g.out_c; ++oc) {
      const int64_t c = oc - g.pad_front;
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const int64_t iy = g.source(oy, g.h), ix = g.source(ox, g.w);
          y[((n * g.out_c + oc) * g.oh + oy) * g.ow + ox] =
              (c >= 0 && c < g.c && iy >= 0 && ix >= 0) ? x[((n * g.c + c) * g.h + iy) * g.w + ix] : T(0);
        }
    }
}

template <class T>
void shortcut_backward(const T* dy, T* dx, const ShortcutGeometry& g) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const int64_t iy = g.source(oy, g.h), ix = g.source(ox, g.w);
          if (iy >= 0 && ix >= 0)
            dx[((n * g.c + c) * g.h + iy) * g.w + ix] += dy[((n * g.out_c + c + g.pad_front) * g.oh + oy) * g.ow + ox];
        }
}

// Channel concatenation: input k's channels land at the sum of the channels before it.
template <class T>
void concat_forward(const std::vector<const T*>& xs, const std::vector<int64_t>& channels, T* y, int64_t n,
                    int64_t hw) {
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  for (int64_t b = 0; b < n; ++b) {
    T* out = y + b * total * hw;
    for (size_t k = 0; k < xs.size(); ++k) {
      out = std::copy_n(xs[k] + b * channels[k] * hw, channels[k] * hw, out);
    }
  }
}

template <class T>
void concat_backward(const T* dy, const std::vector<T*>& dxs, const std::vector<int64_t>& channels, int64_t n,
                     int64_t hw) {
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  for (int64_t b = 0; b < n; ++b) {
    const T* in = dy + b * total * hw;
    for (size_t k = 0; k < dxs.size(); ++k) {
      T* dx = dxs[k] + b * channels[k] * hw;
      for (int64_t i = 0; i < channels[k] * hw; ++i) dx[i] += in[i];
      in += channels[k] * hw;
    }
  }
}

}  // namespace cnnbench::ref
