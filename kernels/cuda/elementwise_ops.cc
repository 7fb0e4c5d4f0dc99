// kernels/cuda/elementwise_ops.cc — CudaPlan's elementwise ops: ReLU (alone or fused into its
// producer) and ReLU6, add, the ResNet shortcut and channel concatenation, launched as the
// kernels of tensor_kernels.h.
#include "kernels/cuda/plan_internal.h"

#include <limits>

#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {

// A ReLU alone (its input feeds others too) or in place (fused: nothing to launch forward
// when batch norm, the add or the conv bias applied it). A ReLU6 is always alone (cuda_plan.cc
// aliases ReLUs only): the same kernels, capped at 6.
void CudaPlan::compile_relu(const Node& node) {
  const int p = node.inputs[0];
  const int64_t count = node.out.elements();
  const float cap = node.kind == OpKind::relu6 ? 6.0f : std::numeric_limits<float>::infinity();
  const bool in_place = tensors_.alias_of[node.id] != node.id;
  const Node& producer = graph_.nodes[p];
  const bool applied_by_producer =
      in_place && (producer.kind == OpKind::batch_norm || producer.kind == OpKind::add ||
                   producer.kind == OpKind::linear || (producer.kind == OpKind::conv && producer.conv.bias));
  if (!applied_by_producer)
    push_forward(node.id, [this, p, &node, count, cap] {
      cuda::relu_forward(out_[p], out_[node.id], count, type_, stream_, cap);
    });
  // batch norm (fused, or folded into convolutions), add and a convolution with bias (conv.cc)
  // take the mask themselves;
  // others are masked here
  const bool masked_by_producer =
      in_place && (producer.kind == OpKind::add || (producer.kind == OpKind::conv && producer.conv.bias) ||
                   (producer.kind == OpKind::batch_norm && (nodes_[p].bn_ops == CUDNN_BATCHNORM_OPS_BN_ACTIVATION ||
                                                            tensors_.bn_into_conv[p] >= 0)));
  if (masked_by_producer || masking_pool(node.id) >= 0 || masking_conv(node.id) >= 0 || !wants_grad(p)) return;
  const bool acc = !in_place && accumulates(node, 0);
  push_backward(node.id, [this, p, &node, count, acc, cap] {
    cuda::relu_backward(out_[node.id], diff_[node.id], diff_[p], count, acc, type_, stream_, cap);
  });
}

// Dropout after a fully connected layer: the mask from the plan's seed and the step on the
// device (forward() sets it), recomputed in backward; inference copies.
void CudaPlan::compile_dropout(const Node& node) {
  const int src = node.inputs[0];
  const int64_t count = node.out.elements();
  const float rate = node.dropout.rate;
  push_forward(
      node.id,
      [this, src, &node, count, rate] {
        cuda::dropout_apply(out_[src], out_[node.id], count, dropout_seed_, node.id, d_dropout_step_.as<uint64_t>(), rate,
                            false, type_, stream_);
      },
      [this, src, &node, count] {
        CUDA_CHECK(cudaMemcpyAsync(out_[node.id], out_[src], count * esize(), cudaMemcpyDeviceToDevice, stream_));
      });
  if (!wants_grad(src)) return;
  const bool acc = accumulates(node, 0);
  push_backward(node.id, [this, src, &node, count, rate, acc] {
    cuda::dropout_apply(diff_[node.id], diff_[src], count, dropout_seed_, node.id, d_dropout_step_.as<uint64_t>(), rate,
                        acc, type_, stream_);
  });
}

// Local response normalisation across channels: kernels of our own on the NHWC rows.
void CudaPlan::compile_lrn(const Node& node) {
  const int src = node.inputs[0];
  const int64_t rows = node.out.n * node.out.h * node.out.w, channels = node.out.c;
  const LrnAttrs a = node.lrn;
  push_forward(node.id, [this, src, &node, rows, channels, a] {
    cuda::lrn_forward(out_[src], out_[node.id], rows, channels, a.radius, a.bias, a.alpha, a.beta, type_, stream_);
  });
  if (!wants_grad(src)) return;
  const bool acc = accumulates(node, 0);
  push_backward(node.id, [this, src, &node, rows, channels, a, acc] {
    cuda::lrn_backward(out_[src], diff_[node.id], diff_[src], rows, channels, a.radius, a.bias, a.alpha, a.beta, acc,
                       type_, stream_);
  });
}

void CudaPlan::compile_add(const Node& node) {
  if (const int bn = tensors_.fused_bn_of[node.id]; bn >= 0) return compile_bn_add_relu(graph_.nodes[bn], node);
  const int a = node.inputs[0], b = node.inputs[1];
  const int64_t count = node.out.elements();
  const bool relu = tensors_.fused_relu_of[node.id] >= 0;
  push_forward(node.id, [this, &node, a, b, count, relu] {
    cuda::add_forward(out_[a], out_[b], out_[node.id], count, relu, type_, stream_);
  });
  const bool acc_a = accumulates(node, 0), acc_b = accumulates(node, 1);
  void* scratch = nullptr;
  if (!wants_grad(a) || !wants_grad(b)) scratch = allocate(count * esize());
  push_backward(node.id, [this, &node, a, b, count, relu, acc_a, acc_b, scratch] {
    cuda::add_backward(out_[node.id], diff_[node.id], wants_grad(a) ? diff_[a] : scratch,
                       wants_grad(b) ? diff_[b] : scratch, count, relu, acc_a, acc_b, type_, stream_);
  });
}

void CudaPlan::compile_shortcut(const Node& node) {
  const Node& src = graph_.nodes[node.inputs[0]];
  const Shape i = src.out, o = node.out;
  const int64_t stride = node.shortcut.stride, pad = node.shortcut.pad_front, offset = node.shortcut.offset;
  push_forward(node.id, [this, &node, i, o, stride, pad, offset] {
    cuda::shortcut_forward(out_[node.inputs[0]], out_[node.id], i.n, i.c, i.h, i.w, o.c, o.h, o.w, stride, pad,
                           offset, type_, stream_);
  });
  if (!wants_grad(src.id)) return;
  const bool acc = accumulates(node, 0);
  push_backward(node.id, [this, &node, i, o, stride, pad, offset, acc] {
    cuda::shortcut_backward(diff_[node.id], diff_[node.inputs[0]], i.n, i.c, i.h, i.w, o.c, o.h, o.w, stride, pad,
                            offset, acc, type_, stream_);
  });
}

// Concatenation: each input copied into its channel slice; backward copies each slice back
// (summed where the input's gradient already holds another consumer's).
void CudaPlan::compile_concat(const Node& node) {
  const int64_t rows = node.out.n * node.out.h * node.out.w, total = node.out.c;
  int64_t start = 0;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const int u = node.inputs[k];
    const int64_t channels = graph_.nodes[u].out.c;
    push_forward(node.id, [this, &node, u, rows, total, start, channels] {
      cuda::copy_channels(out_[u], channels, 0, out_[node.id], total, start, rows, channels, false, type_, stream_);
    });
    if (wants_grad(u)) {
      const bool acc = accumulates(node, k);
      push_backward(node.id, [this, &node, u, rows, total, start, channels, acc] {
        cuda::copy_channels(diff_[node.id], total, start, diff_[u], channels, 0, rows, channels, acc, type_, stream_);
      });
    }
    start += channels;
  }
}

}  // namespace cnnbench::cuda
