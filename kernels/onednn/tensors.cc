// kernels/onednn/tensors.cc — the oneDNN plan's tensors: shapes, views of a tensor in another
// layout, the activation arena, and the gradient buffers (aliases and sums).
#include "kernels/onednn/plan_internal.h"

#include <algorithm>

#include "kernels/cpu_ops.h"

namespace cnnbench::onednn {

// Inner product makes 2-D (n x features) tensors, and the elementwise ops after it keep them
// 2-D; every other tensor is 4-D NCHW.
memory::dims OnednnPlan::dims(const Node& node) const {
  if (flat_[node.id]) return {node.out.n, node.out.c};
  return {node.out.n, node.out.c, node.out.h, node.out.w};
}

memory OnednnPlan::param_memory(const Node& node, int index, const memory::desc& md, Arena& arena) {
  return memory(md, engine_, arena.data() + layout_.param(node.id, index).offset);
}

void OnednnPlan::reorder_step(Steps& steps, const memory& from, const memory& to, bool accumulate) {
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  auto pd = ONEDNN_CHECK("creating a reorder",
                         dnnl::reorder::primitive_desc(from, to, attr));
  steps.push_back({dnnl::reorder(pd), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, {}});
}

// mem_[t] in layout `want`, reordered by a forward step the first time it is asked for.
memory OnednnPlan::forward_view(int t, const memory::desc& want) {
  if (mem_[t].get_desc() == want) return mem_[t];
  for (const memory& m : forward_views_[t])
    if (m.get_desc() == want) return m;
  memory m = alloc(want);
  reorder_step(forward_training_, mem_[t], m);
  reorder_step(forward_inference_, mem_[t], m);
  forward_views_[t].push_back(m);
  return m;
}

// diff_[t] in layout `want`, reordered by a backward step the first time it is asked for.
memory OnednnPlan::backward_view(int t, const memory::desc& want) {
  if (diff_[t].get_desc() == want) return diff_[t];
  for (const memory& m : backward_views_[t])
    if (m.get_desc() == want) return m;
  memory m = alloc(want);
  reorder_step(backward_, diff_[t], m);
  backward_views_[t].push_back(m);
  return m;
}

// A tensor in the plan's activation arena (placed when compile() ends).
memory OnednnPlan::alloc(const memory::desc& md) {
  memory m(md, engine_, DNNL_MEMORY_NONE);
  placements_.push_back(m);
  return m;
}

// Where a backward primitive should write its contribution to the gradient of tensor t.
memory OnednnPlan::grad_target(int t, const memory::desc& produced) {
  if (!grad_written_[t] && diff_[t].get_desc() == produced) return diff_[t];
  return alloc(produced);
}

// Lands `target` (from grad_target or another gradient) in diff_[t], summing if needed.
void OnednnPlan::finish_grad(int t, const memory& target) {
  if (same(target, diff_[t])) {
  } else if (grad_written_[t] && sum_can_mask_relu(t, target)) {
    // the last gradient summed into a ReLU folded into its producer: sum and mask in one pass
    relu_masked_in_sum_[t] = true;
    backward_.push_back({{}, {}, [dx = diff_[t], g = target, y = mem_[t], wide = act_dt_ == dt::f32] {
                           const int64_t count = static_cast<int64_t>(dx.get_desc().get_size() / (wide ? 4 : 2));
                           if (wide)
                             cpu::relu_backward_accumulate(static_cast<float*>(dx.get_data_handle()),
                                                           static_cast<const float*>(g.get_data_handle()),
                                                           static_cast<const float*>(y.get_data_handle()), count);
                           else
                             cpu::relu_backward_accumulate_bf16(static_cast<uint16_t*>(dx.get_data_handle()),
                                                                static_cast<const uint16_t*>(g.get_data_handle()),
                                                                static_cast<const uint16_t*>(y.get_data_handle()),
                                                                count);
                         },
                         {diff_[t], target, mem_[t]}});
  } else {
    reorder_step(backward_, target, diff_[t], grad_written_[t]);
  }
  grad_written_[t] = true;
}

// True when the node being compiled is t's last consumer in backward order, t is a ReLU
// masked in place (folded into a convolution or add), and the tensors share one layout.
bool OnednnPlan::sum_can_mask_relu(int t, const memory& target) const {
  if (!masked_in_place(t) || graph_.nodes[t].kind != OpKind::relu) return false;  // cpu:: has ReLU's mask alone
  if (compiling_ != *std::min_element(consumers_[t].begin(), consumers_[t].end())) return false;
  const memory::desc md = diff_[t].get_desc();
  return target.get_desc() == md && mem_[t].get_desc() == md;
}

// A weight tensor in the layout `want`: the plain arena memory itself, or a copy that a
// step refreshes from the arena each time the list runs.
memory OnednnPlan::weights_in(const memory& plain, const memory::desc& want, std::vector<Steps*> lists) {
  if (plain.get_desc() == want) return plain;
  memory m = alloc(want);
  for (Steps* steps : lists) reorder_step(*steps, plain, m);
  return m;
}

void OnednnPlan::both_forward(const dnnl::primitive& p, std::unordered_map<int, memory> args) {
  forward_training_.push_back({p, args, {}});
  forward_inference_.push_back({p, std::move(args), {}});
}

// The backward steps from `first` on compute weight gradients.
void OnednnPlan::mark_weight_grad(size_t first) {
  for (size_t i = first; i < backward_.size(); ++i) backward_[i].weight_grad = true;
}

void OnednnPlan::gradients_ready_step(const Node& node) {
  if (layout_.params_of_node[node.id].empty()) return;
  backward_.push_back({{}, {}, [this, id = node.id] {
                         for (int index : layout_.params_of_node[id]) gradient_ready(index);
                       }});
}

// Gradient buffers, decided from the output down so that aliases can point upward. A ReLU
// folded into its producer shares the producer's gradient. A tensor read by an add can take
// the add's gradient as its own (no copy) when nothing overwrites that buffer before every
// other reader is done with it: backward runs in descending node order, the add's other input
// reads the buffer at its own step (or at the add's, when it copies), and the buffer is
// modified at the steps of the tensor's other consumers (accumulating their gradients) and at
// the tensor's own step if it is a folded ReLU masked in place. A residual block's input is
// the case this is for: its add is read by the block's last batch norm long before the
// block's first convolution adds its gradient.
bool OnednnPlan::may_alias_add_gradient(int id, const Node& add) const {
  if (std::count(add.inputs.begin(), add.inputs.end(), id) != 1) return false;
  if (!(diff_[add.id].get_desc() == mem_[id].get_desc())) return false;
  int last_modifier = -1;
  for (int c : consumers_[id])
    if (c != add.id) last_modifier = std::max(last_modifier, c);
  if (masked_in_place(id)) last_modifier = std::max(last_modifier, id);
  if (last_modifier < 0) return true;  // nothing modifies the buffer
  const int other = add.inputs[0] == id ? add.inputs[1] : add.inputs[0];
  if (other < id) return false;  // its gradient is not decided yet: assume the worst
  const int reader = same(diff_[other], diff_[add.id]) ? other : add.id;
  return reader > last_modifier;
}

void OnednnPlan::allocate_gradients() {
  for (int id = graph_.output; id >= 0; --id) {
    if (id == 0 && !input_grad_) {
      diff_[0] = alloc(mem_[0].get_desc());  // written by batch norm etc., never read
      continue;
    }
    if (fused_into_[id] >= 0) {
      diff_[id] = diff_[fused_into_[id]];
      continue;
    }
    diff_[id] = memory();
    if (id != graph_.output && !consumers_[id].empty()) {
      // the add that runs first in backward among this tensor's consumers, if it is an add
      const int first = *std::max_element(consumers_[id].begin(), consumers_[id].end());
      const Node& consumer = graph_.nodes[first];
      if (consumer.kind == OpKind::add && may_alias_add_gradient(id, consumer)) diff_[id] = diff_[consumer.id];
    }
    if (!diff_[id]) diff_[id] = alloc(mem_[id].get_desc());
  }
}

// ---- weighted layers (convolution and inner product) ----
// The forward step from its primitive descriptor: the plain weight (and bias) arenas, the input
// in the layout pd reads, the weights reordered into it every step, the output.
void OnednnPlan::weighted_forward(const Node& node, const dnnl::primitive_desc& pd, const dnnl::primitive& primitive,
                                  const memory::desc& weights_plain, const memory::desc* bias_md) {
  WeightedState& s = conv_[node.id];
  s.forward_pd = pd;
  s.src = forward_view(node.inputs[0], pd.src_desc());
  s.weights_plain = param_memory(node, 0, weights_plain, params_);
  s.diff_weights_plain = param_memory(node, 0, weights_plain, grads_);
  if (bias_md) {
    s.bias_plain = param_memory(node, 1, *bias_md, params_);
    s.diff_bias_plain = param_memory(node, 1, *bias_md, grads_);
  }
  s.weights_forward = weights_in(s.weights_plain, pd.weights_desc(), {&forward_training_, &forward_inference_});
  mem_[node.id] = alloc(pd.dst_desc());
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, s.src}, {DNNL_ARG_WEIGHTS, s.weights_forward}, {DNNL_ARG_DST, mem_[node.id]}};
  if (bias_md) args[DNNL_ARG_BIAS] = s.bias_plain;
  both_forward(primitive, args);
}

