// kernels/cuda/pool_kernels.cu — pool_kernels.h. cuDNN's NHWC max pooling took 14 ms of VGG16's
// 94 ms fp16 step (b256, H100); a kernel of ours reading 2 bytes a thread still took 4.0 ms for
// the first pool's backward, some 3x what its 4 GB of traffic needs. Here a thread takes 16 bytes
// of channels of one window.
#include "kernels/cuda/pool_kernels.h"

#include <type_traits>

#include "kernels/cuda/kernel_util.cuh"

namespace cnnbench::cuda {
namespace {

// Window `i` (32-bit: VGG16's first pool at batch 256 has 25.7M windows x 8-channel packs)
// covers x's packs pack(p) for its k * k positions p, row-major, where cp = channels / W.
struct Window {
  int64_t base;
  int w, cp, k;
  __device__ Window(int i, int cp_, int h, int w_, int oh, int ow, int k_) : w(w_), cp(cp_), k(k_) {
    const int cg = i % cp, rest = i / cp, ox = rest % ow, oy = (rest / ow) % oh, img = rest / (ow * oh);
    base = ((static_cast<int64_t>(img) * h + oy * k) * w + ox * k) * cp + cg;
  }
  __device__ int64_t pack(int p) const { return base + (static_cast<int64_t>(p / k) * w + p % k) * cp; }
};

template <typename T, int W>
__global__ void forward_kernel(const T* x, T* y, int total, int cp, int h, int w, int oh, int ow, int k) {
  GRID_STRIDE(i, total) {
    const Window win(static_cast<int>(i), cp, h, w, oh, ow, k);
    float best[W];
#pragma unroll
    for (int j = 0; j < W; ++j) best[j] = -INFINITY;
    for (int p = 0; p < k * k; ++p) {
      const Pack<T, W> v = load_pack<W>(x, win.pack(p));
#pragma unroll
      for (int j = 0; j < W; ++j) best[j] = fmaxf(best[j], to_float(v.v[j]));
    }
    Pack<T, W> out;
#pragma unroll
    for (int j = 0; j < W; ++j) out.v[j] = from_float<T>(best[j]);
    store_pack(y, i, out);
  }
}

template <typename T, int W>
__global__ void backward_kernel(const T* x, const T* dy, T* dx, int total, int cp, int h, int w, int oh, int ow, int k,
                                bool accumulate, bool relu_mask) {
  GRID_STRIDE(i, total) {
    const Window win(static_cast<int>(i), cp, h, w, oh, ow, k);
    float best[W];
    int at[W];
#pragma unroll
    for (int j = 0; j < W; ++j) best[j] = -INFINITY, at[j] = -1;
    for (int p = 0; p < k * k; ++p) {
      const Pack<T, W> v = load_pack<W>(x, win.pack(p));
#pragma unroll
      for (int j = 0; j < W; ++j) {
        const float f = to_float(v.v[j]);
        if (f > best[j]) best[j] = f, at[j] = p;  // strict: the first maximum; NaN and -inf windows none
      }
    }
    if (relu_mask)  // a ReLU's output: a zero maximum means the ReLU passed nothing
#pragma unroll
      for (int j = 0; j < W; ++j)
        if (!(best[j] > 0.0f)) at[j] = -1;
    const Pack<T, W> g = load_pack<W>(dy, i);
    for (int p = 0; p < k * k; ++p) {
      const int64_t at_p = win.pack(p);
      Pack<T, W> out;
      if (accumulate) out = load_pack<W>(dx, at_p);
#pragma unroll
      for (int j = 0; j < W; ++j) {
        const float v = at[j] == p ? to_float(g.v[j]) : 0.0f;
        out.v[j] = from_float<T>(accumulate ? to_float(out.v[j]) + v : v);
      }
      store_pack(dx, at_p, out);
    }
  }
}

// ---- overlapping windows ----
// Output window i = ((img * oh + oy) * ow + ox) * cp + cg starts at (oy * s - pad, ox * s - pad).
struct PoolShape {
  int cp, h, w, oh, ow, k, s, pad;
};

template <typename T, int W>
__global__ void forward_indexed_kernel(const T* x, T* y, uint8_t* index, int total, PoolShape g) {
  GRID_STRIDE(i, total) {
    const int ii = static_cast<int>(i), cg = ii % g.cp, rest = ii / g.cp, ox = rest % g.ow, oy = (rest / g.ow) % g.oh,
              img = rest / (g.ow * g.oh), y0 = oy * g.s - g.pad, x0 = ox * g.s - g.pad;
    float best[W];
    int at[W];
#pragma unroll
    for (int j = 0; j < W; ++j) best[j] = -INFINITY, at[j] = 255;
    for (int dy = 0; dy < g.k; ++dy) {
      const int iy = y0 + dy;
      if (iy < 0 || iy >= g.h) continue;
      for (int dx = 0; dx < g.k; ++dx) {
        const int ix = x0 + dx;
        if (ix < 0 || ix >= g.w) continue;
        const Pack<T, W> v = load_pack<W>(x, ((static_cast<int64_t>(img) * g.h + iy) * g.w + ix) * g.cp + cg);
#pragma unroll
        for (int j = 0; j < W; ++j) {
          const float f = to_float(v.v[j]);
          if (f > best[j]) best[j] = f, at[j] = dy * g.k + dx;  // strict: the first maximum; NaN never
        }
      }
    }
    Pack<T, W> out;
    Pack<uint8_t, W> where;
#pragma unroll
    for (int j = 0; j < W; ++j) out.v[j] = from_float<T>(best[j]), where.v[j] = static_cast<uint8_t>(at[j]);
    store_pack(y, i, out);
    store_pack(index, i, where);
  }
}

// Input element i = ((img * h + iy) * w + ix) * cp + cg lies in the windows oy0..oy1 x ox0..ox1:
// oy * s <= iy + pad <= oy * s + k - 1.
template <typename T, int W>
__global__ void backward_indexed_kernel(const uint8_t* index, const T* dy, T* dx, int total, PoolShape g,
                                        bool accumulate) {
  GRID_STRIDE(i, total) {
    const int ii = static_cast<int>(i), cg = ii % g.cp, rest = ii / g.cp, ix = rest % g.w, iy = (rest / g.w) % g.h,
              img = rest / (g.w * g.h), ty = iy + g.pad, tx = ix + g.pad;
    const int oy0 = ty >= g.k ? (ty - g.k) / g.s + 1 : 0, oy1 = min(ty / g.s, g.oh - 1);
    const int ox0 = tx >= g.k ? (tx - g.k) / g.s + 1 : 0, ox1 = min(tx / g.s, g.ow - 1);
    float sum[W] = {};
    for (int oy = oy0; oy <= oy1; ++oy)
      for (int ox = ox0; ox <= ox1; ++ox) {
        const int64_t win = ((static_cast<int64_t>(img) * g.oh + oy) * g.ow + ox) * g.cp + cg;
        const int here = (ty - oy * g.s) * g.k + (tx - ox * g.s);
        const Pack<uint8_t, W> at = load_pack<W>(index, win);
        bool picked = false;
#pragma unroll
        for (int j = 0; j < W; ++j) picked = picked || at.v[j] == here;
        if (!picked) continue;  // most windows: dy not read
        const Pack<T, W> d = load_pack<W>(dy, win);
#pragma unroll
        for (int j = 0; j < W; ++j)
          if (at.v[j] == here) sum[j] += to_float(d.v[j]);
      }
    Pack<T, W> out;
    if (accumulate) out = load_pack<W>(dx, i);
#pragma unroll
    for (int j = 0; j < W; ++j) out.v[j] = from_float<T>(accumulate ? to_float(out.v[j]) + sum[j] : sum[j]);
    store_pack(dx, i, out);
  }
}

PoolShape pool_shape(int64_t packs_per_pixel, int64_t h, int64_t w, int64_t out_h, int64_t out_w, int64_t kernel,
                     int64_t stride, int64_t pad) {
  return {static_cast<int>(packs_per_pixel), static_cast<int>(h),      static_cast<int>(w),
          static_cast<int>(out_h),           static_cast<int>(out_w),  static_cast<int>(kernel),
          static_cast<int>(stride),          static_cast<int>(pad)};
}

// Windows x channel packs: under 2^31, as max_pool_tiled_fits() made sure when the plan compiled.
int windows(int64_t n, int64_t c, int64_t out_h, int64_t out_w, int width) {
  return static_cast<int>(n * out_h * out_w * (c / width));
}

}  // namespace

bool max_pool_tiled_fits(int64_t n, int64_t c, int64_t out_h, int64_t out_w) {
  return n * out_h * out_w * c < (int64_t{1} << 31);  // at one element a thread, the most there are
}

void max_pool_forward_tiled(const void* x, void* y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t out_h,
                            int64_t out_w, int64_t kernel, DType type, cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    packed<T>(c, {x, y}, [&](auto width, int64_t packs) {
      constexpr int W = decltype(width)::value;
      const int total = windows(n, c, out_h, out_w, W);
      forward_kernel<T, W><<<blocks_for(total), threads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), total, static_cast<int>(packs), static_cast<int>(h),
          static_cast<int>(w), static_cast<int>(out_h), static_cast<int>(out_w), static_cast<int>(kernel));
    });
  });
}

