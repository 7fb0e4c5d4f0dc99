// kernels/cuda/lrn_kernels.cu — local response normalisation across the channels of NHWC rows
// (tensor_kernels.h: lrn_forward, lrn_backward), with tf.nn.lrn's parameters.
#include "kernels/cuda/kernel_util.cuh"
#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {
namespace {

template <typename T>
__device__ float lrn_scale(const T* row, int64_t c, int64_t channels, int64_t radius, float bias, float alpha) {
  float sum = 0.0f;
  for (int64_t k = c - radius > 0 ? c - radius : 0; k <= c + radius && k < channels; ++k) {
    const float v = load(row, k);
    sum += v * v;
  }
  return bias + alpha * sum;
}

template <typename T>
__global__ void lrn_forward_kernel(const T* x, T* y, int64_t rows, int64_t channels, int64_t radius, float bias,
                                   float alpha, float beta) {
  GRID_STRIDE(i, rows * channels) {
    const int64_t c = i % channels;
    const T* row = x + (i - c);
    store(y, i, load(x, i) * powf(lrn_scale(row, c, channels, radius, bias, alpha), -beta));
  }
}

template <typename T>
__global__ void lrn_backward_kernel(const T* x, const T* dy, T* dx, int64_t rows, int64_t channels, int64_t radius,
                                    float bias, float alpha, float beta, bool accumulate) {
  GRID_STRIDE(i, rows * channels) {
    const int64_t c = i % channels, base = i - c;
    const T* row = x + base;
    float cross = 0.0f;
    for (int64_t k = c - radius > 0 ? c - radius : 0; k <= c + radius && k < channels; ++k)
      cross += load(dy, base + k) * load(row, k) * powf(lrn_scale(row, k, channels, radius, bias, alpha), -beta - 1.0f);
    const float g = load(dy, i) * powf(lrn_scale(row, c, channels, radius, bias, alpha), -beta) -
                    2.0f * alpha * beta * load(x, i) * cross;
    store(dx, i, accumulate ? load(dx, i) + g : g);
  }
}

}  // namespace

void lrn_forward(const void* x, void* y, int64_t rows, int64_t channels, int64_t radius, float bias, float alpha,
                 float beta, DType type, cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    lrn_forward_kernel<<<blocks_for(rows * channels), threads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), rows, channels, radius, bias, alpha, beta);
  });
}

void lrn_backward(const void* x, const void* dy, void* dx, int64_t rows, int64_t channels, int64_t radius, float bias,
                  float alpha, float beta, bool accumulate, DType type, cudaStream_t stream) {
  dispatch(type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    lrn_backward_kernel<<<blocks_for(rows * channels), threads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), rows, channels, radius, bias, alpha,
        beta, accumulate);
  });
}

}  // namespace cnnbench::cuda
