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

// The graph, as graph_if_faster() chooses against `plain` (cuDNN's chosen data gradient and the
// ReLU's backward kernel in place), on the search's tensors.
void CudaPlan::choose_dgrad_relu(const Node& node, ConvAlgos& a, void* dx, void* w, void* dy, void* relu_out,
                                 const std::function<bool()>& plain) {
  const FusedConvSpec spec = dgrad_relu_spec(node);
  FusedConv::Pointers p{};
  p[FusedConv::x] = dx;
  p[FusedConv::w] = w;
  p[FusedConv::y] = dy;
  p[FusedConv::relu_out] = relu_out;
  a.dgrad_relu = graph_if_faster(spec, p, plain, &a.dgrad_relu_ms, &a.plain_dgrad_ms);
  if (a.dgrad_relu) a.workspace = std::max(a.workspace, a.dgrad_relu->workspace_bytes());
}

FusedConvSpec CudaPlan::dgrad_relu_spec(const Node& node) const {
  FusedConvSpec spec = fused_spec(node, FusedConvSpec::data_gradient, false, false);
  spec.relu_mask = true;
  return spec;
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

FusedConvSpec CudaPlan::bias_relu_spec(const Node& node) const {
  FusedConvSpec spec = fused_spec(node, FusedConvSpec::forward, false, false);
  spec.c = stored_shape(node.inputs[0]).c;  // a padded input's stored channels
  spec.bias_relu = true;
  return spec;
}

// The graph, as graph_if_faster() chooses against `plain` (the chosen convolution and add_bias()),
// on the search's tensors x, w, y and the arena's bias.
void CudaPlan::choose_bias_relu(const Node& node, ConvAlgos& a, void* x, void* w, void* y,
                                const std::function<bool()>& plain) {
  const FusedConvSpec spec = bias_relu_spec(node);
  FusedConv::Pointers p{};
  p[FusedConv::x] = x;
  p[FusedConv::w] = w;
  p[FusedConv::y] = y;
  p[FusedConv::out_bias] = weights(node.id, 1);
  a.bias_relu = graph_if_faster(spec, p, plain, &a.bias_relu_ms, &a.plain_ms);
  if (a.bias_relu) a.workspace = std::max(a.workspace, a.bias_relu->workspace_bytes());
}

// The spec's graph where cuDNN builds one and its workspace fits the search's limit: with a timed
// search (its fastest engine on `p`) only where it ran faster than `plain`, both medians stored in
// *graph_ms and *plain_ms; without, wherever it builds. Null: the plain way.
std::shared_ptr<FusedConv> CudaPlan::graph_if_faster(const FusedConvSpec& spec, const FusedConv::Pointers& p,
                                                     const std::function<bool()>& plain, float* graph_ms,
                                                     float* plain_ms) {
  const std::shared_ptr<FusedConv> g = timed_search_ ? timed_fused_conv(spec, p) : fused_conv(spec);
  if (!g || g->workspace_bytes() > search_limit_) return nullptr;
  if (!timed_search_) return g;
  *graph_ms = fused_convs_[spec.key()].ms;
  *plain_ms = median_ms(plain);
  return *graph_ms > 0 && (*plain_ms < 0 || *graph_ms < *plain_ms) ? g : nullptr;
}

}  // namespace cnnbench::cuda
