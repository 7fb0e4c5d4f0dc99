// kernels/onednn/conv.cc — convolution: forward, data gradient (oneDNN's convolution or, with
// AMX, a oneDNN matmul: matmul_data_grad.cc), and the weight gradient from oneDNN's convolution,
// cnnbench's bf16 1x1 kernel (bf16_weight_grad.h) or, with AMX, a oneDNN matmul
// (matmul_weight_grad.cc).
#include "kernels/onednn/plan_internal.h"

#include <algorithm>

#include "kernels/onednn/bf16_weight_grad.h"
#include "kernels/onednn/blocked_layout.h"
#include "kernels/onednn/depthwise_weight_grad.h"

namespace cnnbench::onednn {

namespace {

// Weights (O x I x kh x kw, or grouped G x O/G x I/G x kh x kw: the same bytes as the graph's
// O x I/G x kh x kw), strides and padding of a convolution; the right/bottom padding is what makes
// oneDNN's output size the graph's.
struct ConvGeometry {
  memory::dims weights, strides, pad_l, pad_r;
};

memory::dims weight_dims(const Node& node, const Node& in) {
  const ConvAttrs& c = node.conv;
  if (c.groups == 1) return {c.out_channels, in.out.c, c.kernel_h, c.kernel_w};
  return {c.groups, c.out_channels / c.groups, in.out.c / c.groups, c.kernel_h, c.kernel_w};
}

ConvGeometry conv_geometry(const Node& node, const Node& in) {
  const ConvAttrs& c = node.conv;
  return {weight_dims(node, in),
          {c.stride, c.stride},
          {c.pad_h, c.pad_w},
          {(node.out.h - 1) * c.stride + c.kernel_h - in.out.h - c.pad_h,
           (node.out.w - 1) * c.stride + c.kernel_w - in.out.w - c.pad_w}};
}

}  // namespace

void OnednnPlan::compile_conv_forward(const Node& node) {
  const Node& in = graph_.nodes[node.inputs[0]];
  const memory::dims src_dims = dims(in), dst_dims = dims(node);
  const auto [w_dims, strides, pad_l, pad_r] = conv_geometry(node, in);
  const memory::desc bias_md({node.conv.out_channels}, dt::f32, tag::x);
  auto desc = node.conv.bias
                  ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                    dnnl::algorithm::convolution_direct, act(src_dims),
                                                    act(w_dims), bias_md, act(dst_dims), strides,
                                                    pad_l, pad_r)
                  : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                                    dnnl::algorithm::convolution_direct, act(src_dims),
                                                    act(w_dims), act(dst_dims), strides, pad_l, pad_r);
  auto pd = ONEDNN_CHECK(where(node, "creating the forward convolution"),
                         dnnl::convolution_forward::primitive_desc(desc, relu_attr(node), engine_));
  weighted_forward(node, pd, dnnl::convolution_forward(pd),
                   memory::desc(w_dims, dt::f32, node.conv.groups == 1 ? tag::oihw : tag::goihw),
                   node.conv.bias ? &bias_md : nullptr);
}

void OnednnPlan::compile_conv_backward(const Node& node) {
  const Node& in = graph_.nodes[node.inputs[0]];
  WeightedState& s = conv_[node.id];
  auto fwd_pd = dnnl::convolution_forward::primitive_desc(s.forward_pd.get());

  // weights (and bias) gradient
  const size_t first = backward_.size();
  if (!compile_own_weight_grad(node, in, s) && !compile_matmul_weight_grad(node, in, s))
    compile_onednn_weight_grad(node, in, s, fwd_pd);
  mark_weight_grad(first);
  gradients_ready_step(node);

  // data gradient
  if (in.id == 0 && !input_grad_) return;
  if (compile_matmul_data_grad(node, in, s)) return;
  const memory::dims src_dims = dims(in), dst_dims = dims(node);
  const auto [w_dims, strides, pad_l, pad_r] = conv_geometry(node, in);
  auto ddesc = dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, act(src_dims),
                                                     act(w_dims), act(dst_dims), strides, pad_l, pad_r);
  auto dpd = ONEDNN_CHECK(where(node, "creating the backward-data convolution"),
                          dnnl::convolution_backward_data::primitive_desc(ddesc, engine_, fwd_pd));
  weighted_data_grad(node, s, dpd, dnnl::convolution_backward_data(dpd));
}

