// kernels/cuda/elementwise.h — SGD with momentum (fp32 master weights) and casts between fp32
// and the 16-bit types (round to nearest even, as the CPU path), on whole arenas. Asynchronous
// on `stream`; the same formulas as kernels/cpu_ops.h, against which tests/test_cuda_ops.cc
// checks them on a GPU. The kernels between cuDNN and cuBLAS calls are in tensor_kernels.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/tensor_chunks.h"

namespace cnnbench::cuda {

// With skip_if set, the update does nothing when *skip_if != 0 (read on the device: loss scaling
// skips a step with inf/NaN gradients without the host waiting for the check).
void sgd_update(float* w, const float* g, float* v, int64_t count, float lr, float momentum, float weight_decay,
                bool nesterov, float gradient_scale, cudaStream_t stream, const int* skip_if = nullptr);

// LARS (kernels/cpu_ops.h's lars_update, tensor by tensor) over many tensors in two launches:
// `chunks` (on the device, kernels/tensor_chunks.h) are every chunk of the tensors
// [first_tensor, first_tensor + tensor_count) and of no other; adapt[t] says whether tensor t
// takes a trust ratio; norms holds two doubles per tensor (|w|^2, |scale g|^2), zeroed and
// summed here. skip_if as sgd_update's.
struct LarsSettings {
  float lr, momentum, weight_decay, eta, gradient_scale;
  bool nesterov;
};
void lars_update(float* w, const float* g, float* v, const TensorChunk* chunks, int64_t chunk_count,
                 const uint8_t* adapt, double* norms, int32_t first_tensor, int32_t tensor_count,
                 const LarsSettings& settings, cudaStream_t stream, const int* skip_if = nullptr);

// 16-bit values are raw bits (uint16_t) of `type` (bf16 or f16).
void cast_from_f32(const float* in, uint16_t* out, int64_t count, DType type, cudaStream_t stream);
void cast_to_f32(const uint16_t* in, float* out, int64_t count, DType type, float scale, cudaStream_t stream);

}  // namespace cnnbench::cuda
