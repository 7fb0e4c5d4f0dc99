// kernels/cuda/conv_bn_kernels.cu — conv_bn_kernels.h: a folded batch norm's statistics into
// scale and bias, and its backward with the ReLU's, in a fixed order (the same bits every run).
#include "kernels/cuda/conv_bn_kernels.h"
#include "kernels/cuda/kernel_util.cuh"

#include <initializer_list>
#include <stdexcept>
#include <string>

namespace cnnbench::cuda {
namespace {

__global__ void finalize_training_kernel(const float* sum, const float* sqsum, const float* gamma, const float* beta,
                                         float* running_mean, float* running_var, float* saved_mean,
                                         float* saved_inv_std, __half* scale, __half* bias, int64_t channels,
                                         int64_t count, float momentum, float eps) {
  GRID_STRIDE(c, channels) {
    const double m = static_cast<double>(count);
    const double mean = sum[c] / m;
    const double var = fmax(sqsum[c] / m - mean * mean, 0.0);
    const float inv_std = static_cast<float>(1.0 / sqrt(var + eps));
    const float unbias = count > 1 ? static_cast<float>(m / (m - 1)) : 1.0f;
    saved_mean[c] = static_cast<float>(mean);
    saved_inv_std[c] = inv_std;
    running_mean[c] = (1 - momentum) * running_mean[c] + momentum * static_cast<float>(mean);
    running_var[c] = (1 - momentum) * running_var[c] + momentum * static_cast<float>(var) * unbias;
    const float k = gamma[c] * inv_std;
    scale[c] = __float2half_rn(k);
    bias[c] = __float2half_rn(beta[c] - static_cast<float>(mean) * k);
  }
}

__global__ void finalize_inference_kernel(const float* gamma, const float* beta, const float* running_mean,
                                          const float* running_var, __half* scale, __half* bias, int64_t channels,
                                          float eps) {
  GRID_STRIDE(c, channels) {
    const float k = gamma[c] * rsqrtf(running_var[c] + eps);
    scale[c] = __float2half_rn(k);
    bias[c] = __float2half_rn(beta[c] - running_mean[c] * k);
  }
}

// Rows split into `splits` ranges, one block each. The block's threads read 16 bytes (8
// channels) at a time: thread t takes channel group t % groups of rows lane, lane + lanes, ...
// (lane = t / groups, lanes = threads / groups), sums g and g * xhat per channel, and the lanes'
// sums are then added in a fixed order. Needs channels a multiple of 8 and at most 8 x threads
// (bn_relu_check(); find_conv_bn_chains() folds no other chain).
constexpr int W = 8, splits_max = 1024, rows_min = 16, max_channels = W * threads;

// The ReLU's input, relu(x * scale + bias)'s argument, the same arithmetic (one FFMA) wherever a
// kernel recomputes it: its sign is the mask cuDNN's prologue applied forward.
__device__ __forceinline__ float bn_out(__half x, __half scale, __half bias) {
  return to_float(x) * to_float(scale) + to_float(bias);
}

int64_t splits_for(int64_t rows) { return rows < splits_max * int64_t{rows_min} ? (rows + rows_min - 1) / rows_min : splits_max; }

__global__ void backward_partials_kernel(const __half* x, const __half* dz, const __half* scale, const __half* bias,
                                         const float* mean, const float* inv_std, float* partials, int64_t rows,
                                         int channels, int64_t splits) {
  __shared__ float sums[2 * max_channels];  // [lane][channel] of g, then of g * xhat
  const int groups = channels / W, lanes = threads / groups, group = threadIdx.x % groups,
            lane = threadIdx.x / groups;
  const int64_t split = blockIdx.x, begin = rows * split / splits, end = rows * (split + 1) / splits;
  if (lane < lanes) {
    const Pack<__half, W> s = load_pack<W>(scale, group), b = load_pack<W>(bias, group);
    float g_sum[W] = {}, gx_sum[W] = {}, mu[W], is[W];
#pragma unroll
    for (int j = 0; j < W; ++j) mu[j] = mean[group * W + j], is[j] = inv_std[group * W + j];
    for (int64_t r = begin + lane; r < end; r += lanes) {
      const Pack<__half, W> xp = load_pack<W>(x, r * groups + group), dp = load_pack<W>(dz, r * groups + group);
#pragma unroll
      for (int j = 0; j < W; ++j) {
        const float xv = to_float(xp.v[j]);
        const float g = bn_out(xp.v[j], s.v[j], b.v[j]) > 0.0f ? to_float(dp.v[j]) : 0.0f;
        g_sum[j] += g;
        gx_sum[j] += g * (xv - mu[j]) * is[j];
      }
    }
#pragma unroll
    for (int j = 0; j < W; ++j) {
      sums[lane * channels + group * W + j] = g_sum[j];
      sums[(lanes + lane) * channels + group * W + j] = gx_sum[j];
    }
  }
  __syncthreads();
  for (int c = threadIdx.x; c < channels; c += threads) {
    float a = 0, bsum = 0;
    for (int l = 0; l < lanes; ++l) a += sums[l * channels + c], bsum += sums[(lanes + l) * channels + c];
    partials[split * channels + c] = a;
    partials[(splits + split) * channels + c] = bsum;
  }
}

// Per channel: the splits' sums, then the parameter gradients and dx = A g + B x + C. A block
// takes 32 channels; its 32 split lanes sum every 32nd split, and the lanes are added in order.
// 32 lanes, not fewer: a 64-channel chain is 2 blocks on the whole GPU, and each thread's chain of
// dependent loads (1024 splits / lanes) is the kernel's whole time.
constexpr int split_lanes = 32;
__global__ void backward_coefficients_kernel(const float* partials, const float* mean, const float* inv_std,
                                             const float* gamma, float* dgamma, float* dbeta, float* coefficients,
                                             int64_t rows, int64_t channels, int64_t splits) {
  __shared__ double sg[split_lanes][32], sgx[split_lanes][32];
  const int64_t c = blockIdx.x * 32 + threadIdx.x;
  double g = 0, gx = 0;
  if (c < channels)
    for (int64_t s = threadIdx.y; s < splits; s += split_lanes)
      g += partials[s * channels + c], gx += partials[(splits + s) * channels + c];
  sg[threadIdx.y][threadIdx.x] = g;
  sgx[threadIdx.y][threadIdx.x] = gx;
  __syncthreads();
  if (threadIdx.y != 0 || c >= channels) return;
  for (int l = 1; l < split_lanes; ++l) g += sg[l][threadIdx.x], gx += sgx[l][threadIdx.x];
  dbeta[c] = static_cast<float>(g);
  dgamma[c] = static_cast<float>(gx);
  const double m = static_cast<double>(rows), is = inv_std[c], k = gamma[c] * is;
  const double b = -k * is * gx / m;
  coefficients[c] = static_cast<float>(k);
  coefficients[channels + c] = static_cast<float>(b);
  coefficients[2 * channels + c] = static_cast<float>(-k * g / m - b * mean[c]);
}

// 8 elements (16 bytes) a thread: pack p holds channels (p * 8) % channels and the 7 after.
__global__ void backward_apply_kernel(const __half* x, const __half* dz, const __half* scale, const __half* bias,
                                      const float* coefficients, __half* dx, int64_t packs, int64_t channels,
                                      bool accumulate) {
  GRID_STRIDE(p, packs) {
    const int64_t c0 = p * W % channels;
    const Pack<__half, W> xp = load_pack<W>(x, p), dp = load_pack<W>(dz, p), s = load_pack<W>(scale, c0 / W),
                          b = load_pack<W>(bias, c0 / W);
    // the 8 channels' A, B and C, 32 bytes each (c0 is a multiple of 8)
    const Pack<float, W> a = load_pack<W>(coefficients, c0 / W), bx = load_pack<W>(coefficients + channels, c0 / W),
                         k = load_pack<W>(coefficients + 2 * channels, c0 / W);
    Pack<__half, W> out;
    if (accumulate) out = load_pack<W>(dx, p);
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const float xv = to_float(xp.v[j]);
      const float g = bn_out(xp.v[j], s.v[j], b.v[j]) > 0.0f ? to_float(dp.v[j]) : 0.0f;
      float v = a.v[j] * g + bx.v[j] * xv + k.v[j];
      if (accumulate) v += to_float(out.v[j]);
      out.v[j] = from_float<__half>(v);
    }
    store_pack(dx, p, out);
  }
}

__global__ void apply_kernel(const __half* x, const __half* scale, const __half* bias, __half* z, int64_t packs,
                             int64_t channels) {
  GRID_STRIDE(p, packs) {
    const int64_t c0 = p * W % channels;
    const Pack<__half, W> xp = load_pack<W>(x, p), s = load_pack<W>(scale, c0 / W), b = load_pack<W>(bias, c0 / W);
    Pack<__half, W> out;
#pragma unroll
    for (int j = 0; j < W; ++j)
      out.v[j] = from_float<__half>(fmaxf(bn_out(xp.v[j], s.v[j], b.v[j]), 0.0f));
    store_pack(z, p, out);
  }
}

}  // namespace

