#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <type_traits>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/kernel_util.cuh"
#include "kernels/dropout_mask.h"
#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {
namespace {

template <typename T>
__global__ void images_kernel(const float* in, T* out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t cp,
                              bool in_nhwc) {
  const int64_t total = n * h * w * cp;
  GRID_STRIDE(i, total) {
    const int64_t ch = i % cp, pixel = i / cp;  // pixel = (img * h + y) * w + x
    float v = 0;
    if (ch < c) {
      const int64_t img = pixel / (h * w), p = pixel % (h * w);
      v = in_nhwc ? in[pixel * c + ch] : in[(img * c + ch) * h * w + p];
    }
    store(out, i, v);
  }
}

template <typename T, int W>
__global__ void relu_kernel(const T* x, T* y, int64_t groups, float cap) {
  GRID_STRIDE(g, groups) {
    Pack<T, W> p = load_pack<W>(x, g);
#pragma unroll
    for (int j = 0; j < W; ++j) p.v[j] = from_float<T>(fminf(fmaxf(to_float(p.v[j]), 0.0f), cap));
    store_pack(y, g, p);
  }
}

template <typename T, int W>
__global__ void relu_backward_kernel(const T* y, const T* dy, T* dx, int64_t groups, bool accumulate, float cap) {
  GRID_STRIDE(g, groups) {
    const Pack<T, W> out = load_pack<W>(y, g), grad = load_pack<W>(dy, g);
    Pack<T, W> d;
    if (accumulate) d = load_pack<W>(dx, g);
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const float v = to_float(out.v[j]);
      const float m = v > 0.0f && v < cap ? to_float(grad.v[j]) : 0.0f;
      d.v[j] = from_float<T>(accumulate ? to_float(d.v[j]) + m : m);
    }
    store_pack(dx, g, d);
  }
}

template <typename T>
__global__ void dropout_kernel(const T* x, T* y, int64_t count, uint64_t seed, int node, const uint64_t* step,
                               float rate, bool accumulate) {
  const uint64_t s = *step;
  const float scale = 1.0f / (1.0f - rate);
  GRID_STRIDE(i, count) {
    const float g = dropout_keeps(seed, node, s, static_cast<uint64_t>(i), rate) ? load(x, i) * scale : 0.0f;
    store(y, i, accumulate ? load(y, i) + g : g);
  }
}

__global__ void store_value_kernel(uint64_t* dst, uint64_t value) { *dst = value; }

template <typename T, int W>
__global__ void add_kernel(const T* a, const T* b, T* out, int64_t groups, bool relu) {
  GRID_STRIDE(g, groups) {
    const Pack<T, W> pa = load_pack<W>(a, g), pb = load_pack<W>(b, g);
    Pack<T, W> o;
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const float s = to_float(pa.v[j]) + to_float(pb.v[j]);
      o.v[j] = from_float<T>(relu ? fmaxf(s, 0.0f) : s);
    }
    store_pack(out, g, o);
  }
}

// da and db may be the same tensor (an input read twice) only with both accumulating: the
// second store then adds to the first.
template <typename T, int W>
__global__ void add_backward_kernel(const T* out, const T* dy, T* da, T* db, int64_t groups, bool relu, bool acc_a,
                                    bool acc_b) {
  GRID_STRIDE(g, groups) {
    const Pack<T, W> po = load_pack<W>(out, g), pd = load_pack<W>(dy, g);
    float grad[W];
#pragma unroll
    for (int j = 0; j < W; ++j) grad[j] = (!relu || to_float(po.v[j]) > 0.0f) ? to_float(pd.v[j]) : 0.0f;
    Pack<T, W> r;
    if (acc_a) r = load_pack<W>(da, g);
#pragma unroll
    for (int j = 0; j < W; ++j) r.v[j] = from_float<T>(acc_a ? to_float(r.v[j]) + grad[j] : grad[j]);
    store_pack(da, g, r);
    if (acc_b) r = load_pack<W>(db, g);
#pragma unroll
    for (int j = 0; j < W; ++j) r.v[j] = from_float<T>(acc_b ? to_float(r.v[j]) + grad[j] : grad[j]);
    store_pack(db, g, r);
  }
}

// W divides `features` where W > 1, so a group's features are f0 .. f0 + W - 1 (one division a group).
template <typename T, int W>
__global__ void bias_kernel(T* y, const float* bias, int64_t groups, int64_t features, bool relu) {
  GRID_STRIDE(g, groups) {
    const int64_t f0 = g * W % features;
    Pack<T, W> p = load_pack<W>(y, g);
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const float v = to_float(p.v[j]) + bias[f0 + j];
      p.v[j] = from_float<T>(relu ? fmaxf(v, 0.0f) : v);
    }
    store_pack(y, g, p);
  }
}

