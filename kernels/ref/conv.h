// kernels/ref/conv.h — reference 2-D convolution: forward, backward data, backward weights.
// Plain NCHW / OIHW loops, any storage type T, double accumulation. The oracle for the fast
// backends. Backward-data accumulates into dx (dx += ...); weight and bias gradients overwrite.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace cnnbench::ref {

// Set by field name: the order has grown (kernel width and column padding) since it was first written.
struct ConvGeometry {
  int64_t n, c, h, w;   // input
  int64_t k, r, t;      // output channels, kernel height and width
  int64_t stride, pad, pad_w;  // pad: rows above and below, pad_w: columns left and right
  int64_t oh, ow;       // output extent
  int64_t groups = 1;   // output channel o reads the c_g input channels from first_input(o)
  int64_t group_channels() const { return c / groups; }  // c_g: input channels a filter reads
  int64_t first_input(int64_t out_channel) const { return out_channel / (k / groups) * group_channels(); }
};

// y[n,k,oy,ox] = b[k] + sum_{l,i,j} x[n,first_input(k)+l,oy*s-p+i,ox*s-pw+j] * w[k,l,i,j]
template <class T>
void conv_forward(const T* x, const T* wt, const T* bias, T* y, const ConvGeometry& g) {
  std::vector<double> acc(g.oh * g.ow);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t k = 0; k < g.k; ++k) {
      std::fill(acc.begin(), acc.end(), bias ? static_cast<double>(bias[k]) : 0.0);
      for (int64_t l = 0; l < g.group_channels(); ++l)
        for (int64_t i = 0; i < g.r; ++i)
          for (int64_t j = 0; j < g.t; ++j) {
            const double wv = wt[((k * g.group_channels() + l) * g.r + i) * g.t + j];
            const T* xc = x + (n * g.c + g.first_input(k) + l) * g.h * g.w;
            for (int64_t oy = 0; oy < g.oh; ++oy) {
              const int64_t iy = oy * g.stride - g.pad + i;
              if (iy < 0 || iy >= g.h) continue;
              double* arow = &acc[oy * g.ow];
              const T* xrow = xc + iy * g.w;
              for (int64_t ox = 0; ox < g.ow; ++ox) {
                const int64_t ix = ox * g.stride - g.pad_w + j;
                if (ix >= 0 && ix < g.w) arow[ox] += wv * static_cast<double>(xrow[ix]);
              }
            }
          }
      T* yk = y + (n * g.k + k) * g.oh * g.ow;
      for (int64_t p = 0; p < g.oh * g.ow; ++p) yk[p] = static_cast<T>(acc[p]);
    }
}

template <class T>
void conv_backward_data(const T* dy, const T* wt, T* dx, const ConvGeometry& g) {
  std::vector<double> acc(g.h * g.w);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t c = 0; c < g.c; ++c) {
      std::fill(acc.begin(), acc.end(), 0.0);
      const int64_t group = c / g.group_channels(), per_group = g.k / g.groups;
      for (int64_t k = group * per_group; k < (group + 1) * per_group; ++k)
        for (int64_t i = 0; i < g.r; ++i)
          for (int64_t j = 0; j < g.t; ++j) {
            const double wv = wt[((k * g.group_channels() + c % g.group_channels()) * g.r + i) * g.t + j];
            const T* dyk = dy + (n * g.k + k) * g.oh * g.ow;
            for (int64_t oy = 0; oy < g.oh; ++oy) {
              const int64_t iy = oy * g.stride - g.pad + i;
              if (iy < 0 || iy >= g.h) continue;
              double* arow = &acc[iy * g.w];
              const T* dyrow = dyk + oy * g.ow;
              for (int64_t ox = 0; ox < g.ow; ++ox) {
                const int64_t ix = ox * g.stride - g.pad_w + j;
                if (ix >= 0 && ix < g.w) arow[ix] += wv * static_cast<double>(dyrow[ox]);
              }
            }
          }
      T* dxc = dx + (n * g.c + c) * g.h * g.w;
      for (int64_t p = 0; p < g.h * g.w; ++p)
        dxc[p] = static_cast<T>(static_cast<double>(dxc[p]) + acc[p]);
    }
}

template <class T>
void conv_backward_weights(const T* x, const T* dy, T* dw, T* dbias, const ConvGeometry& g) {
  for (int64_t k = 0; k < g.k; ++k) {
    if (dbias) {
      double sum = 0;
      for (int64_t n = 0; n < g.n; ++n)
        for (int64_t p = 0; p < g.oh * g.ow; ++p)
          sum += static_cast<double>(dy[(n * g.k + k) * g.oh * g.ow + p]);
      dbias[k] = static_cast<T>(sum);
    }
    for (int64_t l = 0; l < g.group_channels(); ++l)
      for (int64_t i = 0; i < g.r; ++i)
        for (int64_t j = 0; j < g.t; ++j) {
          double sum = 0;
          for (int64_t n = 0; n < g.n; ++n) {
            const T* xc = x + (n * g.c + g.first_input(k) + l) * g.h * g.w;
            const T* dyk = dy + (n * g.k + k) * g.oh * g.ow;
            for (int64_t oy = 0; oy < g.oh; ++oy) {
              const int64_t iy = oy * g.stride - g.pad + i;
              if (iy < 0 || iy >= g.h) continue;
              for (int64_t ox = 0; ox < g.ow; ++ox) {
                const int64_t ix = ox * g.stride - g.pad_w + j;
                if (ix >= 0 && ix < g.w)
                  sum += static_cast<double>(xc[iy * g.w + ix]) * static_cast<double>(dyk[oy * g.ow + ox]);
              }
            }
          }
          dw[((k * g.group_channels() + l) * g.r + i) * g.t + j] = static_cast<T>(sum);
        }
  }
}

}  // namespace cnnbench::ref
