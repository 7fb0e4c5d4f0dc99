// kernels/cuda/kernel_util.cuh — what the .cu files of the cuda plan's kernels share: launch
// sizes, the grid-stride loop, loads and stores in fp32 arithmetic for the three element types,
// and the dispatch from a DType to its element type. Internal to kernels/cuda/ (each file gets
// its own copy: everything is in an anonymous namespace).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/dtype.h"

namespace cnnbench::cuda {
namespace {

constexpr int threads = 256;

unsigned blocks_for(int64_t count) {
  const int64_t b = (count + threads - 1) / threads;
  return static_cast<unsigned>(b < 65535 * 16 ? b : 65535 * 16);  // grid-stride loops cover the rest
}

#define GRID_STRIDE(i, count) \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (count); i += int64_t{gridDim.x} * blockDim.x)

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

// Calls f with a null pointer of the element type of `type`.
template <typename F>
void dispatch(DType type, F&& f) {
  switch (type) {
    case DType::f32: f(static_cast<float*>(nullptr)); break;
    case DType::f16: f(static_cast<__half*>(nullptr)); break;
    case DType::bf16: f(static_cast<__nv_bfloat16*>(nullptr)); break;
  }
  CUDA_CHECK(cudaGetLastError());  // a bad launch configuration shows here
}

}  // namespace
}  // namespace cnnbench::cuda
