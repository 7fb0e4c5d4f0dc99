// kernels/ref/elementwise.h — reference ReLU, residual add and the CIFAR option-A shortcut
// (subsample by stride, place the channels at pad_front of a zero tensor). Backward
// accumulates into its input gradients.
#pragma once

#include <cstdint>

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
};

template <class T>
void shortcut_forward(const T* x, T* y, const ShortcutGeometry& g) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oc = 0; oc < g.out_c; ++oc) {
      const int64_t c = oc - g.pad_front;
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox)
          y[((n * g.out_c + oc) * g.oh + oy) * g.ow + ox] =
              (c >= 0 && c < g.c) ? x[((n * g.c + c) * g.h + oy * g.stride) * g.w + ox * g.stride] : T(0);
    }
}

template <class T>
void shortcut_backward(const T* dy, T* dx, const ShortcutGeometry& g) {
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox)
          dx[((n * g.c + c) * g.h + oy * g.stride) * g.w + ox * g.stride] +=
              dy[((n * g.out_c + c + g.pad_front) * g.oh + oy) * g.ow + ox];
}

}  // namespace cnnbench::ref
