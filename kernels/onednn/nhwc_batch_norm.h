// kernels/onednn/nhwc_batch_norm.h — training batch normalization of bf16 channels-last
// activations (an optional ReLU folded in), forward and backward, on AVX-512.
//
// Why not oneDNN's: on CPUs with AMX, oneDNN 2.6 runs bf16 convolutions on nhwc activations, and
// its batch norm on them (bnorm_jit:avx512_core_bf16) took 453 of resnet50's 1335 ms a step in
// oneDNN's primitives (batch 32, 2 threads) at 11-13.5 GB/s, where a streaming copy on the same
// cores runs at about 33 GB/s (results/amx_bf16/). Here a tensor is rows (n, y, x) of C channels:
// - forward: one pass sums each channel's values and squares (shifted by the first row's value,
//   so that a large mean does not cancel the variance away; fp32 over blocks of rows, double
//   across them), a second writes y = max(x * a + b, 0) with a = scale / sqrt(var + eps) and
//   b = shift - mean * a;
// - backward: the ReLU's mask is recomputed from x with the forward's arithmetic (the same bits),
//   one pass sums dy and dy * (x - mean) per channel, a second writes
//   dx = a * (dy - sum(dy) / M - (x - mean) / sqrt(var + eps) * sum(dy * xhat) / M).
// Threads split the rows; their partial sums are added in a fixed order, so results do not
// depend on timing. Mean and variance (biased, over the M = rows values) are oneDNN's.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cnnbench {

struct NhwcBatchNorm {
  int64_t rows = 0, channels = 0;  // rows = n * h * w; the tensor is rows x channels, dense
  float epsilon = 1e-5f;
  bool relu = false;  // y = max(bn(x), 0); the backward masks dy where bn(x) <= 0
};

// True where this CPU runs AVX-512 BF16 and channels is a multiple of 16.
bool nhwc_batch_norm_supported(const NhwcBatchNorm& shape);

// Scratch (partial sums) the kernels need with `threads` OpenMP threads.
size_t nhwc_batch_norm_scratch_bytes(const NhwcBatchNorm& shape, int threads);

// x, y: rows x channels bf16. scale, shift: per channel. mean, variance: written, per channel.
void nhwc_batch_norm_forward(const NhwcBatchNorm& shape, const uint16_t* x, const float* scale, const float* shift,
                             uint16_t* y, float* mean, float* variance, void* scratch, int threads);

// dy, dx: rows x channels bf16 (dx may be dy's or x's memory: each value is read before it is written). diff_scale, diff_shift: written.
void nhwc_batch_norm_backward(const NhwcBatchNorm& shape, const uint16_t* x, const uint16_t* dy, const float* mean,
                              const float* variance, const float* scale, const float* shift, uint16_t* dx,
                              float* diff_scale, float* diff_shift, void* scratch, int threads);

}  // namespace cnnbench
