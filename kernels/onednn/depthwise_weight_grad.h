// kernels/onednn/depthwise_weight_grad.h — the weight gradient of a depthwise convolution
// (one filter per channel) on channel-blocked activations, written straight into the plain fp32
// gradient arena.
//
// Why not oneDNN's: oneDNN 2.6 has no JIT backward-weights kernel for depthwise filters larger
// than 3x3 and falls back to its reference loop. NASNet's 5x5 and 7x7 separable convolutions
// then took 71 ms a layer where the forward pass took 0.1 ms (nasnet, batch 32: 98% of the
// step). Here each task sums one kernel row of one block of channels over every image and
// position, the block's 8 or 16 channels in one vector.
//   dW[c][ky][kx] = sum over (n, oy, ox) of dY[n][c][oy][ox] * X[n][c][oy*s + ky - pad_h][ox*s + kx - pad_w]
#pragma once

#include <cstdint>

#include "kernels/onednn/blocked_layout.h"

namespace cnnbench {

struct DepthwiseWeightGrad {
  int64_t n = 0, c = 0, ih = 0, iw = 0, oh = 0, ow = 0, kh = 1, kw = 1, stride = 1, pad_h = 0, pad_w = 0;
  BlockedLayout src, diff_dst;  // the same channel block, 8 or 16
};

// True where the layouts fit: both in blocks of 8 or 16 channels, the same block, and a
// filter at most 16 wide.
bool depthwise_weight_grad_supported(const DepthwiseWeightGrad& shape);

// diff_weights: c x kh x kw fp32 (goihw with one channel a group), overwritten. src and diff_dst
// are fp32, or bf16 (as uint16_t) with bf16 = true. Runs `threads` OpenMP threads.
void depthwise_weight_grad(const DepthwiseWeightGrad& shape, const void* src, const void* diff_dst, bool bf16,
                           float* diff_weights, int threads);

}  // namespace cnnbench
