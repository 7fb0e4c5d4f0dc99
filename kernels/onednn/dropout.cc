// kernels/onednn/dropout.cc — dropout in the oneDNN plan: a host loop over the plain N x C tensor
// a fully connected layer gives (or N x C x 1 x 1), with the mask of kernels/dropout_mask.h (recomputed in
// backward, never stored); inference copies its input.
#include "kernels/dropout_mask.h"
#include "kernels/dtype.h"
#include "kernels/onednn/plan_internal.h"

namespace cnnbench::onednn {

namespace {

// y = mask(x) / (1 - rate) over `count` elements of fp32 or bf16 (training); y = x (not training).
void apply_mask(const memory& from, const memory& to, int64_t count, bool wide, bool training, uint64_t seed, int node,
                uint64_t step, float rate) {
  const auto keep = [&](int64_t i) { return !training || dropout_keeps(seed, node, step, static_cast<uint64_t>(i), rate); };
  const float s = training ? 1.0f / (1.0f - rate) : 1.0f;
  if (wide) {
    const float* x = static_cast<const float*>(from.get_data_handle());
    float* y = static_cast<float*>(to.get_data_handle());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i) y[i] = keep(i) ? x[i] * s : 0.0f;
  } else {
    const uint16_t* x = static_cast<const uint16_t*>(from.get_data_handle());
    uint16_t* y = static_cast<uint16_t*>(to.get_data_handle());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i) y[i] = keep(i) ? f32_to_bf16(bf16_to_f32(x[i]) * s) : uint16_t{0};
  }
}

}  // namespace

// N x C plain: 2-D after a fully connected layer, else N x C x 1 x 1 (the same bytes)
memory::desc OnednnPlan::plain_desc(const Node& node) const {
  return flat_[node.id] ? memory::desc({node.out.n, node.out.c}, act_dt_, tag::nc)
                        : memory::desc(dims(node), act_dt_, tag::nchw);
}

void OnednnPlan::compile_dropout_forward(const Node& node) {
  const int src = node.inputs[0];
  memory x = forward_view(src, plain_desc(node));
  mem_[node.id] = alloc(x.get_desc());
  const int64_t count = node.out.n * node.out.c;
  for (const bool training : {true, false})
    (training ? forward_training_ : forward_inference_)
        .push_back({{}, {}, [this, x, y = mem_[node.id], count, training, id = node.id, rate = node.dropout.rate,
                             wide = act_dt_ == dt::f32] {
                      apply_mask(x, y, count, wide, training, dropout_seed_, id, dropout_step_, rate);
                    },
                    {x, mem_[node.id]}});
}

void OnednnPlan::compile_dropout_backward(const Node& node) {
  const int src = node.inputs[0];
  const memory::desc plain = plain_desc(node);
  memory dy = backward_view(node.id, plain);
  memory target = grad_target(src, plain);
  const int64_t count = node.out.n * node.out.c;
  backward_.push_back({{}, {}, [this, dy, target, count, id = node.id, rate = node.dropout.rate,
                                wide = act_dt_ == dt::f32] {
                         apply_mask(dy, target, count, wide, true, dropout_seed_, id, dropout_step_, rate);
                       },
                       {dy, target}});
  finish_grad(src, target);
}

}  // namespace cnnbench::onednn