// A bf16 1x1 convolution without bias, its input and output gradient in 16-channel blocks:
// the weight gradient comes from bf16_weight_grad.h, straight into the plain fp32 arena.
bool OnednnPlan::compile_own_weight_grad(const Node& node, const Node& in, const WeightedState& s) {
  if (!own_kernels_ || act_dt_ != dt::bf16 || node.conv.groups != 1 || node.conv.kernel_h != 1 ||
      node.conv.kernel_w != 1 || node.conv.pad_h != 0 || node.conv.pad_w != 0 || node.conv.bias)
    return false;
  const memory::desc src_md(dims(in), dt::bf16, tag::nChw16c), dst_md(dims(node), dt::bf16, tag::nChw16c);
  if (!(s.src.get_desc() == src_md)) return false;
  const WeightGrad1x1 shape{node.out.n, in.out.c, node.out.c, node.out.h, node.out.w, node.conv.stride,
                            *BlockedLayout::of(src_md), *BlockedLayout::of(dst_md)};
  if (!weight_grad_1x1_supported(shape)) return false;
  const memory diff_dst = backward_view(node.id, dst_md);
  kernel_scratch_bytes_ = std::max(kernel_scratch_bytes_, weight_grad_1x1_scratch_bytes(shape, threads_));
  backward_.push_back({{}, {}, [this, shape, src = s.src, diff_dst, dw = s.diff_weights_plain] {
                         weight_grad_1x1(shape, static_cast<const uint16_t*>(src.get_data_handle()),
                                         static_cast<const uint16_t*>(diff_dst.get_data_handle()),
                                         static_cast<float*>(dw.get_data_handle()), kernel_scratch_.data(),
                                         threads_);
                       },
                       {s.src, diff_dst}});
  ++own_weight_grads_;
  return true;
}

void OnednnPlan::compile_onednn_weight_grad(const Node& node, const Node& in, const WeightedState& s,
                                const dnnl::convolution_forward::primitive_desc& fwd_pd) {
  const memory::dims dst_dims = dims(node);
  const auto [w_dims, strides, pad_l, pad_r] = conv_geometry(node, in);
  const memory::desc bias_md({node.conv.out_channels}, dt::f32, tag::x);
  auto wdesc = node.conv.bias
                   ? dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct,
                                                              s.src.get_desc(), any_md(w_dims), bias_md,
                                                              act(dst_dims), strides, pad_l, pad_r)
                   : dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct,
                                                              s.src.get_desc(), any_md(w_dims),
                                                              act(dst_dims), strides, pad_l, pad_r);
  auto wpd = ONEDNN_CHECK(where(node, "creating the backward-weights convolution"),
                          dnnl::convolution_backward_weights::primitive_desc(wdesc, engine_, fwd_pd));
  // oneDNN's reference loop (no JIT kernel for the shape): cnnbench's depthwise kernel if it fits
  if (std::string(wpd.impl_info_str()).rfind("ref", 0) == 0 && compile_depthwise_weight_grad(node, in, s)) return;
  weighted_weight_grad(node, s, wpd, dnnl::convolution_backward_weights(wpd), node.conv.bias);
}

// A depthwise convolution without bias on channel-blocked activations (depthwise_weight_grad.h).
bool OnednnPlan::compile_depthwise_weight_grad(const Node& node, const Node& in, const WeightedState& s) {
  const ConvAttrs& c = node.conv;
  if (!own_kernels_ || c.groups != in.out.c || c.out_channels != in.out.c || c.bias) return false;
  const auto src = BlockedLayout::of(s.src.get_desc());
  if (!src || (src->block != 8 && src->block != 16)) return false;
  const memory::desc dst_md(dims(node), act_dt_, src->block == 16 ? tag::nChw16c : tag::nChw8c);
  const DepthwiseWeightGrad shape{node.out.n, in.out.c, in.out.h, in.out.w, node.out.h, node.out.w, c.kernel_h,
                                  c.kernel_w, c.stride, c.pad_h, c.pad_w, *src, *BlockedLayout::of(dst_md)};
  if (!depthwise_weight_grad_supported(shape)) return false;
  const memory diff_dst = backward_view(node.id, dst_md);
  backward_.push_back({{}, {}, [this, shape, src = s.src, diff_dst, dw = s.diff_weights_plain, bf16 = act_dt_ == dt::bf16] {
                         depthwise_weight_grad(shape, src.get_data_handle(), diff_dst.get_data_handle(), bf16,
                                               static_cast<float*>(dw.get_data_handle()), threads_);
                       },
                       {s.src, diff_dst}});
  ++depthwise_weight_grads_;
  return true;
}

}  // namespace cnnbench::onednn
