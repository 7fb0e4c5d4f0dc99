// kernels/onednn/linear_loss.cc — inner product (forward, weight and data gradients) and the
// softmax cross-entropy loss that seeds backward from the logits.
#include "kernels/onednn/plan_internal.h"

#include "kernels/cpu_ops.h"
#include "kernels/top_k.h"

namespace cnnbench::onednn {

void OnednnPlan::compile_linear_forward(const Node& node) {
  const Node& in = graph_.nodes[node.inputs[0]];
  const memory::dims src_dims = dims(in), dst_dims = dims(node);
  memory::dims w_dims = src_dims;
  w_dims[0] = node.linear.out_features;
  const memory::desc w_plain(w_dims, dt::f32, w_dims.size() == 2 ? tag::oi : tag::oihw);
  const memory::desc bias_md({node.linear.out_features}, dt::f32, tag::x);
  auto desc = node.linear.bias
                  ? dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, act(src_dims),
                                                      act(w_dims), bias_md, act(dst_dims))
                  : dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, act(src_dims),
                                                      act(w_dims), act(dst_dims));
  auto pd = ONEDNN_CHECK(where(node, "creating the forward inner product"),
                         dnnl::inner_product_forward::primitive_desc(desc, engine_));
  weighted_forward(node, pd, dnnl::inner_product_forward(pd), w_plain, node.linear.bias ? &bias_md : nullptr);
}

void OnednnPlan::compile_linear_backward(const Node& node) {
  const Node& in = graph_.nodes[node.inputs[0]];
  WeightedState& s = conv_[node.id];
  auto fwd_pd = dnnl::inner_product_forward::primitive_desc(s.forward_pd.get());
  const memory::dims src_dims = dims(in), dst_dims = dims(node);
  memory::dims w_dims = src_dims;
  w_dims[0] = node.linear.out_features;
  const memory::desc bias_md({node.linear.out_features}, dt::f32, tag::x);

  const size_t first = backward_.size();
  auto wdesc = node.linear.bias
                   ? dnnl::inner_product_backward_weights::desc(s.src.get_desc(), any_md(w_dims), bias_md,
                                                                act(dst_dims))
                   : dnnl::inner_product_backward_weights::desc(s.src.get_desc(), any_md(w_dims),
                                                                act(dst_dims));
  auto wpd = ONEDNN_CHECK(where(node, "creating the backward-weights inner product"),
                          dnnl::inner_product_backward_weights::primitive_desc(wdesc, engine_, fwd_pd));
  weighted_weight_grad(node, s, wpd, dnnl::inner_product_backward_weights(wpd), node.linear.bias);
  mark_weight_grad(first);
  gradients_ready_step(node);

  if (in.id == 0 && !input_grad_) return;
  auto ddesc = dnnl::inner_product_backward_data::desc(act(src_dims), act(w_dims), act(dst_dims));
  auto dpd = ONEDNN_CHECK(where(node, "creating the backward-data inner product"),
                          dnnl::inner_product_backward_data::primitive_desc(ddesc, engine_, fwd_pd));
  // oneDNN 2.6's brgemm backward-data kernel for a layer of one input feature (the trivial
  // model's fc2: 1 input, 4096 outputs) jumps to a null address on AVX-512 CPUs (seen on one
  // with AVX512_VP2INTERSECT): take the next implementation there.
  const int64_t in_features = src_dims.size() == 2 ? src_dims[1] : src_dims[1] * src_dims[2] * src_dims[3];
  while (in_features < 16 && std::string(dpd.impl_info_str()).find("brgemm") != std::string::npos &&
         dpd.next_impl()) {
  }
  weighted_data_grad(node, s, dpd, dnnl::inner_product_backward_data(dpd));
}

LossResult OnednnPlan::loss(const int32_t* labels) {
  const Node& logits = graph_.logits();
  if (logits.out.h != 1 || logits.out.w != 1)
    throw std::invalid_argument("loss needs logits of shape n x classes, not " + logits.out.str());
  if (!same(logits_plain_, mem_[logits.id])) run_reorder(mem_[logits.id], logits_plain_);
  const float* z = static_cast<const float*>(logits_plain_.get_data_handle());
  const int64_t n = logits.out.n, classes = logits.out.c;
  LossResult result;
  result.top1_correct = count_top_k(z, labels, n, classes, 1);  // also validates the labels
  result.top5_correct = count_top_k(z, labels, n, classes, 5);
  float* dz = static_cast<float*>(dlogits_plain_.get_data_handle());
  result.loss = cpu::softmax_cross_entropy(z, labels, dz, n, classes, label_smoothing_);
  if (const float scale = loss_gradient_scale_ * loss_scale_; scale != 1.0f)
    for (int64_t i = 0; i < n * classes; ++i) dz[i] *= scale;
  if (!same(dlogits_plain_, diff_[logits.id])) run_reorder(dlogits_plain_, diff_[logits.id]);
  return result;
}

void OnednnPlan::set_output_grad(const float* grad) {
  std::copy_n(grad, graph_.logits().out.elements(), static_cast<float*>(dlogits_plain_.get_data_handle()));
  if (!same(dlogits_plain_, diff_[graph_.output])) run_reorder(dlogits_plain_, diff_[graph_.output]);
}

}  // namespace cnnbench::onednn