void max_pool_backward_tiled(const void* x, const void* dy, void* dx, int64_t n, int64_t c, int64_t h, int64_t w,
                             int64_t out_h, int64_t out_w, int64_t kernel, bool accumulate, bool relu_mask,
                             DType type, cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    packed<T>(c, {x, dy, dx}, [&](auto width, int64_t packs) {
      constexpr int W = decltype(width)::value;
      const int total = windows(n, c, out_h, out_w, W);
      backward_kernel<T, W><<<blocks_for(total), threads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), total, static_cast<int>(packs),
          static_cast<int>(h), static_cast<int>(w), static_cast<int>(out_h), static_cast<int>(out_w),
          static_cast<int>(kernel), accumulate, relu_mask);
    });
  });
}

bool max_pool_indexed_fits(int64_t n, int64_t c, int64_t h, int64_t w, int64_t out_h, int64_t out_w, int64_t kernel) {
  constexpr int64_t limit = int64_t{1} << 31;  // at one element a thread, the most there are
  return kernel >= 1 && kernel * kernel < 255 && n * h * w * c < limit && n * out_h * out_w * c < limit;
}

void max_pool_forward_indexed(const void* x, void* y, uint8_t* index, int64_t n, int64_t c, int64_t h, int64_t w,
                              int64_t out_h, int64_t out_w, int64_t kernel, int64_t stride, int64_t pad, DType type,
                              cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    packed<T>(c, {x, y, index}, [&](auto width, int64_t packs) {
      constexpr int W = decltype(width)::value;
      const int total = static_cast<int>(n * out_h * out_w * packs);
      forward_indexed_kernel<T, W><<<blocks_for(total), threads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<T*>(y), index, total,
          pool_shape(packs, h, w, out_h, out_w, kernel, stride, pad));
    });
  });
}

void max_pool_backward_indexed(const uint8_t* index, const void* dy, void* dx, int64_t n, int64_t c, int64_t h,
                               int64_t w, int64_t out_h, int64_t out_w, int64_t kernel, int64_t stride, int64_t pad,
                               bool accumulate, DType type, cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    packed<T>(c, {index, dy, dx}, [&](auto width, int64_t packs) {
      constexpr int W = decltype(width)::value;
      const int total = static_cast<int>(n * h * w * packs);
      backward_indexed_kernel<T, W><<<blocks_for(total), threads, 0, stream>>>(
          index, static_cast<const T*>(dy), static_cast<T*>(dx), total,
          pool_shape(packs, h, w, out_h, out_w, kernel, stride, pad), accumulate);
    });
  });
}

}  // namespace cnnbench::cuda
