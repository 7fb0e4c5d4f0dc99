// kernels/cuda/conv_bn_kernels.cu — conv_bn_kernels.h: a folded batch norm's statistics into
// scale and bias, and its backward with the ReLU's, in a fixed order (the same bits every run).
#include "kernels/cuda/conv_bn_kernels.h"
#include "kernels/cuda/kernel_util.cuh"

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

// Rows split into `splits` ranges; block (x: 32 channels, y: 8 row lanes) sums one range of 32
// channels: sum g and sum g * xhat, the 8 lanes then added in a fixed order.
constexpr int lanes = 8, splits_max = 256;

int64_t splits_for(int64_t rows) { return rows < splits_max * 64 ? (rows + 63) / 64 : splits_max; }

__global__ void backward_partials_kernel(const __half* x, const __half* dz, const __half* scale, const __half* bias,
                                         const float* mean, const float* inv_std, float* partials, int64_t rows,
                                         int64_t channels, int64_t splits) {
  __shared__ float sg[lanes][32], sgx[lanes][32];
  const int64_t c = blockIdx.x * 32 + threadIdx.x, split = blockIdx.y;
  const int64_t begin = rows * split / splits, end = rows * (split + 1) / splits;
  float g_sum = 0, gx_sum = 0;
  if (c < channels) {
    const float s = __half2float(scale[c]), b = __half2float(bias[c]), mu = mean[c], is = inv_std[c];
    for (int64_t r = begin + threadIdx.y; r < end; r += lanes) {
      const float xv = __half2float(x[r * channels + c]);
      const float g = xv * s + b > 0.0f ? __half2float(dz[r * channels + c]) : 0.0f;
      g_sum += g;
      gx_sum += g * (xv - mu) * is;
    }
  }
  sg[threadIdx.y][threadIdx.x] = g_sum;
  sgx[threadIdx.y][threadIdx.x] = gx_sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    float a = 0, bsum = 0;
    for (int l = 0; l < lanes; ++l) a += sg[l][threadIdx.x], bsum += sgx[l][threadIdx.x];
    partials[split * channels + c] = a;
    partials[(splits + split) * channels + c] = bsum;
  }
}

// Per channel: the splits' sums in order, the parameter gradients, and dx = A g + B x + C.
__global__ void backward_coefficients_kernel(const float* partials, const float* mean, const float* inv_std,
                                             const float* gamma, float* dgamma, float* dbeta, float* coefficients,
                                             int64_t rows, int64_t channels, int64_t splits) {
  GRID_STRIDE(c, channels) {
    double g = 0, gx = 0;
    for (int64_t s = 0; s < splits; ++s) g += partials[s * channels + c], gx += partials[(splits + s) * channels + c];
    dbeta[c] = static_cast<float>(g);
    dgamma[c] = static_cast<float>(gx);
    const double m = static_cast<double>(rows), is = inv_std[c], k = gamma[c] * is;
    const double b = -k * is * gx / m;
    coefficients[c] = static_cast<float>(k);
    coefficients[channels + c] = static_cast<float>(b);
    coefficients[2 * channels + c] = static_cast<float>(-k * g / m - b * mean[c]);
  }
}

__global__ void backward_apply_kernel(const __half* x, const __half* dz, const __half* scale, const __half* bias,
                                      const float* coefficients, __half* dx, int64_t rows, int64_t channels,
                                      bool accumulate) {
  GRID_STRIDE(i, rows * channels) {
    const int64_t c = i % channels;
    const float xv = __half2float(x[i]);
    const float g = xv * __half2float(scale[c]) + __half2float(bias[c]) > 0.0f ? __half2float(dz[i]) : 0.0f;
    float v = coefficients[c] * g + coefficients[channels + c] * xv + coefficients[2 * channels + c];
    if (accumulate) v += __half2float(dx[i]);
    dx[i] = __float2half_rn(v);
  }
}

__global__ void apply_kernel(const __half* x, const __half* scale, const __half* bias, __half* z, int64_t rows,
                             int64_t channels) {
  GRID_STRIDE(i, rows * channels) {
    const int64_t c = i % channels;
    z[i] = __float2half_rn(fmaxf(__half2float(x[i]) * __half2float(scale[c]) + __half2float(bias[c]), 0.0f));
  }
}

}  // namespace

void bn_relu_apply(const void* x, const void* scale, const void* bias, void* z, int64_t rows, int64_t channels,
                   cudaStream_t stream) {
  apply_kernel<<<blocks_for(rows * channels), threads, 0, stream>>>(
      static_cast<const __half*>(x), static_cast<const __half*>(scale), static_cast<const __half*>(bias),
      static_cast<__half*>(z), rows, channels);
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

int64_t bn_backward_partials_floats(int64_t rows, int64_t channels) { return 2 * splits_for(rows) * channels; }

void bn_relu_backward(const void* x, const void* dz, const void* scale, const void* bias, const float* saved_mean,
                      const float* saved_inv_std, const float* gamma, float* dgamma, float* dbeta, void* dx,
                      int64_t rows, int64_t channels, bool accumulate, float* partials, float* coefficients,
                      cudaStream_t stream) {
  const auto* xh = static_cast<const __half*>(x);
  const auto* dzh = static_cast<const __half*>(dz);
  const auto* sh = static_cast<const __half*>(scale);
  const auto* bh = static_cast<const __half*>(bias);
  const int64_t splits = splits_for(rows);
  const dim3 grid(static_cast<unsigned>((channels + 31) / 32), static_cast<unsigned>(splits)), block(32, lanes);
  backward_partials_kernel<<<grid, block, 0, stream>>>(xh, dzh, sh, bh, saved_mean, saved_inv_std, partials, rows,
                                                      channels, splits);
  CUDA_CHECK(cudaGetLastError());
  backward_coefficients_kernel<<<blocks_for(channels), threads, 0, stream>>>(
      partials, saved_mean, saved_inv_std, gamma, dgamma, dbeta, coefficients, rows, channels, splits);
  CUDA_CHECK(cudaGetLastError());
  backward_apply_kernel<<<blocks_for(rows * channels), threads, 0, stream>>>(
      xh, dzh, sh, bh, coefficients, static_cast<__half*>(dx), rows, channels, accumulate);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace cnnbench::cuda
