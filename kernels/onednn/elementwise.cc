// kernels/onednn/elementwise.cc — ReLU (alone, or folded into the op before it), add, and the
// option-A shortcut of the CIFAR ResNets (a strided copy on the host in oneDNN's layout).
#include "kernels/onednn/plan_internal.h"

#include <cstring>

#include "kernels/cpu_ops.h"
#include "kernels/onednn/blocked_layout.h"
#include "kernels/ref/elementwise.h"

namespace cnnbench::onednn {

namespace {

// Option-A shortcut, run on the host directly in the blocked layout oneDNN chose for the
// input (a strided copy: y[n, c + pad, h, w] = x[n, c, h*s + offset, w*s + offset]); padded
// channels of y, and rows and columns read from past x's edge, stay at the zeros written first.
ref::ShortcutGeometry shortcut_geometry(const Graph& graph, const Node& node) {
  const Shape& in = graph.nodes[node.inputs[0]].out;
  return {in.n, in.c, in.h, in.w, node.out.c, node.out.h, node.out.w, node.shortcut.stride,
          node.shortcut.pad_front, node.shortcut.offset};
}

// Calls f(x_offset, y_offset) for every element the shortcut copies. Channel offsets are
// tabled once so the inner loop has no division.
struct ShortcutWalk {
  ref::ShortcutGeometry g;
  BlockedLayout x, y;
  std::vector<int64_t> x_channel, y_channel;
  ShortcutWalk(const ref::ShortcutGeometry& geometry, const BlockedLayout& xl, const BlockedLayout& yl)
      : g(geometry), x(xl), y(yl) {
    for (int64_t c = 0; c < g.c; ++c) {
      x_channel.push_back(x.offset(0, c, 0, 0));
      y_channel.push_back(y.offset(0, c + g.pad_front, 0, 0));
    }
  }
  template <class F>
  void run(F&& f) const {
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < g.n; ++n)
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const int64_t iy = g.source(oy, g.h), ix = g.source(ox, g.w);
          if (iy < 0 || ix < 0) continue;
          const int64_t xb = x.offset(n, 0, iy, ix), yb = y.offset(n, 0, oy, ox);
          for (int64_t c = 0; c < g.c; ++c) f(xb + x_channel[c], yb + y_channel[c]);
        }
  }
};

}  // namespace

BlockedLayout layout_of(const memory& m, const Node& node) {
  const auto layout = BlockedLayout::of(m.get_desc());
  if (!layout) throw std::invalid_argument(where(node, "input layout is not plain or channel-blocked"));
  return *layout;
}

// ReLU, or ReLU6 as oneDNN's clip_v2 to [0, 6]: its gradient passes strictly inside, as the
// reference's (clip's passes at 6 too).
namespace {
dnnl::algorithm relu_algorithm(const Node& node, bool from_dst = false) {
  if (node.kind == OpKind::relu6)
    return from_dst ? dnnl::algorithm::eltwise_clip_v2_use_dst_for_bwd : dnnl::algorithm::eltwise_clip_v2;
  return from_dst ? dnnl::algorithm::eltwise_relu_use_dst_for_bwd : dnnl::algorithm::eltwise_relu;
}
float relu_upper(const Node& node) { return node.kind == OpKind::relu6 ? 6.0f : 0.0f; }
}  // namespace

dnnl::primitive_attr OnednnPlan::relu_attr(const Node& node) const {
  dnnl::primitive_attr attr;
  if (fused_into_[node.id] >= 0) {
    const Node& relu = graph_.nodes[fused_into_[node.id]];
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, relu_algorithm(relu), 0.0f, relu_upper(relu));
    attr.set_post_ops(ops);
  }
  return attr;
}

dnnl::eltwise_forward::primitive_desc OnednnPlan::relu_forward_pd(const memory::desc& md, dnnl::algorithm alg,
                                                      const Node& node, float upper) {
  return ONEDNN_CHECK(where(node, "creating the forward ReLU"),
                      dnnl::eltwise_forward::primitive_desc(
                          dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, md, 0.0f, upper),
                          engine_));
}

// A ReLU or ReLU6 alone: its own output, its gradient masked from the input.
void OnednnPlan::compile_relu_forward(const Node& node) {
  const int src = node.inputs[0];
  auto pd = relu_forward_pd(mem_[src].get_desc(), relu_algorithm(node), node, relu_upper(node));
  mem_[node.id] = alloc(pd.dst_desc());
  both_forward(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, mem_[src]}, {DNNL_ARG_DST, mem_[node.id]}});
}

void OnednnPlan::compile_relu_backward(const Node& node) {
  const int src = node.inputs[0];
  auto fwd = relu_forward_pd(mem_[src].get_desc(), relu_algorithm(node), node, relu_upper(node));
  auto pd = ONEDNN_CHECK(where(node, "creating the backward ReLU"),
                         dnnl::eltwise_backward::primitive_desc(
                             dnnl::eltwise_backward::desc(relu_algorithm(node), diff_[node.id].get_desc(),
                                                          mem_[src].get_desc(), 0.0f, relu_upper(node)),
                             engine_, fwd));
  memory target = grad_target(src, pd.diff_src_desc());
  backward_.push_back({dnnl::eltwise_backward(pd),
                       {{DNNL_ARG_SRC, mem_[src]}, {DNNL_ARG_DIFF_DST, diff_[node.id]}, {DNNL_ARG_DIFF_SRC, target}},
                       {}});
  finish_grad(src, target);
}

