// kernels/onednn/bf16_weight_grad.h — the weight gradient of a 1x1 convolution in bf16, on
// AVX-512 BF16, written straight into the plain fp32 gradient arena.
//
// Why not oneDNN's: on this CPU oneDNN 2.6's bf16 1x1 backward-weights kernel ran at about half
// the speed of the same layer's forward pass, and its blocked fp32 result then needed a reorder
// into the arena. Here the positions (n, y, x) are summed in pairs, the operand order of
// vdpbf16ps: the tensor with fewer channels is interleaved chunk by chunk into L2-sized scratch,
// the other is read straight from the activations and interleaved in registers, and a 6 x 64
// register tile accumulates in fp32. On ResNet50's 1x1 layers (batch 32, 2 threads) it runs
// 1.0-1.6x oneDNN's speed.
//   dW[oc][ic] = sum over (n, y, x) of dY[n][oc][y][x] * X[n][ic][y*stride][x*stride]
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/onednn/blocked_layout.h"

namespace cnnbench {

struct WeightGrad1x1 {
  int64_t n = 0, ic = 0, oc = 0, oh = 0, ow = 0, stride = 1;
  BlockedLayout src, diff_dst;  // both bf16 with 16-channel blocks (nChw16c)
};

// True where this CPU runs AVX-512 BF16 and the shape and layouts fit the kernel: 16-channel
// blocks with the 16 channels innermost, ic and oc multiples of 16, the larger one of 64.
bool weight_grad_1x1_supported(const WeightGrad1x1& shape);

// Scratch the kernel needs when run with `threads` OpenMP threads.
size_t weight_grad_1x1_scratch_bytes(const WeightGrad1x1& shape, int threads);

// diff_weights: oc x ic fp32, row-major (oihw with 1x1), overwritten. Runs `threads` threads.
void weight_grad_1x1(const WeightGrad1x1& shape, const uint16_t* src, const uint16_t* diff_dst, float* diff_weights,
                     void* scratch, int threads);

}  // namespace cnnbench
