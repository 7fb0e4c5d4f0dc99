// kernels/onednn/pool.cc — max, average and global average pooling, forward and backward.
#include "kernels/onednn/plan_internal.h"

namespace cnnbench::onednn {

namespace {

dnnl::algorithm pool_algorithm(const Node& node) {
  if (node.kind == OpKind::max_pool) return dnnl::algorithm::pooling_max;
  if (node.kind == OpKind::global_avg_pool || !node.pool.count_include_pad)
    return dnnl::algorithm::pooling_avg_exclude_padding;
  return dnnl::algorithm::pooling_avg_include_padding;
}

struct PoolGeometry {
  memory::dims strides, kernel, pad_l, pad_r;
};

PoolGeometry pool_geometry(const Graph& graph, const Node& node) {
  const Shape& in = graph.nodes[node.inputs[0]].out;
  if (node.kind == OpKind::global_avg_pool) return {{1, 1}, {in.h, in.w}, {0, 0}, {0, 0}};
  const int64_t k = node.pool.kernel, s = node.pool.stride, p = node.pool.pad;
  return {{s, s}, {k, k}, {p, p}, {(node.out.h - 1) * s + k - in.h - p, (node.out.w - 1) * s + k - in.w - p}};
}

}  // namespace

void OnednnPlan::compile_pool_forward(const Node& node) {
  const int src = node.inputs[0];
  const PoolGeometry g = pool_geometry(graph_, node);
  auto pd = ONEDNN_CHECK(where(node, "creating the forward pooling"),
                         dnnl::pooling_forward::primitive_desc(
                             dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, pool_algorithm(node),
                                                         mem_[src].get_desc(), act(dims(node)), g.strides,
                                                         g.kernel, g.pad_l, g.pad_r),
                             engine_));
  pool_[node.id].forward_pd = pd;
  mem_[node.id] = alloc(pd.dst_desc());
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, mem_[src]}, {DNNL_ARG_DST, mem_[node.id]}};
  if (pd.workspace_desc().get_size() > 0) {
    pool_[node.id].workspace = alloc(pd.workspace_desc());
    args[DNNL_ARG_WORKSPACE] = pool_[node.id].workspace;
  }
  both_forward(dnnl::pooling_forward(pd), args);
}

void OnednnPlan::compile_pool_backward(const Node& node) {
  const int src = node.inputs[0];
  const PoolGeometry g = pool_geometry(graph_, node);
  auto pd = ONEDNN_CHECK(where(node, "creating the backward pooling"),
                         dnnl::pooling_backward::primitive_desc(
                             dnnl::pooling_backward::desc(pool_algorithm(node), mem_[src].get_desc(),
                                                          diff_[node.id].get_desc(), g.strides, g.kernel,
                                                          g.pad_l, g.pad_r),
                             engine_, pool_[node.id].forward_pd));
  memory target = grad_target(src, pd.diff_src_desc());
  std::unordered_map<int, memory> args = {{DNNL_ARG_DIFF_DST, diff_[node.id]}, {DNNL_ARG_DIFF_SRC, target}};
  if (pool_[node.id].workspace) args[DNNL_ARG_WORKSPACE] = pool_[node.id].workspace;
  backward_.push_back({dnnl::pooling_backward(pd), args, {}});
  finish_grad(src, target);
}

}  // namespace cnnbench::onednn
