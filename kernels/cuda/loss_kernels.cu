// kernels/cuda/loss_kernels.cu — the softmax cross-entropy loss on the GPU (tensor_kernels.h:
// softmax_cross_entropy_totals): per image the loss, its gradient (with label smoothing) and
// whether the label is in the top 1 and top 5, summed into four totals.
#include <type_traits>

#include "kernels/cuda/kernel_util.cuh"
#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {
namespace {

// One block per image: max, sum of exponentials (and of the logits, for label smoothing), rank
// of the label, then the gradient. With smoothing s the target is (1 - s) on the label and
// s / classes on every class (kernels/cpu_ops.h).
template <typename G>
__global__ void loss_kernel(const float* logits, const int32_t* labels, G* dlogits, float* totals, int64_t n,
                            int64_t classes, float scale, float smoothing) {
  __shared__ float red[threads], logit_sum[threads];
  __shared__ int larger[threads];
  const int64_t row = blockIdx.x;
  const float* z = logits + row * classes;
  const int32_t label = labels[row];
  const bool valid = label >= 0 && label < classes;
  float m = -INFINITY;
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) m = fmaxf(m, z[k]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  const float max = red[0];
  __syncthreads();
  const float target = valid ? z[label] : 0.0f;
  float sum = 0, zs = 0;
  int count = 0;
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x) {
    sum += expf(z[k] - max);
    zs += z[k];
    count += z[k] > target;
  }
  red[threadIdx.x] = sum;
  logit_sum[threadIdx.x] = zs;
  larger[threadIdx.x] = count;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      red[threadIdx.x] += red[threadIdx.x + s];
      logit_sum[threadIdx.x] += logit_sum[threadIdx.x + s];
      larger[threadIdx.x] += larger[threadIdx.x + s];
    }
    __syncthreads();
  }
  const float total = red[0];
  const float k_scale = scale / static_cast<float>(n);
  const float on_label = 1.0f - smoothing, spread = smoothing / static_cast<float>(classes);
  for (int64_t k = threadIdx.x; k < classes; k += blockDim.x)
    store(dlogits, row * classes + k,
          valid ? (expf(z[k] - max) / total - spread - (k == label ? on_label : 0.0f)) * k_scale : 0.0f);
  if (threadIdx.x == 0) {
    if (!valid) {
      totals[3] = 1.0f;
      return;
    }
    const float mean_z = logit_sum[0] / static_cast<float>(classes);
    atomicAdd(totals + 0, logf(total) + max - on_label * target - smoothing * mean_z);
    if (larger[0] < 1) atomicAdd(totals + 1, 1.0f);
    if (larger[0] < 5) atomicAdd(totals + 2, 1.0f);
  }
}

}  // namespace

void softmax_cross_entropy_totals(const float* logits, const int32_t* labels, void* dlogits, float* totals, int64_t n,
                                  int64_t classes, float scale, DType grad_type, cudaStream_t stream,
                                  float label_smoothing) {
  if (n <= 0) return;
  dispatch(grad_type, [&](auto* t) {
    using T = std::remove_pointer_t<decltype(t)>;
    loss_kernel<<<static_cast<unsigned>(n), threads, 0, stream>>>(logits, labels, static_cast<T*>(dlogits), totals, n,
                                                                  classes, scale, label_smoothing);
  });
}

}  // namespace cnnbench::cuda
