// kernels/onednn/batch_norm.cc — batch normalization: training forward (with the running
// statistics' update), inference forward, backward; a folded ReLU rides in fuse_norm_relu.
// On bf16 channels-last activations (CPUs with AMX) the training passes are cnnbench's own
// (nhwc_batch_norm.h), which stream memory about twice as fast as oneDNN 2.6's there.
#include "kernels/onednn/plan_internal.h"

#include "kernels/cpu_ops.h"
#include "kernels/onednn/nhwc_batch_norm.h"

namespace cnnbench::onednn {

dnnl::normalization_flags OnednnPlan::batch_norm_flags(const Node& node) const {
  auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  if (norm_applies_relu(node.id)) flags = flags | dnnl::normalization_flags::fuse_norm_relu;
  return flags;
}

void OnednnPlan::compile_batch_norm_forward(const Node& node) {
  const int src = node.inputs[0];
  const memory::desc src_md = mem_[src].get_desc();
  const auto flags = batch_norm_flags(node);
  const float eps = node.batch_norm.epsilon;
  auto pd = ONEDNN_CHECK(where(node, "creating the training batch normalization"),
                         dnnl::batch_normalization_forward::primitive_desc(
                             dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training,
                                                                     src_md, eps, flags),
                             engine_));
  auto infer_pd = ONEDNN_CHECK(
      where(node, "creating the inference batch normalization"),
      dnnl::batch_normalization_forward::primitive_desc(
          dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_inference, src_md, eps,
                                                  flags | dnnl::normalization_flags::use_global_stats),
          engine_));
  BatchNormState& s = bn_[node.id];
  s.training_pd = pd;
  const NhwcBatchNorm own = own_batch_norm_shape(node);
  s.own = own_kernels_ && act_dt_ == dt::bf16 && src_md == memory::desc(dims(node), dt::bf16, tag::nhwc) &&
          nhwc_batch_norm_supported(own);
  const memory::desc channel_md({node.out.c}, dt::f32, tag::x);
  s.mean = alloc(pd.mean_desc());
  s.variance = alloc(pd.variance_desc());
  if (!s.own) s.workspace = alloc(pd.workspace_desc());
  s.scale = param_memory(node, 0, channel_md, params_);
  s.shift = param_memory(node, 1, channel_md, params_);
  s.diff_scale = param_memory(node, 0, channel_md, grads_);
  s.diff_shift = param_memory(node, 1, channel_md, grads_);
  memory running_mean(channel_md, engine_, buffers_.data() + layout_.buffer(node.id, 0).offset);
  memory running_var(channel_md, engine_, buffers_.data() + layout_.buffer(node.id, 1).offset);
  mem_[node.id] = alloc(pd.dst_desc());

  if (s.own) {
    kernel_scratch_bytes_ = std::max(kernel_scratch_bytes_, nhwc_batch_norm_scratch_bytes(own, threads_));
    forward_training_.push_back(
        {{}, {}, [this, own, x = mem_[src], y = mem_[node.id], mean = s.mean, var = s.variance, scale = s.scale,
                  shift = s.shift] {
           nhwc_batch_norm_forward(own, static_cast<const uint16_t*>(x.get_data_handle()),
                                   static_cast<const float*>(scale.get_data_handle()),
                                   static_cast<const float*>(shift.get_data_handle()),
                                   static_cast<uint16_t*>(y.get_data_handle()), static_cast<float*>(mean.get_data_handle()),
                                   static_cast<float*>(var.get_data_handle()), kernel_scratch_.data(), threads_);
         },
         {mem_[src], mem_[node.id], s.mean, s.variance}});
    ++own_batch_norms_;
  } else {
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, mem_[src]}, {DNNL_ARG_DST, mem_[node.id]},
                                            {DNNL_ARG_MEAN, s.mean},   {DNNL_ARG_VARIANCE, s.variance},
                                            {DNNL_ARG_SCALE, s.scale}, {DNNL_ARG_SHIFT, s.shift}};
    if (norm_applies_relu(node.id)) args[DNNL_ARG_WORKSPACE] = s.workspace;
    forward_training_.push_back({dnnl::batch_normalization_forward(pd), args, {}});
  }
  compile_relu_in_place(node, forward_training_);
  const int64_t values = node.out.n * node.out.h * node.out.w;
  forward_training_.push_back(
      {{}, {}, [mean = s.mean, var = s.variance, running_mean, running_var, c = node.out.c,
                momentum = node.batch_norm.momentum, values] {
         cpu::update_running_stats(static_cast<float*>(mean.get_data_handle()),
                                   static_cast<float*>(var.get_data_handle()),
                                   static_cast<float*>(running_mean.get_data_handle()),
                                   static_cast<float*>(running_var.get_data_handle()), c, momentum, values);
       },
       {s.mean, s.variance}});
  forward_inference_.push_back({dnnl::batch_normalization_forward(infer_pd),
                                {{DNNL_ARG_SRC, mem_[src]},
                                 {DNNL_ARG_DST, mem_[node.id]},
                                 {DNNL_ARG_MEAN, running_mean},
                                 {DNNL_ARG_VARIANCE, running_var},
                                 {DNNL_ARG_SCALE, s.scale},
                                 {DNNL_ARG_SHIFT, s.shift}},
                                {}});
  compile_relu_in_place(node, forward_inference_);
}