void bn_relu_check(int64_t channels, std::initializer_list<const void*> tensors) {
  bool ok = channels > 0 && channels % W == 0 && channels <= max_channels;
  for (const void* p : tensors) ok = ok && reinterpret_cast<uintptr_t>(p) % 16 == 0;
  if (!ok)
    throw std::logic_error("folded batch norm: " + std::to_string(channels) +
                           " channels (a multiple of 8 up to 2048 wanted) or a tensor off 16 bytes");
}

void bn_relu_apply(const void* x, const void* scale, const void* bias, void* z, int64_t rows, int64_t channels,
                   cudaStream_t stream) {
  const int64_t packs = rows * channels / W;
  apply_kernel<<<blocks_for(packs), threads, 0, stream>>>(
      static_cast<const __half*>(x), static_cast<const __half*>(scale), static_cast<const __half*>(bias),
      static_cast<__half*>(z), packs, channels);
  CUDA_CHECK(cudaGetLastError());
}

void bn_finalize_training(const float* sum, const float* sqsum, const float* gamma, const float* beta,
                          float* running_mean, float* running_var, float* saved_mean, float* saved_inv_std,
                          void* scale, void* bias, int64_t channels, int64_t count, float momentum, float eps,
                          cudaStream_t stream) {
  finalize_training_kernel<<<blocks_for(channels), threads, 0, stream>>>(
      sum, sqsum, gamma, beta, running_mean, running_var, saved_mean, saved_inv_std, static_cast<__half*>(scale),
      static_cast<__half*>(bias), channels, count, momentum, eps);
  CUDA_CHECK(cudaGetLastError());
}

