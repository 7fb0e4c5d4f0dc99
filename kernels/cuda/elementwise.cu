#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/kernel_util.cuh"

namespace cnnbench::cuda {
namespace {

// One block per chunk: the chunk's tensor takes weight decay unless it is a batch norm's (and
// batch norm's are not decayed); then momentum SGD as the CPU's sgd_update.
__global__ void sgd_kernel(float* w, const float* g, float* v, const TensorChunk* chunks, int64_t first,
                           const uint8_t* batch_norm, SgdSettings p, const int* skip_if) {
  if (skip_if && *skip_if) return;
  const TensorChunk c = chunks[first + blockIdx.x];
  const float decay = p.decay_batch_norm || !batch_norm[c.tensor] ? p.weight_decay : 0.0f;
  for (int32_t k = threadIdx.x; k < c.elements; k += blockDim.x) {
    const int64_t i = c.start + k;
    const float grad = p.gradient_scale * g[i] + decay * w[i];
    const float vel = p.momentum * v[i] + grad;
    v[i] = vel;
    w[i] -= p.lr * (p.nesterov ? grad + p.momentum * vel : vel);
  }
}

// One block per chunk: the chunk's sums of squares into its partials (adapted tensors only).
__global__ void lars_norms_kernel(const float* w, const float* g, const TensorChunk* chunks, int64_t first,
                                  const uint8_t* adapt, double* partials, float gradient_scale, const int* skip_if) {
  if (skip_if && *skip_if) return;
  const int64_t at = first + blockIdx.x;
  const TensorChunk c = chunks[at];
  if (!adapt[c.tensor]) return;
  __shared__ double ww[threads], gg[threads];
  double sw = 0, sg = 0;
  for (int32_t i = threadIdx.x; i < c.elements; i += blockDim.x) {
    const double wi = w[c.start + i], gi = static_cast<double>(gradient_scale) * g[c.start + i];
    sw += wi * wi;
    sg += gi * gi;
  }
  ww[threadIdx.x] = sw;
  gg[threadIdx.x] = sg;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      ww[threadIdx.x] += ww[threadIdx.x + s];
      gg[threadIdx.x] += gg[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partials[2 * at] = ww[0];
    partials[2 * at + 1] = gg[0];
  }
}

// One block per chunk: its tensor's norms (its chunks' partials summed by the first warp in a
// fixed order, lane-strided then a fixed shuffle tree: the same sum in every block of the
// tensor), the trust ratio, then the momentum update as the CPU's lars_update.
__global__ void lars_apply_kernel(float* w, const float* g, float* v, const TensorChunk* chunks, int64_t first,
                                  const int32_t* first_chunk, const uint8_t* adapt, const double* partials,
                                  LarsSettings p, const int* skip_if) {
  if (skip_if && *skip_if) return;
  const TensorChunk c = chunks[first + blockIdx.x];
  __shared__ float shared_rate, shared_decay;
  if (threadIdx.x < 32) {
    float rate = p.lr, decay = 0.0f;
    if (adapt[c.tensor]) {
      double ww = 0, gg = 0;
      for (int32_t k = first_chunk[c.tensor] + threadIdx.x; k < first_chunk[c.tensor + 1]; k += 32) {
        ww += partials[2 * int64_t{k}];
        gg += partials[2 * int64_t{k} + 1];
      }
      for (int offset = 16; offset > 0; offset /= 2) {
        ww += __shfl_down_sync(0xffffffffu, ww, offset);
        gg += __shfl_down_sync(0xffffffffu, gg, offset);
      }
      const double w_norm = sqrt(ww), g_norm = sqrt(gg);
      if (w_norm > 0 && g_norm > 0) rate = static_cast<float>(p.lr * p.eta * w_norm / (g_norm + p.weight_decay * w_norm));
      decay = p.weight_decay;
    }
    if (threadIdx.x == 0) {
      shared_rate = rate;
      shared_decay = decay;
    }
  }
  __syncthreads();
  const float rate = shared_rate, decay = shared_decay;
  for (int32_t k = threadIdx.x; k < c.elements; k += blockDim.x) {
    const int64_t i = c.start + k;
    const float grad = rate * (p.gradient_scale * g[i] + decay * w[i]);
    const float vel = p.momentum * v[i] + grad;
    v[i] = vel;
    w[i] -= p.nesterov ? p.momentum * vel + grad : vel;
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

void sgd_update(float* w, const float* g, float* v, const TensorChunk* chunks, int64_t first, int64_t count,
                const uint8_t* batch_norm, const SgdSettings& settings, cudaStream_t stream, const int* skip_if) {
  if (count <= 0) return;
  sgd_kernel<<<static_cast<unsigned>(count), threads, 0, stream>>>(w, g, v, chunks, first, batch_norm, settings,
                                                                   skip_if);
  CUDA_CHECK(cudaGetLastError());  // a bad launch configuration shows here
}

void lars_update(float* w, const float* g, float* v, const TensorChunk* chunks, int64_t first, int64_t count,
                 const int32_t* first_chunk, const uint8_t* adapt, double* partials, const LarsSettings& settings,
                 cudaStream_t stream, const int* skip_if) {
  if (count <= 0) return;
  const auto blocks = static_cast<unsigned>(count);
  lars_norms_kernel<<<blocks, threads, 0, stream>>>(w, g, chunks, first, adapt, partials, settings.gradient_scale,
                                                    skip_if);
  CUDA_CHECK(cudaGetLastError());
  lars_apply_kernel<<<blocks, threads, 0, stream>>>(w, g, v, chunks, first, first_chunk, adapt, partials, settings,
                                                    skip_if);
  CUDA_CHECK(cudaGetLastError());
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
