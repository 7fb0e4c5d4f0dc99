// kernels/cuda/tensor_kernels.h — the CUDA kernels the cuda plan runs between cuDNN and cuBLAS
// calls, on activations in NHWC and in the plan's compute type (f32, f16 or bf16; `data`
// pointers are of that type). Every function is asynchronous on `stream` and checks its launch.
// "accumulate" adds to the destination instead of overwriting it: a tensor read by several
// nodes gets the sum of their gradients.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>

#include "kernels/dtype.h"

namespace cnnbench::cuda {

// Images (fp32, NCHW or NHWC) to the plan's NHWC tensor of `type`, channels padded with zeros
// from c to c_padded (tensor cores want channel counts that are multiples of 8).
void images_to_nhwc(const float* images, void* out, int64_t n, int64_t c, int64_t h, int64_t w, int64_t c_padded,
                    bool images_nhwc, DType type, cudaStream_t stream);

// y = min(max(0, x), cap) (in place when y == x; cap 6 is ReLU6); dx = dy * (0 < y < cap), written
// or accumulated (dx may be dy).
void relu_forward(const void* x, void* y, int64_t count, DType type, cudaStream_t stream,
                  float cap = std::numeric_limits<float>::infinity());
void relu_backward(const void* y, const void* dy, void* dx, int64_t count, bool accumulate, DType type,
                   cudaStream_t stream, float cap = std::numeric_limits<float>::infinity());

// Dropout (kernels/dropout_mask.h): y = x / (1 - rate) where the mask of (seed, node, *step,
// index) keeps the element, else 0; written or accumulated. *step is read on the device, so a
// captured CUDA graph draws each step's mask. Backward is the same call from dy into dx.
void dropout_apply(const void* x, void* y, int64_t count, uint64_t seed, int node, const uint64_t* step, float rate,
                   bool accumulate, DType type, cudaStream_t stream);
// Local response normalisation across the channels of NHWC rows (tf.nn.lrn's parameters: s[c] =
// bias + alpha * sum of x[k]^2 over |k - c| <= radius, y = x s^-beta); backward recomputes s and
// writes or accumulates dx = dy s^-beta - 2 alpha beta x sum over the window of dy[k] x[k] s[k]^(-beta-1).
void lrn_forward(const void* x, void* y, int64_t rows, int64_t channels, int64_t radius, float bias, float alpha,
                 float beta, DType type, cudaStream_t stream);
void lrn_backward(const void* x, const void* dy, void* dx, int64_t rows, int64_t channels, int64_t radius, float bias,
                  float alpha, float beta, bool accumulate, DType type, cudaStream_t stream);

// *dst = value, in stream order (the value travels as a launch argument: no host buffer to outlive).
void store_value(uint64_t* dst, uint64_t value, cudaStream_t stream);

// out = a + b (then ReLU); backward: g = dy (masked by out > 0 with ReLU) into da and db.
void add_forward(const void* a, const void* b, void* out, int64_t count, bool relu, DType type, cudaStream_t stream);
void add_backward(const void* out, const void* dy, void* da, void* db, int64_t count, bool relu, bool accumulate_a,
                  bool accumulate_b, DType type, cudaStream_t stream);

// Rows x features (a linear layer's output, or NHWC seen as (N*H*W) x C): y[r][f] += bias[f]
// (fp32), then ReLU if asked. `type` is y's type.
void add_bias(void* y, const float* bias, int64_t rows, int64_t features, bool relu, DType type, cudaStream_t stream);
// db[f] = sum over rows of dy[r][f] (fp32 out, overwritten).
void bias_gradient(const void* dy, float* db, int64_t rows, int64_t features, DType type, cudaStream_t stream);
// The backward of y = relu(x + bias) in place: dy = y > 0 ? dy : 0 (written back), and db as
// bias_gradient's of that masked dy, in one pass.
void relu_mask_bias_gradient(const void* y, void* dy, float* db, int64_t rows, int64_t features, DType type,
                             cudaStream_t stream);

// CIFAR ResNet option A: out[n][h][w][pad_front + c] = in[n][h*stride + offset][w*stride + offset][c],
// zeros elsewhere (and past the input's edge); backward sends each gradient back to the input
// element it came from.
void shortcut_forward(const void* in, void* out, int64_t n, int64_t in_c, int64_t in_h, int64_t in_w, int64_t out_c,
                      int64_t out_h, int64_t out_w, int64_t stride, int64_t pad_front, int64_t offset, DType type,
                      cudaStream_t stream);
void shortcut_backward(const void* dout, void* din, int64_t n, int64_t in_c, int64_t in_h, int64_t in_w,
                       int64_t out_c, int64_t out_h, int64_t out_w, int64_t stride, int64_t pad_front, int64_t offset,
                       bool accumulate, DType type, cudaStream_t stream);

// Channel slices (NHWC): dst[r][dst_start + c] = src[r][src_start + c] (+= with accumulate)
// for each of `rows` rows and c < channels; src rows hold src_c channels, dst rows dst_c.
// Concatenation copies each input into its slice, and its backward each slice back.
void copy_channels(const void* src, int64_t src_c, int64_t src_start, void* dst, int64_t dst_c, int64_t dst_start,
                   int64_t rows, int64_t channels, bool accumulate, DType type, cudaStream_t stream);

// Loss over logits [n x classes] (fp32): per image -log softmax at the label, and whether the
// label is in the top 1 and top 5 (ties count in the label's favour, as kernels/top_k.h).
// dlogits (of `grad_type`) = scale * (softmax - target) / n, the target onehot, or with label
// smoothing s (1 - s) on the label plus s / classes everywhere. totals[0] += sum of losses,
// totals[1] += top-1 hits, totals[2] += top-5 hits (fp32 sums; zero them first). A label
// outside [0, classes) sets totals[3] to 1 and contributes nothing.
void softmax_cross_entropy_totals(const float* logits, const int32_t* labels, void* dlogits, float* totals, int64_t n,
                                  int64_t classes, float scale, DType grad_type, cudaStream_t stream,
                                  float label_smoothing = 0.0f);

// flag[0] = 1 if any of the values is inf or NaN (flag is left alone otherwise).
void flag_non_finite(const float* values, int64_t count, int* flag, cudaStream_t stream);

// y = x for any of the three types (x and y may not overlap), or cast f32 <-> 16-bit with scale.
void convert(const void* x, DType from, void* y, DType to, int64_t count, float scale, cudaStream_t stream);

}  // namespace cnnbench::cuda
