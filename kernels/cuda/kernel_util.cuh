// kernels/cuda/kernel_util.cuh — what the .cu files of the cuda plan's kernels share: launch
// sizes, the grid-stride loop, loads and stores in fp32 arithmetic for the three element types,
// 16-byte packs of elements, and the dispatch from a DType to its element type. Internal to
// kernels/cuda/ (each file gets its own copy: everything is in an anonymous namespace).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <initializer_list>
#include <type_traits>

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

// Elementwise kernels move W elements per access: 16 bytes (8 halves or 4 floats) where every
// pointer is 16-byte aligned and W divides the count (the plan's tensors start on 256-byte
// boundaries), else one element (W = 1). Element j of group g is element g * W + j.
template <typename T, int W>
struct alignas(sizeof(T) * W) Pack {
  T v[W];
};
template <int W, typename T>
__device__ __forceinline__ Pack<T, W> load_pack(const T* p, int64_t g) {
  return reinterpret_cast<const Pack<T, W>*>(p)[g];
}
template <int W, typename T>
__device__ __forceinline__ void store_pack(T* p, int64_t g, const Pack<T, W>& v) {
  reinterpret_cast<Pack<T, W>*>(p)[g] = v;
}
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// Calls launch(std::integral_constant<int, W>, groups) with W = 16 / sizeof(T) where it may
// (every pointer 16-byte aligned, W dividing `count` and `divides_too`), else with W = 1.
template <typename T, typename Launch>
void packed(int64_t count, std::initializer_list<const void*> pointers, Launch&& launch, int64_t divides_too = 0) {
  constexpr int W = 16 / sizeof(T);
  bool ok = count % W == 0 && (divides_too == 0 || divides_too % W == 0);
  for (const void* p : pointers) ok = ok && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  if (ok)
    launch(std::integral_constant<int, W>{}, count / W);
  else
    launch(std::integral_constant<int, 1>{}, count);
}

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
