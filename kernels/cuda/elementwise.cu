#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/kernel_util.cuh"

namespace cnnbench::cuda {
namespace {

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

}  // namespace cnnbench::cuda