// Blocks of 32 features x 8 row-lanes; each block sums a slice of rows, then adds atomically.
// With `mask`, the gradient first passes a ReLU whose output is y (dy = y > 0 ? dy : 0, written
// back): the ReLU's backward and the bias gradient in one read of dy.
constexpr int64_t bias_rows_per_block = 2048;
template <typename T, bool mask>
__global__ void bias_grad_kernel(const T* y, T* dy, float* db, int64_t rows, int64_t features) {
  __shared__ float part[8][33];
  const int64_t f = blockIdx.x * 32 + threadIdx.x;
  const int64_t begin = blockIdx.y * bias_rows_per_block;
  const int64_t end = begin + bias_rows_per_block < rows ? begin + bias_rows_per_block : rows;
  float sum = 0;
  if (f < features)
    for (int64_t r = begin + threadIdx.y; r < end; r += 8) {
      const int64_t i = r * features + f;
      if (mask) {
        const float g = load(y, i) > 0.0f ? load(dy, i) : 0.0f;
        store(dy, i, g);
        sum += g;
      } else {
        sum += load(dy, i);
      }
    }
  part[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && f < features) {
    for (int k = 1; k < 8; ++k) sum += part[k][threadIdx.x];
    atomicAdd(db + f, sum);
  }
}

// The same sums 16 bytes at a time, for rows whose `lanes` = features / W packs of W features fit
// one block: thread t takes pack t % lanes of rows t / lanes, t / lanes + per_pass, ... of the
// block's slice (per_pass = blockDim.x / lanes rows a pass; the threads past per_pass * lanes
// idle), so a warp reads consecutive 16-byte packs. Each thread keeps W sums, then the block adds
// its per_pass partial sums of each feature in shared memory (feature-major: no bank conflicts)
// and one thread per pack adds them atomically. The scalar kernel above reads 2 bytes a thread.
template <typename T, int W, bool mask>
__global__ void bias_grad_packed_kernel(const T* y, T* dy, float* db, int64_t rows, int lanes, int64_t rows_per_block) {
  __shared__ float part[W][threads];
  const int per_pass = threads / lanes;
  const int lane = threadIdx.x % lanes, row_in_pass = threadIdx.x / lanes;
  const int64_t begin = blockIdx.x * rows_per_block;
  const int64_t end = begin + rows_per_block < rows ? begin + rows_per_block : rows;
  float sum[W] = {};
  if (row_in_pass < per_pass) {
#pragma unroll 4
    for (int64_t r = begin + row_in_pass; r < end; r += per_pass) {
      const int64_t g = r * lanes + lane;
      Pack<T, W> p = load_pack<W>(dy, g);
      if (mask) {
        const Pack<T, W> out = load_pack<W>(y, g);
#pragma unroll
        for (int j = 0; j < W; ++j)
          if (!(to_float(out.v[j]) > 0.0f)) p.v[j] = from_float<T>(0.0f);
        store_pack(dy, g, p);
      }
#pragma unroll
      for (int j = 0; j < W; ++j) sum[j] += to_float(p.v[j]);
    }
  }
#pragma unroll
  for (int j = 0; j < W; ++j) part[j][threadIdx.x] = sum[j];
  __syncthreads();
  if (threadIdx.x < lanes) {
#pragma unroll
    for (int j = 0; j < W; ++j) {
      float s = 0;
      for (int k = 0; k < per_pass; ++k) s += part[j][k * lanes + lane];
      atomicAdd(db + lane * W + j, s);
    }
  }
}

template <typename T>
__global__ void shortcut_kernel(const T* in, T* out, int64_t n, int64_t ic, int64_t ih, int64_t iw, int64_t oc,
                                int64_t oh, int64_t ow, int64_t stride, int64_t pad, int64_t offset) {
  GRID_STRIDE(i, n * oh * ow * oc) {
    const int64_t c = i % oc, x = (i / oc) % ow, y = (i / (oc * ow)) % oh, img = i / (oc * ow * oh);
    const int64_t src_c = c - pad, src_y = y * stride + offset, src_x = x * stride + offset;
    float v = 0;
    if (src_c >= 0 && src_c < ic && src_y < ih && src_x < iw)
      v = load(in, ((img * ih + src_y) * iw + src_x) * ic + src_c);
    store(out, i, v);
  }
}

