// kernels/cuda/linear_loss.cc — CudaPlan's linear layer (cuBLAS) and the softmax cross-entropy
// loss on its fp32 logits.
#include "kernels/cuda/plan_internal.h"

#include <cstring>
#include <stdexcept>

#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {

// y[n x o] = x[n x i] w[o x i]^T (+ bias): cuBLAS is column-major, so it computes y^T.
void CudaPlan::compile_linear(const Node& node) {
  const Node& src = graph_.nodes[node.inputs[0]];
  const int batch = static_cast<int>(node.out.n), o = static_cast<int>(node.linear.out_features),
            i = static_cast<int>(src.out.elements() / src.out.n);
  const DType yt = out_type(node.id);
  const bool bias = node.linear.bias;
  const int relu = tensors_.fused_relu_of[node.id];
  const cublasComputeType_t compute =
      type_ == DType::f32 && tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  push_forward(node.id, [this, &node, batch, o, i, yt, bias, relu, compute] {
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, o, batch, i, &one, weights(node.id, 0),
                              blas_type(type_), i, out_[node.inputs[0]], blas_type(type_), i, &zero, out_[node.id],
                              blas_type(yt), o, compute, CUBLAS_GEMM_DEFAULT));
    if (bias) cuda::add_bias(out_[node.id], master(node.id, 1), batch, o, false, yt, stream_);
    if (relu >= 0) cuda::relu_forward(out_[node.id], out_[node.id], int64_t{batch} * o, yt, stream_);
  });
  const bool data_grad = wants_grad(src.id);
  const bool acc = accumulates(node, 0);
  push_backward(node.id, [this, &node, batch, o, i, bias, compute] {
    const float one = 1.0f, zero = 0.0f;
    // dw^T [i x o] = x^T [i x n] dy [n x o], straight into the fp32 gradient
    CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, i, o, batch, &one, out_[node.inputs[0]],
                              blas_type(type_), i, diff_[node.id], blas_type(type_), o, &zero, grad(node.id, 0),
                              CUDA_R_32F, i, compute, CUBLAS_GEMM_DEFAULT));
    if (bias) cuda::bias_gradient(diff_[node.id], grad(node.id, 1), batch, o, type_, stream_);
    ready(node);
  }, true);
  if (data_grad)  // dx^T [i x n] = w^T [i x o] dy^T [o x n]
    push_backward(node.id, [this, &node, batch, o, i, acc, compute] {
      const float one = 1.0f, beta = acc ? 1.0f : 0.0f;
      CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, i, batch, o, &one, weights(node.id, 0),
                                blas_type(type_), i, diff_[node.id], blas_type(type_), o, &beta,
                                diff_[node.inputs[0]], blas_type(type_), i, compute, CUBLAS_GEMM_DEFAULT));
    });
}

const float* CudaPlan::logits_f32() {
  const int id = graph_.output;
  if (out_type(id) == DType::f32) return static_cast<const float*>(out_[id]);
  cuda::convert(out_[id], type_, d_logits_.data(), DType::f32, graph_.logits().out.elements(), 1.0f, stream_);
  return d_logits_.as<float>();
}

LossResult CudaPlan::loss(const int32_t* labels) {
  const Node& logits = graph_.logits();
  if (logits.out.h != 1 || logits.out.w != 1)
    throw std::invalid_argument("loss needs logits of shape n x classes, not " + logits.out.str());
  const int64_t n = logits.out.n, classes = logits.out.c;
  std::memcpy(pinned_labels_, labels, n * sizeof(int32_t));
  CUDA_CHECK(cudaMemcpyAsync(d_labels_.data(), pinned_labels_, n * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
  CUDA_CHECK(cudaMemsetAsync(d_totals_.data(), 0, 4 * sizeof(float), stream_));
  const float* z = logits_f32();
  cuda::softmax_cross_entropy_totals(z, d_labels_.as<int32_t>(), diff_[logits.id], d_totals_.as<float>(), n,
                                     classes, loss_gradient_scale_ * loss_scale_, type_, stream_, label_smoothing_);
  CUDA_CHECK(cudaMemcpyAsync(pinned_totals_, d_totals_.data(), 4 * sizeof(float), cudaMemcpyDeviceToHost, stream_));
  loss_pending_ = true;
  mark(1);
  LossResult result;
  result.deferred = true;
  return result;
}

}  // namespace cnnbench::cuda
