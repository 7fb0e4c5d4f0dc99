// kernels/cuda/batch_norm.cc — CudaPlan's batch norm: cuDNN's training forward and backward
// (spatial persistent, with the following ReLU fused for fp16) and its inference forward; in
// fp16 also batch norm + residual add + ReLU as one call each way (BN_ADD_ACTIVATION), where
// kernels/device_tensors.h decided it.
#include "kernels/cuda/plan_internal.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {

void CudaPlan::compile_batch_norm(const Node& node) {
  if (tensors_.bn_into_conv[node.id] >= 0) return compile_folded_batch_norm(node);  // conv_bn.cc
  NodeState& s = nodes_[node.id];
  const Node& src = graph_.nodes[node.inputs[0]];
  const auto x = nhwc_desc(src.out, type_);
  s.stats = std::make_unique<TensorDesc>();
  const cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  CUDA_CHECK(cudnnDeriveBNTensorDescriptor(s.stats->d, x->d, mode));
  const int relu = tensors_.fused_relu_of[node.id];
  const bool with_add = tensors_.fused_into_add[node.id] >= 0;
  // cuDNN fuses the activation for fp16 NHWC with channels a multiple of 4
  const bool fused = with_add || (relu >= 0 && type_ == DType::f16 && node.out.c % 4 == 0);
  s.bn_ops = with_add ? CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION
             : fused  ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION
                      : CUDNN_BATCHNORM_OPS_BN;
  cudnnActivationDescriptor_t act = fused ? activation_.d : nullptr;
  cudnnTensorDescriptor_t z = with_add ? s.out->d : nullptr;  // the residual and its gradient: the output's shape
  size_t fw = 0, bw = 0;
  CUDA_CHECK(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(cudnn_, mode, s.bn_ops, x->d, z, s.out->d,
                                                                      s.stats->d, act, &fw));
  CUDA_CHECK(cudnnGetBatchNormalizationBackwardExWorkspaceSize(cudnn_, mode, s.bn_ops, x->d, s.out->d, s.out->d, z,
                                                               x->d, s.stats->d, act, &bw));
  CUDA_CHECK(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(cudnn_, mode, s.bn_ops, act, x->d,
                                                                  &s.reserve_bytes));
  workspace_bytes_ = std::max({workspace_bytes_, fw, bw});
  s.saved_mean = DeviceBuffer(node.out.c * 4);
  s.saved_inv_var = DeviceBuffer(node.out.c * 4);
  if (s.reserve_bytes) s.reserve = DeviceBuffer(s.reserve_bytes);
  const bool data_grad = wants_grad(src.id);
  if (!data_grad) allocate_scratch(src.out.elements() * esize());
  if (with_add) return;  // compile_bn_add_relu() launches it, at the add's place
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
}

// y = relu(bn(x) + residual), launched at the add's place: the residual is ready there in
// forward, and backward reaches the add before the batch norm and the residual's producer. The
// forward writes the add's (and the in-place ReLU's) buffer; the backward reads its gradient
// and writes the batch norm input's (or adds to it) and the residual's (the add is the
// residual's last reader, so it writes). Inference: batch norm into the add's buffer, then the
// add kernel with its ReLU in place.
void CudaPlan::compile_bn_add_relu(const Node& bn, const Node& add) {
  NodeState& s = nodes_[bn.id];
  const int k_residual = add.inputs[0] == bn.id ? 1 : 0, residual = add.inputs[k_residual], x = bn.inputs[0];
  if (accumulates(add, k_residual)) throw std::logic_error("BN+add+ReLU: the residual's gradient is summed");
  const cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  const double eps = bn.batch_norm.epsilon, momentum = bn.batch_norm.momentum;
  auto xd = std::shared_ptr<TensorDesc>(nhwc_desc(graph_.nodes[x].out, type_));
  const int64_t count = add.out.elements();
  push_forward(
      add.id,
      [this, &bn, &add, &s, xd, mode, eps, momentum, x, residual] {
        const float one = 1.0f, zero = 0.0f;
        CUDA_CHECK(cudnnBatchNormalizationForwardTrainingEx(
            cudnn_, mode, s.bn_ops, &one, &zero, xd->d, out_[x], s.out->d, out_[residual], s.out->d, out_[add.id],
            s.stats->d, master(bn.id, 0), master(bn.id, 1), momentum, buffer(bn.id, 0), buffer(bn.id, 1), eps,
            s.saved_mean.data(), s.saved_inv_var.data(), activation_.d, workspace_.data(), workspace_.bytes(),
            s.reserve.data(), s.reserve_bytes));
      },
      [this, &bn, &add, &s, xd, eps, x, residual, count] {
        const float one = 1.0f, zero = 0.0f;
        CUDA_CHECK(cudnnBatchNormalizationForwardInference(
            cudnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd->d, out_[x], s.out->d, out_[add.id], s.stats->d,
            master(bn.id, 0), master(bn.id, 1), buffer(bn.id, 0), buffer(bn.id, 1), eps));
        cuda::add_forward(out_[add.id], out_[residual], out_[add.id], count, true, type_, stream_);
      });
  const bool data_grad = wants_grad(x), residual_grad = wants_grad(residual), acc = accumulates(bn, 0);
  if (acc) throw std::logic_error("BN+add+ReLU: the batch norm's input has another reader");
  void* residual_scratch = residual_grad ? nullptr : allocate(count * esize());
  push_backward(add.id, [this, &bn, &add, &s, xd, mode, eps, x, residual, data_grad, acc, residual_scratch] {
    const float one = 1.0f, zero = 0.0f, beta = acc ? 1.0f : 0.0f;
    void* dx = data_grad ? diff_[x] : scratch_.data();
    void* dz = residual_scratch ? residual_scratch : diff_[residual];
    CUDA_CHECK(cudnnBatchNormalizationBackwardEx(
        cudnn_, mode, s.bn_ops, &one, &beta, &one, &zero, xd->d, out_[x], s.out->d, out_[add.id], s.out->d,
        diff_[add.id], s.out->d, dz, xd->d, dx, s.stats->d, master(bn.id, 0), master(bn.id, 1), grad(bn.id, 0),
        grad(bn.id, 1), eps, s.saved_mean.data(), s.saved_inv_var.data(), activation_.d, workspace_.data(),
        workspace_.bytes(), s.reserve.data(), s.reserve_bytes));
    ready(bn);
  });
}

}  // namespace cnnbench::cuda