// A ReLU6 folded into batch norm `norm`: applied in place on its output after each forward batch
// norm (a ReLU rides in batch norm's own fuse_norm_relu; nothing to do then, or with none folded).
void OnednnPlan::compile_relu_in_place(const Node& norm, Steps& steps) {
  if (fused_into_[norm.id] < 0 || norm_applies_relu(norm.id)) return;
  const Node& node = graph_.nodes[fused_into_[norm.id]];
  const memory y = mem_[norm.id];
  auto pd = relu_forward_pd(y.get_desc(), relu_algorithm(node, true), node, relu_upper(node));
  steps.push_back({dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, y}, {DNNL_ARG_DST, y}}, {}});
}

// ReLU or ReLU6 folded into a convolution or add, or ReLU6 into batch norm: its gradient is
// masked in place from the output. (A ReLU folded into batch norm is applied by batch-norm
// backward from the workspace.)
void OnednnPlan::compile_fused_relu_backward(const Node& node) {
  if (!masked_in_place(node.id) || relu_masked_in_sum_[node.id]) return;
  const memory::desc md = mem_[node.id].get_desc();
  auto fwd = relu_forward_pd(md, relu_algorithm(node, true), node, relu_upper(node));
  auto pd = ONEDNN_CHECK(where(node, "creating the in-place backward ReLU"),
                         dnnl::eltwise_backward::primitive_desc(
                             dnnl::eltwise_backward::desc(relu_algorithm(node, true), diff_[node.id].get_desc(), md,
                                                          0.0f, relu_upper(node)),
                             engine_, fwd));
  backward_.push_back({dnnl::eltwise_backward(pd),
                       {{DNNL_ARG_DST, mem_[node.id]},
                        {DNNL_ARG_DIFF_DST, diff_[node.id]},
                        {DNNL_ARG_DIFF_SRC, diff_[node.id]}},
                       {}});
}

void OnednnPlan::compile_add_forward(const Node& node) {
  const memory a = mem_[node.inputs[0]];
  const memory b = forward_view(node.inputs[1], a.get_desc());
  auto pd = ONEDNN_CHECK(where(node, "creating the binary add"),
                         dnnl::binary::primitive_desc(
                             dnnl::binary::desc(dnnl::algorithm::binary_add, a.get_desc(), b.get_desc(), a.get_desc()),
                             relu_attr(node), engine_));
  mem_[node.id] = alloc(pd.dst_desc());
  both_forward(dnnl::binary(pd), {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, mem_[node.id]}});
}

void OnednnPlan::compile_add_backward(const Node& node) {
  for (int u : node.inputs)
    if (!same(diff_[u], diff_[node.id])) finish_grad(u, diff_[node.id]);
    else grad_written_[u] = true;
}

void OnednnPlan::compile_shortcut_forward(const Node& node) {
  const int src = node.inputs[0];
  // the output keeps the input's layout family: blocked in, blocked out
  const int64_t block = layout_of(mem_[src], node).block;
  const tag out_tag = block == 16 ? tag::nChw16c : block == 8 ? tag::nChw8c : block == 4 ? tag::nChw4c : tag::nchw;
  mem_[node.id] = alloc(memory::desc(dims(node), act_dt_, out_tag));
  auto host = [x = mem_[src], y = mem_[node.id], wide = act_dt_ == dt::f32,
               walk = ShortcutWalk(shortcut_geometry(graph_, node), layout_of(mem_[src], node), layout_of(mem_[node.id], node))] {
    auto copy = [&](auto* out, const auto* in) { walk.run([&](int64_t xi, int64_t yi) { out[yi] = in[xi]; }); };
    // the padding channels are never copied to: zero them every step, as the bytes may be shared
    std::memset(y.get_data_handle(), 0, y.get_desc().get_size());  // 0 in fp32 and bf16
    if (wide)
      copy(static_cast<float*>(y.get_data_handle()), static_cast<const float*>(x.get_data_handle()));
    else
      copy(static_cast<uint16_t*>(y.get_data_handle()), static_cast<const uint16_t*>(x.get_data_handle()));
  };
  forward_training_.push_back({{}, {}, host, {mem_[src], mem_[node.id]}});
  forward_inference_.push_back({{}, {}, host, {mem_[src], mem_[node.id]}});
}

void OnednnPlan::compile_shortcut_backward(const Node& node) {
  const int src = node.inputs[0];
  memory target = grad_target(src, mem_[src].get_desc());
  backward_.push_back({{}, {}, [dy = diff_[node.id], dx = target, wide = act_dt_ == dt::f32,
                                walk = ShortcutWalk(shortcut_geometry(graph_, node), layout_of(target, node),
                                                    layout_of(diff_[node.id], node))] {
                         std::memset(dx.get_data_handle(), 0, dx.get_desc().get_size());  // 0 in fp32 and bf16
                         auto scatter = [&](auto* out, const auto* in) {
                           walk.run([&](int64_t xi, int64_t yi) { out[xi] = in[yi]; });
                         };
                         if (wide)
                           scatter(static_cast<float*>(dx.get_data_handle()), static_cast<const float*>(dy.get_data_handle()));
                         else
                           scatter(static_cast<uint16_t*>(dx.get_data_handle()),
                                   static_cast<const uint16_t*>(dy.get_data_handle()));
                       },
                       {diff_[node.id], target}});
  finish_grad(src, target);
}

}  // namespace cnnbench::onednn
