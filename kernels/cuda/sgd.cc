// kernels/cuda/sgd.cc — CudaPlan's update: SGD with momentum on the fp32 master weights, and the
// finite check of the gradients (with the host waiting, or on the device for loss scaling).
#include "kernels/cuda/plan_internal.h"

#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {

void CudaPlan::sgd_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count) {
  if (config.lars) throw std::logic_error("LARS on the GPU backend (refused with the settings)");
  cuda::sgd_update(d_params_.as<float>() + offset, d_grads_.as<float>() + offset, d_momentum_.as<float>() + offset,
                   static_cast<int64_t>(count), learning_rate, config.momentum, config.weight_decay,
                   config.nesterov, config.gradient_scale, stream_);
}

void CudaPlan::sgd_step_if_finite(const SgdConfig& config, float learning_rate) {
  CUDA_CHECK(cudaMemsetAsync(d_flag_.data(), 0, sizeof(int), stream_));
  cuda::flag_non_finite(d_grads_.as<float>(), device_params_, d_flag_.as<int>(), stream_);
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