void bn_finalize_inference(const float* gamma, const float* beta, const float* running_mean, const float* running_var,
                           void* scale, void* bias, int64_t channels, float eps, cudaStream_t stream) {
  finalize_inference_kernel<<<blocks_for(channels), threads, 0, stream>>>(
      gamma, beta, running_mean, running_var, static_cast<__half*>(scale), static_cast<__half*>(bias), channels, eps);
  CUDA_CHECK(cudaGetLastError());
}

size_t bn_relu_backward_scratch_bytes(int64_t rows, int64_t channels) {
  return (2 * splits_for(rows) + 3) * channels * sizeof(float);
}

void bn_relu_backward(const void* x, const void* dz, const void* scale, const void* bias, const float* saved_mean,
                      const float* saved_inv_std, const float* gamma, float* dgamma, float* dbeta, void* dx,
                      int64_t rows, int64_t channels, bool accumulate, void* scratch, cudaStream_t stream) {
  const auto* xh = static_cast<const __half*>(x);
  const auto* dzh = static_cast<const __half*>(dz);
  const auto* sh = static_cast<const __half*>(scale);
  const auto* bh = static_cast<const __half*>(bias);
  const int64_t splits = splits_for(rows);
  float* partials = static_cast<float*>(scratch);  // 2 x splits x channels, then the 3 x channels coefficients
  float* coefficients = partials + 2 * splits * channels;
  backward_partials_kernel<<<static_cast<unsigned>(splits), threads, 0, stream>>>(
      xh, dzh, sh, bh, saved_mean, saved_inv_std, partials, rows, static_cast<int>(channels), splits);
  CUDA_CHECK(cudaGetLastError());
  backward_coefficients_kernel<<<static_cast<unsigned>((channels + 31) / 32), dim3(32, split_lanes), 0, stream>>>(
      partials, saved_mean, saved_inv_std, gamma, dgamma, dbeta, coefficients, rows, channels, splits);
  CUDA_CHECK(cudaGetLastError());
  const int64_t packs = rows * channels / W;
  backward_apply_kernel<<<blocks_for(packs), threads, 0, stream>>>(xh, dzh, sh, bh, coefficients,
                                                                   static_cast<__half*>(dx), packs, channels, accumulate);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace cnnbench::cuda
