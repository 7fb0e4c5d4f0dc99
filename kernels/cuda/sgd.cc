// kernels/cuda/sgd.cc — CudaPlan's update on the fp32 master weights: SGD with momentum (one
// launch over the arena or a bucket's range of it), or LARS (two launches over the range's
// tensors, chunk by chunk: each chunk's sums of squares, then each tensor's norms summed from
// its chunks in order, its trust ratio and the update: no atomics, the same bits every run); and the
// finite check of the gradients (with the host waiting, or on the device for loss scaling).
#include "kernels/cuda/plan_internal.h"

#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {

// Chunks of 32K elements: resnet50's 25.6M parameters in about a thousand blocks, its smallest
// tensors (64 batch norm scales) in one each.
void CudaPlan::prepare_lars() {
  std::vector<int64_t> sizes;
  std::vector<uint8_t> adapt;
  for (const ArenaEntry& e : layout_.params) {
    sizes.push_back(e.elements);
    adapt.push_back(lars_adapts(*e.spec) ? 1 : 0);
  }
  lars_chunks_ = cut_into_chunks(param_offset_, sizes, 32768);
  const std::vector<int32_t> first = first_chunks(lars_chunks_, static_cast<int32_t>(sizes.size()));
  d_lars_chunks_ = DeviceBuffer(std::max<size_t>(1, lars_chunks_.size()) * sizeof(TensorChunk));
  d_lars_first_chunk_ = DeviceBuffer(first.size() * sizeof(int32_t));
  d_lars_adapt_ = DeviceBuffer(std::max<size_t>(1, adapt.size()));
  d_lars_partials_ = DeviceBuffer(std::max<size_t>(1, lars_chunks_.size()) * 2 * sizeof(double));
  if (!lars_chunks_.empty()) d_lars_chunks_.upload(lars_chunks_.data(), lars_chunks_.size() * sizeof(TensorChunk));
  d_lars_first_chunk_.upload(first.data(), first.size() * sizeof(int32_t));
  if (!adapt.empty()) d_lars_adapt_.upload(adapt.data(), adapt.size());
}

void CudaPlan::lars_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count,
                         const int* skip_if) {
  const auto [first, last] =
      chunks_within(lars_chunks_, static_cast<int64_t>(offset), static_cast<int64_t>(count));
  const cuda::LarsSettings settings{learning_rate, config.momentum, config.weight_decay, config.lars_eta,
                                    config.gradient_scale, config.nesterov};
  cuda::lars_update(d_params_.as<float>(), d_grads_.as<float>(), d_momentum_.as<float>(),
                    d_lars_chunks_.as<TensorChunk>(), static_cast<int64_t>(first), static_cast<int64_t>(last - first),
                    d_lars_first_chunk_.as<int32_t>(), d_lars_adapt_.as<uint8_t>(), d_lars_partials_.as<double>(),
                    settings, stream_, skip_if);
}

void CudaPlan::sgd_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count) {
  if (config.lars) return lars_step(config, learning_rate, offset, count, nullptr);
  cuda::sgd_update(d_params_.as<float>() + offset, d_grads_.as<float>() + offset, d_momentum_.as<float>() + offset,
                   static_cast<int64_t>(count), learning_rate, config.momentum, config.weight_decay,
                   config.nesterov, config.gradient_scale, stream_);
}

void CudaPlan::sgd_step_if_finite(const SgdConfig& config, float learning_rate) {
  CUDA_CHECK(cudaMemsetAsync(d_flag_.data(), 0, sizeof(int), stream_));
  cuda::flag_non_finite(d_grads_.as<float>(), device_params_, d_flag_.as<int>(), stream_);
  if (config.lars)
    lars_step(config, learning_rate, 0, static_cast<size_t>(device_params_), d_flag_.as<int>());
  else
    cuda::sgd_update(d_params_.as<float>(), d_grads_.as<float>(), d_momentum_.as<float>(), device_params_,
                     learning_rate, config.momentum, config.weight_decay, config.nesterov, config.gradient_scale,
                     stream_, d_flag_.as<int>());
  CUDA_CHECK(cudaMemcpyAsync(pinned_flag_, d_flag_.data(), sizeof(int), cudaMemcpyDeviceToHost, stream_));
  guarded_pending_ = true;
}

bool CudaPlan::last_update_applied() const { return last_update_applied_; }

bool CudaPlan::gradients_finite() {
  CUDA_CHECK(cudaMemsetAsync(d_flag_.data(), 0, sizeof(int), stream_));
  cuda::flag_non_finite(d_grads_.as<float>(), device_params_, d_flag_.as<int>(), stream_);
  CUDA_CHECK(cudaMemcpyAsync(pinned_flag_, d_flag_.data(), sizeof(int), cudaMemcpyDeviceToHost, stream_));
  wait();
  return *pinned_flag_ == 0;
}

}  // namespace cnnbench::cuda
