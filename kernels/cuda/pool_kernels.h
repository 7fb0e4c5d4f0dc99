// kernels/cuda/pool_kernels.h — max pooling, forward and backward, on NHWC activations of the
// plan's compute type: windows that tile the input (kernel == stride, no padding: VGG's 2x2/2),
// and windows that overlap (ResNet's 3x3/2 with padding, Inception's 3x3/1 and 3x3/2). A thread
// takes 16 bytes of channels (8 halves, 4 floats; one element where the channels or a pointer do
// not allow it). Asynchronous on `stream`; each checks its launch.
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

// Overlapping windows (any square kernel up to 15, stride and padding; padding never wins). The
// forward also writes, per output element, its window's first maximum's place in the window
// (row-major, as the reference picks; 255 where the window has none: NaN and -inf only), one
// byte each; the backward then gathers for every input element the gradients of the windows
// that picked it, in window order: every dx element written once (or added to), no atomics.
// Both take the input's and the output's elements < 2^31 (max_pool_indexed_fits()).
bool max_pool_indexed_fits(int64_t n, int64_t c, int64_t h, int64_t w, int64_t out_h, int64_t out_w, int64_t kernel);
void max_pool_forward_indexed(const void* x, void* y, uint8_t* index, int64_t n, int64_t c, int64_t h, int64_t w,
                              int64_t out_h, int64_t out_w, int64_t kernel, int64_t stride, int64_t pad, DType type,
                              cudaStream_t stream);
void max_pool_backward_indexed(const uint8_t* index, const void* dy, void* dx, int64_t n, int64_t c, int64_t h,
                               int64_t w, int64_t out_h, int64_t out_w, int64_t kernel, int64_t stride, int64_t pad,
                               bool accumulate, DType type, cudaStream_t stream);

}  // namespace cnnbench::cuda
