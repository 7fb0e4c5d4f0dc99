// kernels/cuda/pool_kernels.h — max pooling whose windows tile the input (kernel == stride, no
// padding: VGG's 2x2/2), forward and backward, on NHWC activations of the plan's compute type.
// One thread a window and 16 bytes of channels (8 halves, 4 floats; one element where the
// channels or a pointer do not allow it). Asynchronous on `stream`; each checks its launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/dtype.h"

namespace cnnbench::cuda {

// y = the window's maximum per channel (a NaN loses to any number, as cuDNN's NOT_PROPAGATE_NAN).
void max_pool_forward_tiled(const void* x, void* y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t out_h,
                            int64_t out_w, int64_t kernel, DType type, cudaStream_t stream);

// dx = dy at the window's first maximum (row-major, as the reference picks; a window of NaN and
// -inf only passes none), zero elsewhere (or added to dx): every dx element written once. With
// `relu_mask` (x a ReLU's output), a maximum that is not positive passes none either: the ReLU's
// backward done too.
// Both take windows x channels / (16 / element size) < 2^31 (max_pool_tiled_fits()).
bool max_pool_tiled_fits(int64_t n, int64_t c, int64_t out_h, int64_t out_w);
void max_pool_backward_tiled(const void* x, const void* dy, void* dx, int64_t n, int64_t c, int64_t h, int64_t w,
                             int64_t out_h, int64_t out_w, int64_t kernel, bool accumulate, bool relu_mask,
                             DType type, cudaStream_t stream);

}  // namespace cnnbench::cuda