template <typename T>
__global__ void shortcut_backward_kernel(const T* dout, T* din, int64_t n, int64_t ic, int64_t ih, int64_t iw,
                                         int64_t oc, int64_t oh, int64_t ow, int64_t stride, int64_t pad,
                                         int64_t offset, bool accumulate) {
  GRID_STRIDE(i, n * ih * iw * ic) {
    const int64_t c = i % ic, x = (i / ic) % iw, y = (i / (ic * iw)) % ih, img = i / (ic * iw * ih);
    const int64_t ry = y - offset, rx = x - offset;  // where the output starts reading
    float g = 0;
    if (ry >= 0 && rx >= 0 && ry % stride == 0 && rx % stride == 0 && ry / stride < oh && rx / stride < ow)
      g = load(dout, ((img * oh + ry / stride) * ow + rx / stride) * oc + c + pad);
    store(din, i, accumulate ? load(din, i) + g : g);
  }
}

template <typename T>
__global__ void copy_channels_kernel(const T* src, int64_t src_c, int64_t src_start, T* dst, int64_t dst_c,
                                     int64_t dst_start, int64_t rows, int64_t channels, bool accumulate) {
  GRID_STRIDE(i, rows * channels) {
    const int64_t c = i % channels, r = i / channels;
    const int64_t to = r * dst_c + dst_start + c;
    const float v = load(src, r * src_c + src_start + c);
    store(dst, to, accumulate ? load(dst, to) + v : v);
  }
}

__global__ void non_finite_kernel(const float* v, int64_t count, int* flag) {
  bool bad = false;
  GRID_STRIDE(i, count) bad |= !isfinite(v[i]);
  if (__syncthreads_or(bad) && threadIdx.x == 0) *flag = 1;
}

template <typename X, typename Y>
__global__ void convert_kernel(const X* x, Y* y, int64_t count, float scale) {
  GRID_STRIDE(i, count) store(y, i, scale * load(x, i));
}

}  // namespace

void images_to_nhwc(const float* images, void* out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t c_padded,
                    bool images_nhwc, DType type, cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    images_kernel<<<blocks_for(n * h * w * c_padded), threads, 0, stream>>>(images, static_cast<T*>(out), n, c, h, w,
                                                                           c_padded, images_nhwc);
  });
}

void relu_forward(const void* x, void* y, int64_t count, DType type, cudaStream_t stream, float cap) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    packed<T>(count, {x, y}, [&](auto w, int64_t groups) {
      relu_kernel<T, decltype(w)::value>
          <<<blocks_for(groups), threads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), groups, cap);
    });
  });
}

void relu_backward(const void* y, const void* dy, void* dx, int64_t count, bool accumulate, DType type,
                   cudaStream_t stream, float cap) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    packed<T>(count, {y, dy, dx}, [&](auto w, int64_t groups) {
      relu_backward_kernel<T, decltype(w)::value><<<blocks_for(groups), threads, 0, stream>>>(
          static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), groups, accumulate, cap);
    });
  });
}

void dropout_apply(const void* x, void* y, int64_t count, uint64_t seed, int node, const uint64_t* step, float rate,
                   bool accumulate, DType type, cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    dropout_kernel<<<blocks_for(count), threads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), count, seed,
                                                              node, step, rate, accumulate);
  });
}

void store_value(uint64_t* dst, uint64_t value, cudaStream_t stream) {
  store_value_kernel<<<1, 1, 0, stream>>>(dst, value);
  CUDA_CHECK(cudaGetLastError());
}

void add_forward(const void* a, const void* b, void* out, int64_t count, bool relu, DType type, cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    packed<T>(count, {a, b, out}, [&](auto w, int64_t groups) {
      add_kernel<T, decltype(w)::value><<<blocks_for(groups), threads, 0, stream>>>(
          static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), groups, relu);
    });
  });
}

void add_backward(const void* out, const void* dy, void* da, void* db, int64_t count, bool relu, bool accumulate_a,
                  bool accumulate_b, DType type, cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    packed<T>(count, {out, dy, da, db}, [&](auto w, int64_t groups) {
      add_backward_kernel<T, decltype(w)::value><<<blocks_for(groups), threads, 0, stream>>>(
          static_cast<const T*>(out), static_cast<const T*>(dy), static_cast<T*>(da), static_cast<T*>(db), groups, relu,
          accumulate_a, accumulate_b);
    });
  });
}

void add_bias(void* y, const float* bias, int64_t rows, int64_t features, bool relu, DType type, cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    packed<T>(rows * features, {y}, [&](auto w, int64_t groups) {
      bias_kernel<T, decltype(w)::value>
          <<<blocks_for(groups), threads, 0, stream>>>(static_cast<T*>(y), bias, groups, features, relu);
    }, features);
  });
}

