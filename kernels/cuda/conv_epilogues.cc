// kernels/cuda/conv_epilogues.cc — a convolution and the ReLU next to it as one cuDNN graph
// (cudnn_graph.h; fp16, compute capability 8.0 and later): the forward adding the bias and
// applying the ReLU as it writes (VGG's conv + bias + ReLU), and the data gradient doing the
// backward of the ReLU whose output it read (conv -> ReLU -> conv). Each is a candidate the
// algorithm search (conv.cc) keeps only where it ran faster than the plain way.
#include "kernels/cuda/plan_internal.h"

#include <algorithm>
#include <functional>
#include <memory>

namespace cnnbench::cuda {

// A convolution that alone reads the output of a ReLU run in place on a convolution (VGG's
// conv -> ReLU -> conv), fp16 from compute capability 8.0: its data gradient can apply the ReLU's
// backward as it writes (cudnn_graph.h), where the plain way writes it and the ReLU's producer
// (or the ReLU) reads it and the ReLU's output again and writes it masked.
bool CudaPlan::dgrad_relu_candidate(const Node& node) const {
  const int relu = node.inputs[0];
  const Node& r = graph_.nodes[relu];
  return fuse_ && type_ == DType::f16 && node.conv.groups == 1 && r.kind == OpKind::relu &&
         tensors_.alias_of[relu] != relu && graph_.nodes[r.inputs[0]].kind == OpKind::conv &&
         consumers_[relu].size() == 1 && wants_grad(relu) && !accumulates(node, 0) &&
         tensors_.prologue_bn[node.id] < 0 && compute_capability() >= 80;
}

// As choose_bias_relu(): the graph where cuDNN builds one, with a timed search only where it ran
// faster than `plain` (cuDNN's chosen data gradient and the ReLU's backward kernel in place).
void CudaPlan::choose_dgrad_relu(const Node& node, ConvAlgos& a, void* dx, void* w, void* dy, void* relu_out,
                                 const std::function<bool()>& plain) {
  FusedConvSpec spec = fused_spec(node, FusedConvSpec::data_gradient, false, false);
  spec.relu_mask = true;
  FusedConv::Pointers p{};
  p[FusedConv::x] = dx;
  p[FusedConv::w] = w;
  p[FusedConv::y] = dy;
  p[FusedConv::relu_out] = relu_out;
  const std::shared_ptr<FusedConv> g = timed_search_ ? timed_fused_conv(spec, p) : fused_conv(spec);
  if (!g || g->workspace_bytes() > search_limit_) return;
  if (timed_search_) {
    a.dgrad_relu_ms = fused_convs_[spec.key()].ms;
    a.plain_dgrad_ms = median_ms(plain);
    if (a.dgrad_relu_ms <= 0 || (a.plain_dgrad_ms >= 0 && a.dgrad_relu_ms >= a.plain_dgrad_ms)) return;
  }
  a.dgrad_relu = g;
  a.workspace = std::max(a.workspace, g->workspace_bytes());
}

int CudaPlan::masking_conv(int relu) {
  if (consumers_[relu].size() != 1) return -1;
  const Node& conv = graph_.nodes[consumers_[relu][0]];
  return conv.kind == OpKind::conv && dgrad_relu_candidate(conv) && choose_algorithms(conv).dgrad_relu ? conv.id : -1;
}

// A convolution with a bias that a ReLU follows (VGG's, AlexNet's), fp16 from compute capability
// 8.0: one cuDNN graph can add the bias and apply the ReLU as it writes the output
// (cudnn_graph.h), where the plain way writes the output and add_bias() reads and writes it again.
bool CudaPlan::bias_relu_candidate(const Node& node) const {
  return fuse_ && type_ == DType::f16 && node.conv.bias && node.conv.groups == 1 &&
         tensors_.fused_relu_of[node.id] >= 0 && tensors_.prologue_bn[node.id] < 0 &&
         tensors_.stats_bn[node.id] < 0 && compute_capability() >= 80;
}

// The graph where cuDNN builds one: with a timed search only where it ran faster than `plain`
// (the chosen convolution and add_bias(), timed alike), on the search's tensors x, w, y and the
// arena's bias; without, wherever it builds. Its workspace must fit the search's limit.
void CudaPlan::choose_bias_relu(const Node& node, ConvAlgos& a, void* x, void* w, void* y,
                                const std::function<bool()>& plain) {
  FusedConvSpec spec = fused_spec(node, FusedConvSpec::forward, false, false);
  spec.c = stored_shape(node.inputs[0]).c;  // a padded input's stored channels
  spec.bias_relu = true;
  FusedConv::Pointers p{};
  p[FusedConv::x] = x;
  p[FusedConv::w] = w;
  p[FusedConv::y] = y;
  p[FusedConv::out_bias] = weights(node.id, 1);
  const std::shared_ptr<FusedConv> g = timed_search_ ? timed_fused_conv(spec, p) : fused_conv(spec);
  if (!g || g->workspace_bytes() > search_limit_) return;
  if (timed_search_) {
    a.bias_relu_ms = fused_convs_[spec.key()].ms;
    a.plain_ms = median_ms(plain);
    if (a.bias_relu_ms <= 0 || (a.plain_ms >= 0 && a.bias_relu_ms >= a.plain_ms)) return;
  }
  a.bias_relu = g;
  a.workspace = std::max(a.workspace, g->workspace_bytes());
}

}  // namespace cnnbench::cuda
