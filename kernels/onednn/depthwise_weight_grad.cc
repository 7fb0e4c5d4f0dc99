#include "kernels/onednn/depthwise_weight_grad.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

namespace cnnbench {

namespace {

constexpr int64_t kMaxWidth = 16;

inline float value(float x) { return x; }
inline float value(uint16_t bf16) {
  const uint32_t bits = static_cast<uint32_t>(bf16) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// First and one-past-last output column whose input column ox*s + kx - pad lies inside [0, iw).
inline void valid_columns(const DepthwiseWeightGrad& g, int64_t kx, int64_t& lo, int64_t& hi) {
  const int64_t first = g.pad_w - kx;  // ox*s >= first
  lo = first <= 0 ? 0 : (first + g.stride - 1) / g.stride;
  const int64_t last = g.iw - 1 + g.pad_w - kx;  // ox*s <= last
  hi = last < 0 ? 0 : std::min(g.ow, last / g.stride + 1);
}

template <int B, class T>
void run(const DepthwiseWeightGrad& g, const T* src, const T* dy, float* dw, int threads) {
  const int64_t blocks = (g.c + B - 1) / B, tasks = blocks * g.kh;
  const int64_t xs = g.src.stride_w, ds = g.diff_dst.stride_w;
  int64_t lo[kMaxWidth], hi[kMaxWidth];  // each kernel column's output columns, the same for every row
  for (int64_t kx = 0; kx < g.kw; ++kx) valid_columns(g, kx, lo[kx], hi[kx]);
#pragma omp parallel for schedule(dynamic) num_threads(threads)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t cb = task / g.kh, ky = task % g.kh;
    alignas(64) float acc[kMaxWidth][B] = {};
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        const int64_t iy = oy * g.stride + ky - g.pad_h;
        if (iy < 0 || iy >= g.ih) continue;
        const T* x_row = src + g.src.offset(n, cb * B, iy, 0);
        const T* d_row = dy + g.diff_dst.offset(n, cb * B, oy, 0);
        for (int64_t kx = 0; kx < g.kw; ++kx) {
          float* a = acc[kx];
          for (int64_t ox = lo[kx]; ox < hi[kx]; ++ox) {
            const T* x = x_row + (ox * g.stride + kx - g.pad_w) * xs;
            const T* d = d_row + ox * ds;
#pragma omp simd
            for (int lane = 0; lane < B; ++lane) a[lane] += value(d[lane]) * value(x[lane]);
          }
        }
      }
    for (int64_t kx = 0; kx < g.kw; ++kx)
      for (int lane = 0; lane < B; ++lane) {
        const int64_t channel = cb * B + lane;
        if (channel < g.c) dw[(channel * g.kh + ky) * g.kw + kx] = acc[kx][lane];
      }
  }
}

}  // namespace

bool depthwise_weight_grad_supported(const DepthwiseWeightGrad& g) {
  return (g.src.block == 8 || g.src.block == 16) && g.src.block == g.diff_dst.block && g.kw >= 1 &&
         g.kw <= kMaxWidth && g.kh >= 1 && g.stride >= 1;
}

void depthwise_weight_grad(const DepthwiseWeightGrad& g, const void* src, const void* diff_dst, bool bf16,
                           float* diff_weights, int threads) {
  auto dispatch = [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    const T* x = static_cast<const T*>(src);
    const T* d = static_cast<const T*>(diff_dst);
    if (g.src.block == 16) run<16>(g, x, d, diff_weights, threads);
    else run<8>(g, x, d, diff_weights, threads);
  };
  if (bf16) dispatch(static_cast<uint16_t*>(nullptr));
  else dispatch(static_cast<float*>(nullptr));
}

}  // namespace cnnbench