namespace {
// Blocks for the packed kernel: about one wave of 256-thread blocks on a large GPU (fewer where
// the rows are few), each over an equal slice of rows.
constexpr int64_t bias_packed_blocks = 1024;

void bias_grad(const void* y, void* dy, float* db, int64_t rows, int64_t features, DType type, cudaStream_t stream) {
  CUDA_CHECK(cudaMemsetAsync(db, 0, features * sizeof(float), stream));
  if (rows <= 0 || features <= 0) return;
  bool done = false;
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    constexpr int W = 16 / sizeof(T);
    const int64_t lanes = features / W;
    const bool aligned = reinterpret_cast<uintptr_t>(dy) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    if (features % W != 0 || lanes > threads || !aligned) return;
    const int64_t per_pass = threads / lanes;
    const int64_t passes = (rows + per_pass - 1) / per_pass;
    const int64_t blocks = std::min(bias_packed_blocks, passes);
    const int64_t rows_per_block = (passes + blocks - 1) / blocks * per_pass;
    const auto grid = static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
    if (y)
      bias_grad_packed_kernel<T, W, true><<<grid, threads, 0, stream>>>(
          static_cast<const T*>(y), static_cast<T*>(dy), db, rows, static_cast<int>(lanes), rows_per_block);
    else
      bias_grad_packed_kernel<T, W, false><<<grid, threads, 0, stream>>>(
          nullptr, static_cast<T*>(dy), db, rows, static_cast<int>(lanes), rows_per_block);
    done = true;
  });
  if (done) return;
  const dim3 grid(static_cast<unsigned>((features + 31) / 32),
                  static_cast<unsigned>((rows + bias_rows_per_block - 1) / bias_rows_per_block));
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    if (y)
      bias_grad_kernel<T, true>
          <<<grid, dim3(32, 8), 0, stream>>>(static_cast<const T*>(y), static_cast<T*>(dy), db, rows, features);
    else
      bias_grad_kernel<T, false><<<grid, dim3(32, 8), 0, stream>>>(nullptr, static_cast<T*>(dy), db, rows, features);
  });
}
}  // namespace

void bias_gradient(const void* dy, float* db, int64_t rows, int64_t features, DType type, cudaStream_t stream) {
  bias_grad(nullptr, const_cast<void*>(dy), db, rows, features, type, stream);  // read only without a mask
}

void relu_mask_bias_gradient(const void* y, void* dy, float* db, int64_t rows, int64_t features, DType type,
                             cudaStream_t stream) {
  bias_grad(y, dy, db, rows, features, type, stream);
}

void shortcut_forward(const void* in, void* out, int64_t n, int64_t in_c, int64_t in_h, int64_t in_w, int64_t out_c,
                      int64_t out_h, int64_t out_w, int64_t stride, int64_t pad_front, int64_t offset, DType type,
                      cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    shortcut_kernel<<<blocks_for(n * out_h * out_w * out_c), threads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<T*>(out), n, in_c, in_h, in_w, out_c, out_h, out_w, stride, pad_front,
        offset);
  });
}

void shortcut_backward(const void* dout, void* din, int64_t n, int64_t in_c, int64_t in_h, int64_t in_w,
                       int64_t out_c, int64_t out_h, int64_t out_w, int64_t stride, int64_t pad_front, int64_t offset,
                       bool accumulate, DType type, cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    shortcut_backward_kernel<<<blocks_for(n * in_h * in_w * in_c), threads, 0, stream>>>(
        static_cast<const T*>(dout), static_cast<T*>(din), n, in_c, in_h, in_w, out_c, out_h, out_w, stride, pad_front,
        offset, accumulate);
  });
}

void copy_channels(const void* src, int64_t src_c, int64_t src_start, void* dst, int64_t dst_c, int64_t dst_start,
                   int64_t rows, int64_t channels, bool accumulate, DType type, cudaStream_t stream) {
  if (rows * channels == 0) return;
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    copy_channels_kernel<<<blocks_for(rows * channels), threads, 0, stream>>>(
        static_cast<const T*>(src), src_c, src_start, static_cast<T*>(dst), dst_c, dst_start, rows, channels,
        accumulate);
  });
}

void flag_non_finite(const float* values, int64_t count, int* flag, cudaStream_t stream) {
  if (count <= 0) return;
  non_finite_kernel<<<blocks_for(count), threads, 0, stream>>>(values, count, flag);
  CUDA_CHECK(cudaGetLastError());
}

void convert(const void* x, DType from, void* y, DType to, int64_t count, float scale, cudaStream_t stream) {
  if (count <= 0) return;
  dispatch(from, [&](auto* a) {
    using X = std::remove_pointer_t<decltype(a)>;
    dispatch(to, [&](auto* b) {
      using Y = std::remove_pointer_t<decltype(b)>;
      convert_kernel<<<blocks_for(count), threads, 0, stream>>>(static_cast<const X*>(x), static_cast<Y*>(y), count,
                                                                scale);
    });
  });
}

}  // namespace cnnbench::cuda
