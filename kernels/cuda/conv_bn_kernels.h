// kernels/cuda/conv_bn_kernels.h — the batch norm of a conv -> batch norm -> ReLU -> conv chain
// folded into its convolutions (kernels/conv_bn_relu.h, kernels/cuda/cudnn_graph.h): the first
// convolution's epilogue sums the statistics, these kernels turn them into the per-channel
// scale and bias the second convolution applies to its input (fp16, as cuDNN's prologue reads
// them), and compute the batch norm's and the ReLU's backward from the first convolution's
// output, which is all that is stored. fp16 activations, fp32 statistics and parameters.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace cnnbench::cuda {

// Training: mean = sum / count, var = sqsum / count - mean^2 (biased, as the reference
// normalises); saved_mean, saved_inv_std = 1 / sqrt(var + eps); the running statistics move by
// momentum (the variance unbiased: count / (count - 1)); scale = gamma * inv_std and
// bias = beta - mean * scale, in fp16.
void bn_finalize_training(const float* sum, const float* sqsum, const float* gamma, const float* beta,
                          float* running_mean, float* running_var, float* saved_mean, float* saved_inv_std,
                          void* scale, void* bias, int64_t channels, int64_t count, float momentum, float eps,
                          cudaStream_t stream);
// Inference: the same scale and bias from the running statistics.
void bn_finalize_inference(const float* gamma, const float* beta, const float* running_mean, const float* running_var,
                           void* scale, void* bias, int64_t channels, float eps, cudaStream_t stream);

// The kernels below read and write 16 bytes (8 channels) a thread: channels a multiple of 8, at
// most 2048, every tensor 16-byte aligned (the arena's start on 256). Throws std::logic_error
// otherwise; called when a plan is compiled, so that no step finds out mid-capture.
void bn_relu_check(int64_t channels, std::initializer_list<const void*> tensors);

// z = relu(x * scale + bias) per channel (x, z, scale, bias fp16): the ReLU's output recomputed
// for a weight gradient cuDNN takes no prologue for.
void bn_relu_apply(const void* x, const void* scale, const void* bias, void* z, int64_t rows, int64_t channels,
                   cudaStream_t stream);

// Backward of z = relu(bn(x)) with the ReLU's mask recomputed from x (x * scale + bias > 0, the
// prologue's values): g = dz masked; dgamma = sum g * xhat, dbeta = sum g (fp32, written);
// dx = gamma * inv_std * (g - dbeta / count - xhat * dgamma / count), written or accumulated.
// Sums in a fixed order (the same bits every run). `scratch` (32-byte aligned) holds
// bn_relu_backward_scratch_bytes(rows, channels) bytes, used only during the call (the plan
// lends its cuDNN workspace).
size_t bn_relu_backward_scratch_bytes(int64_t rows, int64_t channels);
void bn_relu_backward(const void* x, const void* dz, const void* scale, const void* bias, const float* saved_mean,
                      const float* saved_inv_std, const float* gamma, float* dgamma, float* dbeta, void* dx,
                      int64_t rows, int64_t channels, bool accumulate, void* scratch, cudaStream_t stream);

}  // namespace cnnbench::cuda