// The weight (and bias) gradient step, written straight into the plain fp32 arena when the
// primitive's layout is plain, else reordered into it.
void OnednnPlan::weighted_weight_grad(const Node& node, const WeightedState& s, const dnnl::primitive_desc& wpd,
                                      const dnnl::primitive& primitive, bool bias) {
  memory diff_dst_w = backward_view(node.id, wpd.diff_dst_desc());
  memory src_w = wpd.src_desc() == s.src.get_desc() ? s.src : alloc(wpd.src_desc());
  if (!same(src_w, s.src)) reorder_step(backward_, s.src, src_w);
  memory diff_w = wpd.diff_weights_desc() == s.diff_weights_plain.get_desc()
                      ? s.diff_weights_plain
                      : alloc(wpd.diff_weights_desc());
  std::unordered_map<int, memory> wargs = {
      {DNNL_ARG_SRC, src_w}, {DNNL_ARG_DIFF_DST, diff_dst_w}, {DNNL_ARG_DIFF_WEIGHTS, diff_w}};
  if (bias) wargs[DNNL_ARG_DIFF_BIAS] = s.diff_bias_plain;
  backward_.push_back({primitive, wargs, {}});
  if (!same(diff_w, s.diff_weights_plain)) reorder_step(backward_, diff_w, s.diff_weights_plain);
}

// The data gradient step: d(input) from d(output) and the weights in the layout dpd wants.
void OnednnPlan::weighted_data_grad(const Node& node, const WeightedState& s, const dnnl::primitive_desc& dpd,
                                    const dnnl::primitive& primitive) {
  const int in = node.inputs[0];
  memory weights = dpd.weights_desc() == s.weights_forward.get_desc()
                       ? s.weights_forward
                       : weights_in(s.weights_forward, dpd.weights_desc(), {&backward_});
  memory diff_dst = backward_view(node.id, dpd.diff_dst_desc());
  memory target = grad_target(in, dpd.diff_src_desc());
  backward_.push_back(
      {primitive, {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DIFF_SRC, target}}, {}});
  finish_grad(in, target);
}

}  // namespace cnnbench::onednn
