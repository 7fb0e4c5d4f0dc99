// kernels/cuda/elementwise.h — SGD with momentum and LARS (fp32 master weights, tensor chunk by
// chunk) and casts between fp32 and the 16-bit types (round to nearest even, as the CPU path). Asynchronous
// on `stream`; the same formulas as kernels/cpu_ops.h, against which tests/test_cuda_ops.cc
// checks them on a GPU. The kernels between cuDNN and cuBLAS calls are in tensor_kernels.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/tensor_chunks.h"

namespace cnnbench::cuda {

// Momentum SGD (kernels/cpu_ops.h's sgd_update) over many tensors in one launch: chunks[first,
// first + count) (on the device, kernels/tensor_chunks.h) are every chunk of some whole tensors;
// batch_norm[t] says whether tensor t is a batch norm's scale or shift, which takes no weight
// decay unless decay_batch_norm. With skip_if set, the update does nothing when *skip_if != 0
// (read on the device: loss scaling skips a step with inf/NaN gradients without the host waiting).
struct SgdSettings {
  float lr, momentum, weight_decay, gradient_scale;
  bool nesterov, decay_batch_norm;
};
void sgd_update(float* w, const float* g, float* v, const TensorChunk* chunks, int64_t first, int64_t count,
                const uint8_t* batch_norm, const SgdSettings& settings, cudaStream_t stream,
                const int* skip_if = nullptr);

// LARS (kernels/cpu_ops.h's lars_update, tensor by tensor) over many tensors in two launches,
// with the same bits every run: chunks[first, first + count) (on the device, kernels/tensor_chunks.h)
// are every chunk of some whole tensors; first_chunk[t] .. first_chunk[t + 1] are tensor t's
// (first_chunks()); adapt[t] says whether tensor t takes a trust ratio. The first launch writes
// each chunk's |w|^2 and |scale g|^2 into partials (two doubles per chunk, indexed as chunks);
// the second sums its tensor's partials in chunk order, then updates. skip_if as sgd_update's.
struct LarsSettings {
  float lr, momentum, weight_decay, eta, gradient_scale;
  bool nesterov;
};
void lars_update(float* w, const float* g, float* v, const TensorChunk* chunks, int64_t first, int64_t count,
                 const int32_t* first_chunk, const uint8_t* adapt, double* partials, const LarsSettings& settings,
                 cudaStream_t stream, const int* skip_if = nullptr);

// 16-bit values are raw bits (uint16_t) of `type` (bf16 or f16).
void cast_from_f32(const float* in, uint16_t* out, int64_t count, DType type, cudaStream_t stream);
void cast_to_f32(const uint16_t* in, float* out, int64_t count, DType type, float scale, cudaStream_t stream);

}  // namespace cnnbench::cuda
