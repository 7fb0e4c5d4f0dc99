#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"

namespace cnnbench::cuda {
namespace {

constexpr int threads = 256;

unsigned blocks_for(int64_t count) {
  const int64_t b = (count + threads - 1) / threads;
  return static_cast<unsigned>(b < 65535 * 16 ? b : 65535 * 16);  // grid-stride loops cover the rest
}

__global__ void sgd_kernel(float* w, const float* g, float* v, int64_t count, float lr, float momentum,
                           float weight_decay, bool nesterov, float gradient_scale, const int* skip_if) {
  if (skip_if && *skip_if) return;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    const float grad = gradient_scale * g[i] + weight_decay * w[i];
    const float vel = momentum * v[i] + grad;
    v[i] = vel;
    w[i] -= lr * (nesterov ? grad + momentum * vel : vel);
  }
}

__global__ void to_bf16_kernel(const float* in, uint16_t* out, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = __bfloat16_as_ushort(__float2bfloat16_rn(in[i]));
}

__global__ void to_f16_kernel(const float* in, uint16_t* out, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = __half_as_ushort(__float2half_rn(in[i]));
}

__global__ void from_bf16_kernel(const uint16_t* in, float* out, int64_t count, float scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = scale * __bfloat162float(__ushort_as_bfloat16(in[i]));
}

__global__ void from_f16_kernel(const uint16_t* in, float* out, int64_t count, float scale) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x)
    out[i] = scale * __half2float(__ushort_as_half(in[i]));
}

__global__ void add_kernel(const float* a, const float* b, float* out, int64_t count, bool relu) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    const float s = a[i] + b[i];
    out[i] = relu ? fmaxf(s, 0.0f) : s;
  }
}

// One block per row: max, sum of exponentials, then the gradient; shared-memory reductions.
__global__ void softmax_ce_kernel(const float* logits, const int32_t* labels, float* dlogits, float* loss,
                                  int64_t n, int64_t classes) {
  __shared__ float scratch[threads];
  const int64_t row = blockIdx.x;
  const float* z = logits + row * classes;
  float* dz = dlogits + row * classes;
  float m = -INFINITY;
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) m = fmaxf(m, z[k]);
  scratch[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) scratch[threadIdx.x] = fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + s]);
    __syncthreads();
  }
  const float max = scratch[0];
  __syncthreads();
  float sum = 0;
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) sum += expf(z[k] - max);
  scratch[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) scratch[threadIdx.x] += scratch[threadIdx.x + s];
    __syncthreads();
  }
  const float total = scratch[0];
  const int32_t label = labels[row];
  const float inv_n = 1.0f / static_cast<float>(n);
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x)
    dz[k] = (expf(z[k] - max) / total - (k == label ? 1.0f : 0.0f)) * inv_n;
  if (threadIdx.x == 0) loss[row] = logf(total) + max - z[label];
}


}  // namespace

void sgd_update(float* w, const float* g, float* v, int64_t count, float lr, float momentum, float weight_decay,
                bool nesterov, float gradient_scale, cudaStream_t stream, const int* skip_if) {
  if (count <= 0) return;
  sgd_kernel<<<blocks_for(count), threads, 0, stream>>>(w, g, v, count, lr, momentum, weight_decay, nesterov,
                                                        gradient_scale, skip_if);
  CUDA_CHECK(cudaGetLastError());  // a bad launch configuration shows here
}

void cast_from_f32(const float* in, uint16_t* out, int64_t count, DType type, cudaStream_t stream) {
  if (count <= 0) return;
  if (type == DType::bf16)
    to_bf16_kernel<<<blocks_for(count), threads, 0, stream>>>(in, out, count);
  else if (type == DType::f16)
    to_f16_kernel<<<blocks_for(count), threads, 0, stream>>>(in, out, count);
  else
    throw std::invalid_argument("cast_from_f32: the target type must be bf16 or f16");
  CUDA_CHECK(cudaGetLastError());  // a bad launch configuration shows here
}

void cast_to_f32(const uint16_t* in, float* out, int64_t count, DType type, float scale, cudaStream_t stream) {
  if (count <= 0) return;
  if (type == DType::bf16)
    from_bf16_kernel<<<blocks_for(count), threads, 0, stream>>>(in, out, count, scale);
  else if (type == DType::f16)
    from_f16_kernel<<<blocks_for(count), threads, 0, stream>>>(in, out, count, scale);
  else
    throw std::invalid_argument("cast_to_f32: the source type must be bf16 or f16");
  CUDA_CHECK(cudaGetLastError());  // a bad launch configuration shows here
}

void add(const float* a, const float* b, float* out, int64_t count, bool relu, cudaStream_t stream) {
  if (count <= 0) return;
  add_kernel<<<blocks_for(count), threads, 0, stream>>>(a, b, out, count, relu);
  CUDA_CHECK(cudaGetLastError());  // a bad launch configuration shows here
}

void softmax_cross_entropy(const float* logits, const int32_t* labels, float* dlogits, float* loss_per_row,
                           int64_t n, int64_t classes, cudaStream_t stream) {
  if (n <= 0) return;
  softmax_ce_kernel<<<static_cast<unsigned>(n), threads, 0, stream>>>(logits, labels, dlogits, loss_per_row, n,
                                                                      classes);
  CUDA_CHECK(cudaGetLastError());  // a bad launch configuration shows here
}

}  // namespace cnnbench::cuda
