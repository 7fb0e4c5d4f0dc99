// kernels/onednn/lrn.cc — local response normalisation across channels, forward and backward
// (oneDNN's lrn_across_channels; its alpha is divided by the window, tf.nn.lrn's is not).
#include "kernels/onednn/plan_internal.h"

namespace cnnbench::onednn {

namespace {

struct LrnParams {
  memory::dim size;
  float alpha, beta, k;
};

LrnParams lrn_params(const Node& node) {
  const memory::dim size = 2 * node.lrn.radius + 1;
  return {size, node.lrn.alpha * static_cast<float>(size), node.lrn.beta, node.lrn.bias};
}

}  // namespace

void OnednnPlan::compile_lrn_forward(const Node& node) {
  const int src = node.inputs[0];
  if (flat_[src]) throw std::invalid_argument(where(node, "normalises a 2-D tensor (lrn needs channels of a 4-D one)"));
  const LrnParams p = lrn_params(node);
  auto pd = ONEDNN_CHECK(where(node, "creating the forward LRN"),
                         dnnl::lrn_forward::primitive_desc(
                             dnnl::lrn_forward::desc(dnnl::prop_kind::forward_training,
                                                     dnnl::algorithm::lrn_across_channels, mem_[src].get_desc(), p.size,
                                                     p.alpha, p.beta, p.k),
                             engine_));
  LrnState& s = lrn_[node.id];
  s.forward_pd = pd;
  mem_[node.id] = alloc(pd.dst_desc());
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, mem_[src]}, {DNNL_ARG_DST, mem_[node.id]}};
  if (pd.workspace_desc().get_size() > 0) {
    s.workspace = alloc(pd.workspace_desc());
    args[DNNL_ARG_WORKSPACE] = s.workspace;
  }
  both_forward(dnnl::lrn_forward(pd), args);
}

void OnednnPlan::compile_lrn_backward(const Node& node) {
  const int src = node.inputs[0];
  const LrnParams p = lrn_params(node);
  const LrnState& s = lrn_[node.id];
  auto pd = ONEDNN_CHECK(where(node, "creating the backward LRN"),
                         dnnl::lrn_backward::primitive_desc(
                             dnnl::lrn_backward::desc(dnnl::algorithm::lrn_across_channels, mem_[src].get_desc(),
                                                      diff_[node.id].get_desc(), p.size, p.alpha, p.beta, p.k),
                             engine_, s.forward_pd));
  memory dy = backward_view(node.id, pd.diff_dst_desc());
  memory target = grad_target(src, pd.diff_src_desc());
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, mem_[src]}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_SRC, target}};
  if (s.workspace) args[DNNL_ARG_WORKSPACE] = s.workspace;
  backward_.push_back({dnnl::lrn_backward(pd), args, {}});
  finish_grad(src, target);
}

}  // namespace cnnbench::onednn