NhwcBatchNorm OnednnPlan::own_batch_norm_shape(const Node& node) const {
  return {node.out.n * node.out.h * node.out.w, node.out.c, node.batch_norm.epsilon, norm_applies_relu(node.id)};
}

void OnednnPlan::compile_batch_norm_backward(const Node& node) {
  const int src = node.inputs[0];
  BatchNormState& s = bn_[node.id];
  if (s.own) {  // the ReLU's mask is recomputed from x, as the forward computed it
    const memory::desc md(dims(node), dt::bf16, tag::nhwc);
    const memory dy = backward_view(node.id, md);
    memory target = grad_target(src, md);
    backward_.push_back(
        {{}, {}, [this, own = own_batch_norm_shape(node), x = mem_[src], dy, dx = target, mean = s.mean,
                  var = s.variance, scale = s.scale, shift = s.shift, dscale = s.diff_scale, dshift = s.diff_shift] {
           nhwc_batch_norm_backward(
               own, static_cast<const uint16_t*>(x.get_data_handle()), static_cast<const uint16_t*>(dy.get_data_handle()),
               static_cast<const float*>(mean.get_data_handle()), static_cast<const float*>(var.get_data_handle()),
               static_cast<const float*>(scale.get_data_handle()), static_cast<const float*>(shift.get_data_handle()),
               static_cast<uint16_t*>(dx.get_data_handle()), static_cast<float*>(dscale.get_data_handle()),
               static_cast<float*>(dshift.get_data_handle()), kernel_scratch_.data(), threads_);
         },
         {mem_[src], dy, target, s.mean, s.variance}});
    gradients_ready_step(node);
    finish_grad(src, target);
    return;
  }
  auto pd = ONEDNN_CHECK(
      where(node, "creating the backward batch normalization"),
      dnnl::batch_normalization_backward::primitive_desc(
          dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, diff_[node.id].get_desc(),
                                                   mem_[src].get_desc(), node.batch_norm.epsilon,
                                                   batch_norm_flags(node)),
          engine_, s.training_pd));
  memory target = grad_target(src, pd.diff_src_desc());
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, mem_[src]},      {DNNL_ARG_MEAN, s.mean},           {DNNL_ARG_VARIANCE, s.variance},
      {DNNL_ARG_DIFF_DST, diff_[node.id]}, {DNNL_ARG_SCALE, s.scale},    {DNNL_ARG_DIFF_SRC, target},
      {DNNL_ARG_SHIFT, s.shift},  // not read, but oneDNN 2.6 refuses to run without it
      {DNNL_ARG_DIFF_SCALE, s.diff_scale}, {DNNL_ARG_DIFF_SHIFT, s.diff_shift}};
  if (norm_applies_relu(node.id)) args[DNNL_ARG_WORKSPACE] = s.workspace;
  backward_.push_back({dnnl::batch_normalization_backward(pd), args, {}});
  gradients_ready_step(node);
  finish_grad(src, target);
}

}  // namespace cnnbench::onednn
