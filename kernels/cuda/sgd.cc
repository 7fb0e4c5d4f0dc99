// kernels/cuda/sgd.cc — CudaPlan's update on the fp32 master weights, over the arena's or a
// bucket's tensors chunk by chunk: SGD with momentum in one launch (batch norm's tensors with or
// without weight decay), or LARS in two (each chunk's sums of squares, then each tensor's norms
// summed from its chunks in order, its trust ratio and the update: no atomics, the same bits every
// run); and the finite check of the gradients (with the host waiting, or on the device for loss
// scaling).
#include "kernels/cuda/plan_internal.h"

#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {

// Chunks of 32K elements: resnet50's 25.6M parameters in about a thousand blocks, its smallest
// tensors (64 batch norm scales) in one each.
void CudaPlan::prepare_update_chunks() {
  std::vector<int64_t> sizes;
  std::vector<uint8_t> adapt, batch_norm;
  for (const ArenaEntry& e : layout_.params) {
    sizes.push_back(e.elements);
    adapt.push_back(lars_adapts(*e.spec) ? 1 : 0);
    batch_norm.push_back(e.batch_norm ? 1 : 0);
  }
  update_chunks_ = cut_into_chunks(param_offset_, sizes, 32768);
  const std::vector<int32_t> first = first_chunks(update_chunks_, static_cast<int32_t>(sizes.size()));
  d_update_chunks_ = DeviceBuffer(std::max<size_t>(1, update_chunks_.size()) * sizeof(TensorChunk));
  d_lars_first_chunk_ = DeviceBuffer(first.size() * sizeof(int32_t));
  d_lars_adapt_ = DeviceBuffer(std::max<size_t>(1, adapt.size()));
  d_batch_norm_ = DeviceBuffer(std::max<size_t>(1, batch_norm.size()));
  d_lars_partials_ = DeviceBuffer(std::max<size_t>(1, update_chunks_.size()) * 2 * sizeof(double));
  if (!update_chunks_.empty())
    d_update_chunks_.upload(update_chunks_.data(), update_chunks_.size() * sizeof(TensorChunk));
  d_lars_first_chunk_.upload(first.data(), first.size() * sizeof(int32_t));
  if (!adapt.empty()) d_lars_adapt_.upload(adapt.data(), adapt.size());
  if (!batch_norm.empty()) d_batch_norm_.upload(batch_norm.data(), batch_norm.size());
}

void CudaPlan::update_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count,
                           const int* skip_if) {
  const auto [first, last] =
      chunks_within(update_chunks_, static_cast<int64_t>(offset), static_cast<int64_t>(count));
  if (config.lars) {
    const cuda::LarsSettings settings{learning_rate, config.momentum, config.weight_decay, config.lars_eta,
                                      config.gradient_scale, config.nesterov};
    cuda::lars_update(d_params_.as<float>(), d_grads_.as<float>(), d_momentum_.as<float>(),
                      d_update_chunks_.as<TensorChunk>(), static_cast<int64_t>(first),
                      static_cast<int64_t>(last - first), d_lars_first_chunk_.as<int32_t>(),
                      d_lars_adapt_.as<uint8_t>(), d_lars_partials_.as<double>(), settings, stream_, skip_if);
    return;
  }
  const cuda::SgdSettings settings{learning_rate,         config.momentum, config.weight_decay,
                                   config.gradient_scale, config.nesterov, config.decay_batch_norm};
  cuda::sgd_update(d_params_.as<float>(), d_grads_.as<float>(), d_momentum_.as<float>(),
                   d_update_chunks_.as<TensorChunk>(), static_cast<int64_t>(first), static_cast<int64_t>(last - first),
                   d_batch_norm_.as<uint8_t>(), settings, stream_, skip_if);
}

void CudaPlan::sgd_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count) {
  update_step(config, learning_rate, offset, count, nullptr);
}

void CudaPlan::sgd_step_if_finite(const SgdConfig& config, float learning_rate) {
  CUDA_CHECK(cudaMemsetAsync(d_flag_.data(), 0, sizeof(int), stream_));
  cuda::flag_non_finite(d_grads_.as<float>(), device_params_, d_flag_.as<int>(), stream_);
  update_step(config, learning_rate, 0, static_cast<size_t>(device_params_), d_flag_.as<int>());
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
