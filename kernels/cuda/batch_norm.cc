// kernels/cuda/batch_norm.cc — CudaPlan's batch norm: cuDNN's training forward and backward
// (spatial persistent, with the following ReLU fused for fp16) and its inference forward.
#include "kernels/cuda/plan_internal.h"

#include <algorithm>
#include <memory>

#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {

void CudaPlan::compile_batch_norm(const Node& node) {
  NodeState& s = nodes_[node.id];
  const Node& src = graph_.nodes[node.inputs[0]];
  const auto x = nhwc_desc(src.out, type_);
  s.stats = std::make_unique<TensorDesc>();
  const cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  CUDA_CHECK(cudnnDeriveBNTensorDescriptor(s.stats->d, x->d, mode));
  const int relu = fused_relu_of_[node.id];
  // cuDNN fuses the activation for fp16 NHWC with channels a multiple of 4
  const bool fused = relu >= 0 && type_ == DType::f16 && node.out.c % 4 == 0;
  s.bn_ops = fused ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION : CUDNN_BATCHNORM_OPS_BN;
  cudnnActivationDescriptor_t act = fused ? activation_.d : nullptr;
  size_t fw = 0, bw = 0;
  CUDA_CHECK(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(cudnn_, mode, s.bn_ops, x->d, nullptr,
                                                                      s.out->d, s.stats->d, act, &fw));
  CUDA_CHECK(cudnnGetBatchNormalizationBackwardExWorkspaceSize(cudnn_, mode, s.bn_ops, x->d, s.out->d, s.out->d,
                                                               nullptr, x->d, s.stats->d, act, &bw));
  CUDA_CHECK(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(cudnn_, mode, s.bn_ops, act, x->d,
                                                                  &s.reserve_bytes));
  workspace_bytes_ = std::max({workspace_bytes_, fw, bw});
  s.saved_mean = DeviceBuffer(node.out.c * 4);
  s.saved_inv_var = DeviceBuffer(node.out.c * 4);
  if (s.reserve_bytes) s.reserve = DeviceBuffer(s.reserve_bytes);
  const double eps = node.batch_norm.epsilon, momentum = node.batch_norm.momentum;
  auto xd = std::shared_ptr<TensorDesc>(nhwc_desc(src.out, type_));
  const bool relu_after = relu >= 0 && !fused;
  const int64_t count = node.out.elements();
  push_forward(
      node.id,
      [this, &node, &s, xd, mode, act, eps, momentum, relu_after, count] {
        const float one = 1.0f, zero = 0.0f;
        CUDA_CHECK(cudnnBatchNormalizationForwardTrainingEx(
            cudnn_, mode, s.bn_ops, &one, &zero, xd->d, out_[node.inputs[0]], nullptr, nullptr, s.out->d,
            out_[node.id], s.stats->d, master(node.id, 0), master(node.id, 1), momentum, buffer(node.id, 0),
            buffer(node.id, 1), eps, s.saved_mean.data(), s.saved_inv_var.data(), act, workspace_.data(),
            workspace_.bytes(), s.reserve.data(), s.reserve_bytes));
        if (relu_after) cuda::relu_forward(out_[node.id], out_[node.id], count, type_, stream_);
      },
      [this, &node, &s, xd, eps, relu, count] {
        const float one = 1.0f, zero = 0.0f;
        CUDA_CHECK(cudnnBatchNormalizationForwardInference(
            cudnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd->d, out_[node.inputs[0]], s.out->d, out_[node.id],
            s.stats->d, master(node.id, 0), master(node.id, 1), buffer(node.id, 0), buffer(node.id, 1), eps));
        if (relu >= 0) cuda::relu_forward(out_[node.id], out_[node.id], count, type_, stream_);
      });
  const bool data_grad = wants_grad(src.id);
  const bool acc = accumulates(node, 0);
  push_backward(node.id, [this, &node, &s, xd, mode, act, eps, data_grad, acc] {
    const float one = 1.0f, zero = 0.0f, beta = acc ? 1.0f : 0.0f;
    // without an input gradient the data gradient goes to scratch (cuDNN always writes one)
    void* dx = data_grad ? diff_[node.inputs[0]] : scratch_.data();
    CUDA_CHECK(cudnnBatchNormalizationBackwardEx(
        cudnn_, mode, s.bn_ops, &one, &beta, &one, &zero, xd->d, out_[node.inputs[0]], s.out->d, out_[node.id],
        s.out->d, diff_[node.id], nullptr, nullptr, xd->d, dx, s.stats->d, master(node.id, 0), master(node.id, 1),
        grad(node.id, 0), grad(node.id, 1), eps, s.saved_mean.data(), s.saved_inv_var.data(), act, workspace_.data(),
        workspace_.bytes(), s.reserve.data(), s.reserve_bytes));
    ready(node);
  });
  if (!data_grad) allocate_scratch(src.out.elements() * esize());
}

}  // namespace cnnbench::cuda
