// The oneDNN CPU backend. compile() walks the graph once and builds three lists of steps
// (training forward, inference forward, backward), each a oneDNN primitive with its arguments
// or a small host function; a step replays a list and allocates nothing.
//
// Layouts: convolution and inner product choose their own (format_tag::any); the ops after
// them follow the layout they are given, so activations stay in oneDNN's blocked layout from
// the first convolution to the logits. Reorders run only where layouts meet: the plain image
// input, the plain fp32 parameter/gradient arenas (weights are reordered into the layout each
// primitive wants every step), and the plain logits.
//
// Fusions (PlanOptions::fuse): a ReLU whose input feeds nothing else is folded into that
// convolution (post-op), batch norm (fuse_norm_relu) or add (post-op); its backward then runs
// in place on the gradient, or inside batch-norm backward.
//
// Gradients of a tensor with several consumers are summed: the first consumer (in backward
// order) writes the gradient, later ones add theirs with a reorder carrying a sum post-op; the
// last one, where the tensor is a ReLU masked in place, sums and masks in one host pass.
#include "kernels/onednn/onednn_plan.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <unordered_map>

#include <omp.h>
#include <vector>

#include "kernels/cpu_ops.h"
#include "kernels/onednn/bf16_weight_grad.h"
#include "kernels/onednn/blocked_layout.h"
#include "kernels/onednn/onednn_check.h"
#include "kernels/ref/elementwise.h"
#include "kernels/top_k.h"

namespace cnnbench {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

struct Step {
  Step(dnnl::primitive p, std::unordered_map<int, memory> a, std::function<void()> h = {})
      : primitive(std::move(p)), args(std::move(a)), host(std::move(h)) {}
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
  std::function<void()> host;  // set instead of primitive for host work
  std::string what;            // "node 'conv1' (conv): reorder", for error messages
  int node = 0;                // the graph node this step belongs to (layer timing)
  bool weight_grad = false;    // computes weight/bias gradients (layer timing's split of backward)
};
using Steps = std::vector<Step>;

memory::desc plain_md(const memory::dims& dims) {
  return memory::desc(dims, dt::f32, dims.size() == 2 ? tag::nc : tag::nchw);
}

memory::desc any_md(const memory::dims& dims, dt type = dt::f32) { return memory::desc(dims, type, tag::any); }

bool same(const memory& a, const memory& b) { return a.get() == b.get(); }

std::string where(const Node& node, const char* what) {
  return "node '" + node.name + "' (" + op_name(node.kind) + "): " + what;
}

class OnednnPlan final : public Plan {
 public:
  OnednnPlan(const Graph& graph, const PlanOptions& options)
      : Plan(graph),
        input_grad_(options.input_grad),
        input_nhwc_(options.input_nhwc),
        fuse_(options.fuse),
        own_kernels_(options.own_kernels),
        threads_(omp_get_max_threads()) {
    if (options.compute == DType::f16)
      throw std::invalid_argument(
          "backend 'onednn': fp16 compute needs AVX-512 FP16, which this build does not target; "
          "bf16 is the CPU's fast half type (--precision=bf16, or --use_fp16, picks it)");
    act_dt_ = options.compute == DType::bf16 ? dt::bf16 : dt::f32;
    engine_ = ONEDNN_CHECK("creating the CPU engine", dnnl::engine(dnnl::engine::kind::cpu, 0));
    stream_ = dnnl::stream(engine_);
    compile();
  }

  void set_input(const float* images) override {
    std::copy_n(images, graph_.input().out.elements(), static_cast<float*>(input_user_.get_data_handle()));
  }

  void forward(Mode mode) override {
    run(mode == Mode::training ? forward_training_ : forward_inference_, &LayerTime::forward_sec);
  }

  LossResult loss(const int32_t* labels) override {
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
    result.loss = cpu::softmax_cross_entropy(z, labels, dz, n, classes);
    if (const float scale = loss_gradient_scale_ * loss_scale_; scale != 1.0f)
      for (int64_t i = 0; i < n * classes; ++i) dz[i] *= scale;
    if (!same(dlogits_plain_, diff_[logits.id])) run_reorder(dlogits_plain_, diff_[logits.id]);
    return result;
  }

  void set_output_grad(const float* grad) override {
    std::copy_n(grad, graph_.logits().out.elements(), static_cast<float*>(dlogits_plain_.get_data_handle()));
    if (!same(dlogits_plain_, diff_[graph_.output])) run_reorder(dlogits_plain_, diff_[graph_.output]);
  }

  void backward() override { run(backward_, &LayerTime::backward_sec); }

  void sgd_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count) override {
    cpu::sgd_update(params_.data() + offset, grads_.data() + offset, momentum_.data() + offset,
                    static_cast<int64_t>(count), learning_rate, config.momentum, config.weight_decay, config.nesterov,
                    config.gradient_scale);
  }

  void read_output(int node, float* dst) override {
    if (node < 0 || node >= static_cast<int>(graph_.nodes.size()))
      throw std::out_of_range("read_output: no node " + std::to_string(node));
    if (fused_into_[node] >= 0)
      throw std::logic_error("read_output: node '" + graph_.nodes[node].name +
                             "' was fused with its ReLU; build the plan with fuse = false");
    memory plain(plain_md(dims(graph_.nodes[node])), engine_, dst);
    run_reorder(mem_[node], plain);
  }

  std::string kernel_notes() const override {
    if (own_weight_grads_ == 0) return {};
    return "cnnbench's bf16 1x1 weight-gradient kernel on " + std::to_string(own_weight_grads_) + " convolution" +
           (own_weight_grads_ == 1 ? "" : "s");
  }

  void read_input_grad(float* dst) override {
    if (!input_grad_) throw std::logic_error("plan was built without input_grad");
    memory plain(input_user_.get_desc(), engine_, dst);
    run_reorder(diff_[0], plain);
  }

 private:
  // ---- running ----
  void run(const Steps& steps, double LayerTime::*phase) {
    for (const Step& step : steps) {
      const auto start = layer_timing_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      if (step.host) {
        step.host();
      } else {
        try {
          step.primitive.execute(stream_, step.args);
        } catch (const dnnl::error& e) {
          throw_onednn_error("running " + step.what, e, __FILE__, __LINE__);
        }
      }
      // CPU primitives run synchronously on the OpenMP runtime, so this is the step's time.
      if (layer_timing_) {
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        layer_times_[step.node].*phase += sec;
        if (step.weight_grad) layer_times_[step.node].weight_grad_sec += sec;
      }
    }
    stream_.wait();
  }

  void run_reorder(const memory& from, const memory& to) {
    dnnl::reorder(from, to).execute(stream_, const_cast<memory&>(from), const_cast<memory&>(to));
    stream_.wait();
  }

  // ---- compile helpers ----
  // A tensor computed in the plan's compute type, layout left to the primitive.
  memory::desc act(const memory::dims& d) const { return any_md(d, act_dt_); }

  // Inner product makes 2-D (n x features) tensors, and the elementwise ops after it keep them
  // 2-D; every other tensor is 4-D NCHW.
  memory::dims dims(const Node& node) const {
    if (flat_[node.id]) return {node.out.n, node.out.c};
    return {node.out.n, node.out.c, node.out.h, node.out.w};
  }

  memory param_memory(const Node& node, int index, const memory::desc& md, Arena& arena) {
    return memory(md, engine_, arena.data() + layout_.param(node.id, index).offset);
  }

  static void reorder_step(Steps& steps, const memory& from, const memory& to, bool accumulate = false) {
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
  memory forward_view(int t, const memory::desc& want) {
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
  memory backward_view(int t, const memory::desc& want) {
    if (diff_[t].get_desc() == want) return diff_[t];
    for (const memory& m : backward_views_[t])
      if (m.get_desc() == want) return m;
    memory m = alloc(want);
    reorder_step(backward_, diff_[t], m);
    backward_views_[t].push_back(m);
    return m;
  }

  // A tensor in the plan's activation arena (placed when compile() ends).
  memory alloc(const memory::desc& md) {
    memory m(md, engine_, DNNL_MEMORY_NONE);
    placements_.push_back({m, activation_bytes_});
    activation_bytes_ += (md.get_size() + 63) / 64 * 64;
    return m;
  }

  void place_activations() {
    activations_ = Arena((activation_bytes_ + sizeof(float) - 1) / sizeof(float));
    char* base = reinterpret_cast<char*>(activations_.data());
    for (auto& [m, offset] : placements_) m.set_data_handle(base + offset);
    placements_.clear();
  }

  // Where a backward primitive should write its contribution to the gradient of tensor t.
  memory grad_target(int t, const memory::desc& produced) {
    if (!grad_written_[t] && diff_[t].get_desc() == produced) return diff_[t];
    return alloc(produced);
  }

  // Lands `target` (from grad_target or another gradient) in diff_[t], summing if needed.
  void finish_grad(int t, const memory& target) {
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
                           }});
    } else {
      reorder_step(backward_, target, diff_[t], grad_written_[t]);
    }
    grad_written_[t] = true;
  }

  // True when the node being compiled is t's last consumer in backward order, t is a ReLU
  // masked in place (folded into a convolution or add), and the tensors share one layout.
  bool sum_can_mask_relu(int t, const memory& target) const {
    if (absorbs_[t] < 0 || graph_.nodes[absorbs_[t]].kind == OpKind::batch_norm) return false;
    if (compiling_ != *std::min_element(consumers_[t].begin(), consumers_[t].end())) return false;
    const memory::desc md = diff_[t].get_desc();
    return target.get_desc() == md && mem_[t].get_desc() == md;
  }

  // A weight tensor in the layout `want`: the plain arena memory itself, or a copy that a
  // step refreshes from the arena each time the list runs.
  memory weights_in(const memory& plain, const memory::desc& want, std::vector<Steps*> lists) {
    if (plain.get_desc() == want) return plain;
    memory m = alloc(want);
    for (Steps* steps : lists) reorder_step(*steps, plain, m);
    return m;
  }

  void both_forward(const dnnl::primitive& p, std::unordered_map<int, memory> args) {
    forward_training_.push_back({p, args, {}});
    forward_inference_.push_back({p, std::move(args), {}});
  }

  // The backward steps from `first` on compute weight gradients.
  void mark_weight_grad(size_t first) {
    for (size_t i = first; i < backward_.size(); ++i) backward_[i].weight_grad = true;
  }

  void gradients_ready_step(const Node& node) {
    if (layout_.params_of_node[node.id].empty()) return;
    backward_.push_back({{}, {}, [this, id = node.id] {
                           for (int index : layout_.params_of_node[id]) gradient_ready(index);
                         }});
  }

  // ---- compile ----
  void compile() {
    const size_t count = graph_.nodes.size();
    consumers_ = graph_.consumers();
    mem_.resize(count);
    diff_.resize(count);
    fused_into_.assign(count, -1);
    absorbs_.assign(count, -1);
    grad_written_.assign(count, false);
    relu_masked_in_sum_.assign(count, false);
    forward_views_.resize(count);
    backward_views_.resize(count);
    conv_.resize(count);
    flat_.assign(count, false);
    for (const Node& node : graph_.nodes)
      flat_[node.id] = node.kind == OpKind::linear ||
                       ((node.kind == OpKind::relu || node.kind == OpKind::batch_norm || node.kind == OpKind::add) &&
                        flat_[node.inputs[0]]);
    plan_fusions();

    // the images as the caller gives them (fp32), and in the compute type for the ops
    const tag input_tag = input_nhwc_ ? tag::nhwc : tag::nchw;
    input_user_ = alloc(memory::desc(dims(graph_.input()), dt::f32, input_tag));
    if (act_dt_ == dt::f32) {
      mem_[0] = input_user_;
    } else {
      mem_[0] = alloc(memory::desc(dims(graph_.input()), act_dt_, input_tag));
      reorder_step(forward_training_, input_user_, mem_[0]);
      reorder_step(forward_inference_, input_user_, mem_[0]);
    }
    for (const Node& node : graph_.nodes) {
      if (node.kind == OpKind::input) continue;
      if (absorbs_[node.id] >= 0) {  // a ReLU folded into its producer
        mem_[node.id] = mem_[absorbs_[node.id]];
        continue;
      }
      const StepMark mark = mark_steps();
      switch (node.kind) {
        case OpKind::input: break;
        case OpKind::conv: compile_conv_forward(node); break;
        case OpKind::linear: compile_linear_forward(node); break;
        case OpKind::batch_norm: compile_batch_norm_forward(node); break;
        case OpKind::relu: compile_relu_forward(node); break;
        case OpKind::max_pool:
        case OpKind::avg_pool:
        case OpKind::global_avg_pool: compile_pool_forward(node); break;
        case OpKind::add: compile_add_forward(node); break;
        case OpKind::shortcut: compile_shortcut_forward(node); break;
      }
      label_steps(mark, node);
    }

    allocate_gradients();
    for (int id = graph_.output; id >= 1; --id) {
      const Node& node = graph_.nodes[id];
      const StepMark mark = mark_steps();
      compiling_ = id;
      if (absorbs_[id] >= 0) compile_fused_relu_backward(node);
      else switch (node.kind) {
        case OpKind::input: break;
        case OpKind::conv: compile_conv_backward(node); break;
        case OpKind::linear: compile_linear_backward(node); break;
        case OpKind::batch_norm: compile_batch_norm_backward(node); break;
        case OpKind::relu: compile_relu_backward(node); break;
        case OpKind::max_pool:
        case OpKind::avg_pool:
        case OpKind::global_avg_pool: compile_pool_backward(node); break;
        case OpKind::add: compile_add_backward(node); break;
        case OpKind::shortcut: compile_shortcut_backward(node); break;
      }
      label_steps(mark, node);
    }

    const Node& logits = graph_.logits();
    const memory::desc logits_md = plain_md(dims(logits));
    logits_plain_ = mem_[logits.id].get_desc() == logits_md ? mem_[logits.id] : alloc(logits_md);
    dlogits_plain_ = diff_[logits.id].get_desc() == logits_md ? diff_[logits.id] : alloc(logits_md);
    place_activations();
    weight_grad_scratch_ = Arena((weight_grad_scratch_bytes_ + sizeof(float) - 1) / sizeof(float));
  }

  struct StepMark {
    size_t training, inference, backward;
  };
  StepMark mark_steps() const { return {forward_training_.size(), forward_inference_.size(), backward_.size()}; }
  void label_steps(const StepMark& mark, const Node& node) {
    auto label = [&](Steps& steps, size_t from, const char* phase) {
      for (size_t i = from; i < steps.size(); ++i) steps[i].node = node.id;
      for (size_t i = from; i < steps.size(); ++i)
        steps[i].what = "node '" + node.name + "' (" + op_name(node.kind) + "): " + phase + " " +
                        (steps[i].host ? "host step"
                                       : dnnl_prim_kind2str(static_cast<dnnl_primitive_kind_t>(steps[i].primitive.get_kind())));
    };
    label(forward_training_, mark.training, "forward");
    label(forward_inference_, mark.inference, "forward");
    label(backward_, mark.backward, "backward");
  }

  void plan_fusions() {
    if (!fuse_) return;
    for (const Node& node : graph_.nodes) {
      if (node.kind != OpKind::relu) continue;
      const int producer = node.inputs[0];
      const OpKind kind = graph_.nodes[producer].kind;
      if (producer == 0 || consumers_[producer].size() != 1) continue;
      if (kind == OpKind::conv || kind == OpKind::batch_norm || kind == OpKind::add) {
        absorbs_[node.id] = producer;
        fused_into_[producer] = node.id;
      }
    }
  }

  dnnl::primitive_attr relu_attr(const Node& node) const {
    dnnl::primitive_attr attr;
    if (fused_into_[node.id] >= 0) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      attr.set_post_ops(ops);
    }
    return attr;
  }

  // Per-node primitives shared by forward and backward compilation.
  struct WeightedState {
    dnnl::primitive_desc forward_pd;
    memory src;                  // the input in the layout the forward primitive reads
    memory weights_forward;      // weights in the forward layout
    memory weights_plain, bias_plain, diff_weights_plain, diff_bias_plain;
  };

  void compile_conv_forward(const Node& node) {
    const Node& in = graph_.nodes[node.inputs[0]];
    const memory::dims src_dims = dims(in), dst_dims = dims(node);
    const memory::dims w_dims = {node.conv.out_channels, in.out.c, node.conv.kernel, node.conv.kernel};
    const memory::dims strides = {node.conv.stride, node.conv.stride};
    const memory::dims pad_l = {node.conv.pad, node.conv.pad};
    const memory::dims pad_r = {(node.out.h - 1) * node.conv.stride + node.conv.kernel - in.out.h - node.conv.pad,
                                (node.out.w - 1) * node.conv.stride + node.conv.kernel - in.out.w - node.conv.pad};
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
    WeightedState& s = conv_[node.id];
    s.forward_pd = pd;
    s.src = forward_view(in.id, pd.src_desc());
    s.weights_plain = param_memory(node, 0, memory::desc(w_dims, dt::f32, tag::oihw), params_);
    s.diff_weights_plain = param_memory(node, 0, memory::desc(w_dims, dt::f32, tag::oihw), grads_);
    if (node.conv.bias) {
      s.bias_plain = param_memory(node, 1, bias_md, params_);
      s.diff_bias_plain = param_memory(node, 1, bias_md, grads_);
    }
    s.weights_forward = weights_in(s.weights_plain, pd.weights_desc(), {&forward_training_, &forward_inference_});
    mem_[node.id] = alloc(pd.dst_desc());
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, s.src}, {DNNL_ARG_WEIGHTS, s.weights_forward}, {DNNL_ARG_DST, mem_[node.id]}};
    if (node.conv.bias) args[DNNL_ARG_BIAS] = s.bias_plain;
    both_forward(dnnl::convolution_forward(pd), args);
  }

  void compile_conv_backward(const Node& node) {
    const Node& in = graph_.nodes[node.inputs[0]];
    WeightedState& s = conv_[node.id];
    auto fwd_pd = dnnl::convolution_forward::primitive_desc(s.forward_pd.get());

    // weights (and bias) gradient
    const size_t first = backward_.size();
    if (!compile_own_weight_grad(node, in, s)) compile_onednn_weight_grad(node, in, s, fwd_pd);
    mark_weight_grad(first);
    gradients_ready_step(node);

    // data gradient
    if (in.id == 0 && !input_grad_) return;
    const memory::dims src_dims = dims(in), dst_dims = dims(node);
    const memory::dims w_dims = {node.conv.out_channels, in.out.c, node.conv.kernel, node.conv.kernel};
    const memory::dims strides = {node.conv.stride, node.conv.stride};
    const memory::dims pad_l = {node.conv.pad, node.conv.pad};
    const memory::dims pad_r = {(node.out.h - 1) * node.conv.stride + node.conv.kernel - in.out.h - node.conv.pad,
                                (node.out.w - 1) * node.conv.stride + node.conv.kernel - in.out.w - node.conv.pad};
    auto ddesc = dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, act(src_dims),
                                                       act(w_dims), act(dst_dims), strides, pad_l, pad_r);
    auto dpd = ONEDNN_CHECK(where(node, "creating the backward-data convolution"),
                            dnnl::convolution_backward_data::primitive_desc(ddesc, engine_, fwd_pd));
    memory weights = dpd.weights_desc() == s.weights_forward.get_desc()
                         ? s.weights_forward
                         : weights_in(s.weights_forward, dpd.weights_desc(), {&backward_});
    memory diff_dst = backward_view(node.id, dpd.diff_dst_desc());
    memory target = grad_target(in.id, dpd.diff_src_desc());
    backward_.push_back({dnnl::convolution_backward_data(dpd),
                         {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DIFF_SRC, target}},
                         {}});
    finish_grad(in.id, target);
  }

  // A bf16 1x1 convolution without bias, its input and output gradient in 16-channel blocks:
  // the weight gradient comes from bf16_weight_grad.h, straight into the plain fp32 arena.
  bool compile_own_weight_grad(const Node& node, const Node& in, const WeightedState& s) {
    if (!own_kernels_ || act_dt_ != dt::bf16 || node.conv.kernel != 1 || node.conv.pad != 0 || node.conv.bias)
      return false;
    const memory::desc src_md(dims(in), dt::bf16, tag::nChw16c), dst_md(dims(node), dt::bf16, tag::nChw16c);
    if (!(s.src.get_desc() == src_md)) return false;
    const WeightGrad1x1 shape{node.out.n, in.out.c, node.out.c, node.out.h, node.out.w, node.conv.stride,
                              *BlockedLayout::of(src_md), *BlockedLayout::of(dst_md)};
    if (!weight_grad_1x1_supported(shape)) return false;
    const memory diff_dst = backward_view(node.id, dst_md);
    weight_grad_scratch_bytes_ = std::max(weight_grad_scratch_bytes_, weight_grad_1x1_scratch_bytes(shape, threads_));
    backward_.push_back({{}, {}, [this, shape, src = s.src, diff_dst, dw = s.diff_weights_plain] {
                           weight_grad_1x1(shape, static_cast<const uint16_t*>(src.get_data_handle()),
                                           static_cast<const uint16_t*>(diff_dst.get_data_handle()),
                                           static_cast<float*>(dw.get_data_handle()), weight_grad_scratch_.data(),
                                           threads_);
                         }});
    ++own_weight_grads_;
    return true;
  }

  void compile_onednn_weight_grad(const Node& node, const Node& in, const WeightedState& s,
                                  const dnnl::convolution_forward::primitive_desc& fwd_pd) {
    const memory::dims dst_dims = dims(node);
    const memory::dims w_dims = {node.conv.out_channels, in.out.c, node.conv.kernel, node.conv.kernel};
    const memory::dims strides = {node.conv.stride, node.conv.stride};
    const memory::dims pad_l = {node.conv.pad, node.conv.pad};
    const memory::dims pad_r = {(node.out.h - 1) * node.conv.stride + node.conv.kernel - in.out.h - node.conv.pad,
                                (node.out.w - 1) * node.conv.stride + node.conv.kernel - in.out.w - node.conv.pad};
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
    memory diff_dst_w = backward_view(node.id, wpd.diff_dst_desc());
    memory src_w = wpd.src_desc() == s.src.get_desc() ? s.src : alloc(wpd.src_desc());
    if (!same(src_w, s.src)) reorder_step(backward_, s.src, src_w);
    memory diff_w = wpd.diff_weights_desc() == s.diff_weights_plain.get_desc()
                        ? s.diff_weights_plain
                        : alloc(wpd.diff_weights_desc());
    std::unordered_map<int, memory> wargs = {
        {DNNL_ARG_SRC, src_w}, {DNNL_ARG_DIFF_DST, diff_dst_w}, {DNNL_ARG_DIFF_WEIGHTS, diff_w}};
    if (node.conv.bias) wargs[DNNL_ARG_DIFF_BIAS] = s.diff_bias_plain;
    backward_.push_back({dnnl::convolution_backward_weights(wpd), wargs, {}});
    if (!same(diff_w, s.diff_weights_plain)) reorder_step(backward_, diff_w, s.diff_weights_plain);
  }

  void compile_linear_forward(const Node& node) {
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
    WeightedState& s = conv_[node.id];
    s.forward_pd = pd;
    s.src = forward_view(in.id, pd.src_desc());
    s.weights_plain = param_memory(node, 0, w_plain, params_);
    s.diff_weights_plain = param_memory(node, 0, w_plain, grads_);
    if (node.linear.bias) {
      s.bias_plain = param_memory(node, 1, bias_md, params_);
      s.diff_bias_plain = param_memory(node, 1, bias_md, grads_);
    }
    s.weights_forward = weights_in(s.weights_plain, pd.weights_desc(), {&forward_training_, &forward_inference_});
    mem_[node.id] = alloc(pd.dst_desc());
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, s.src}, {DNNL_ARG_WEIGHTS, s.weights_forward}, {DNNL_ARG_DST, mem_[node.id]}};
    if (node.linear.bias) args[DNNL_ARG_BIAS] = s.bias_plain;
    both_forward(dnnl::inner_product_forward(pd), args);
  }

  void compile_linear_backward(const Node& node) {
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
    memory diff_dst_w = backward_view(node.id, wpd.diff_dst_desc());
    memory src_w = wpd.src_desc() == s.src.get_desc() ? s.src : alloc(wpd.src_desc());
    if (!same(src_w, s.src)) reorder_step(backward_, s.src, src_w);
    memory diff_w = wpd.diff_weights_desc() == s.diff_weights_plain.get_desc()
                        ? s.diff_weights_plain
                        : alloc(wpd.diff_weights_desc());
    std::unordered_map<int, memory> wargs = {
        {DNNL_ARG_SRC, src_w}, {DNNL_ARG_DIFF_DST, diff_dst_w}, {DNNL_ARG_DIFF_WEIGHTS, diff_w}};
    if (node.linear.bias) wargs[DNNL_ARG_DIFF_BIAS] = s.diff_bias_plain;
    backward_.push_back({dnnl::inner_product_backward_weights(wpd), wargs, {}});
    if (!same(diff_w, s.diff_weights_plain)) reorder_step(backward_, diff_w, s.diff_weights_plain);
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
    memory weights = dpd.weights_desc() == s.weights_forward.get_desc()
                         ? s.weights_forward
                         : weights_in(s.weights_forward, dpd.weights_desc(), {&backward_});
    memory diff_dst = backward_view(node.id, dpd.diff_dst_desc());
    memory target = grad_target(in.id, dpd.diff_src_desc());
    backward_.push_back({dnnl::inner_product_backward_data(dpd),
                         {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DIFF_SRC, target}},
                         {}});
    finish_grad(in.id, target);
  }

  struct BatchNormState {
    dnnl::batch_normalization_forward::primitive_desc training_pd;
    memory mean, variance, workspace, scale, shift, diff_scale, diff_shift;
  };

  dnnl::normalization_flags batch_norm_flags(const Node& node) const {
    auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    if (fused_into_[node.id] >= 0) flags = flags | dnnl::normalization_flags::fuse_norm_relu;
    return flags;
  }

  void compile_batch_norm_forward(const Node& node) {
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
    const memory::desc channel_md({node.out.c}, dt::f32, tag::x);
    s.mean = alloc(pd.mean_desc());
    s.variance = alloc(pd.variance_desc());
    s.workspace = alloc(pd.workspace_desc());
    s.scale = param_memory(node, 0, channel_md, params_);
    s.shift = param_memory(node, 1, channel_md, params_);
    s.diff_scale = param_memory(node, 0, channel_md, grads_);
    s.diff_shift = param_memory(node, 1, channel_md, grads_);
    memory running_mean(channel_md, engine_, buffers_.data() + layout_.buffer(node.id, 0).offset);
    memory running_var(channel_md, engine_, buffers_.data() + layout_.buffer(node.id, 1).offset);
    mem_[node.id] = alloc(pd.dst_desc());

    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, mem_[src]},    {DNNL_ARG_DST, mem_[node.id]},
                                            {DNNL_ARG_MEAN, s.mean},      {DNNL_ARG_VARIANCE, s.variance},
                                            {DNNL_ARG_SCALE, s.scale},    {DNNL_ARG_SHIFT, s.shift}};
    if (fused_into_[node.id] >= 0) args[DNNL_ARG_WORKSPACE] = s.workspace;
    forward_training_.push_back({dnnl::batch_normalization_forward(pd), args, {}});
    const int64_t values = node.out.n * node.out.h * node.out.w;
    forward_training_.push_back(
        {{}, {}, [mean = s.mean, var = s.variance, running_mean, running_var, c = node.out.c,
                  momentum = node.batch_norm.momentum, values] {
           cpu::update_running_stats(static_cast<float*>(mean.get_data_handle()),
                                     static_cast<float*>(var.get_data_handle()),
                                     static_cast<float*>(running_mean.get_data_handle()),
                                     static_cast<float*>(running_var.get_data_handle()), c, momentum, values);
         }});
    forward_inference_.push_back({dnnl::batch_normalization_forward(infer_pd),
                                  {{DNNL_ARG_SRC, mem_[src]},
                                   {DNNL_ARG_DST, mem_[node.id]},
                                   {DNNL_ARG_MEAN, running_mean},
                                   {DNNL_ARG_VARIANCE, running_var},
                                   {DNNL_ARG_SCALE, s.scale},
                                   {DNNL_ARG_SHIFT, s.shift}},
                                  {}});
  }

  void compile_batch_norm_backward(const Node& node) {
    const int src = node.inputs[0];
    BatchNormState& s = bn_[node.id];
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
    if (fused_into_[node.id] >= 0) args[DNNL_ARG_WORKSPACE] = s.workspace;
    backward_.push_back({dnnl::batch_normalization_backward(pd), args, {}});
    gradients_ready_step(node);
    finish_grad(src, target);
  }

  dnnl::eltwise_forward::primitive_desc relu_forward_pd(const memory::desc& md, dnnl::algorithm alg,
                                                        const Node& node) {
    return ONEDNN_CHECK(where(node, "creating the forward ReLU"),
                        dnnl::eltwise_forward::primitive_desc(
                            dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, md, 0.0f, 0.0f),
                            engine_));
  }

  void compile_relu_forward(const Node& node) {
    const int src = node.inputs[0];
    auto pd = relu_forward_pd(mem_[src].get_desc(), dnnl::algorithm::eltwise_relu, node);
    mem_[node.id] = alloc(pd.dst_desc());
    both_forward(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, mem_[src]}, {DNNL_ARG_DST, mem_[node.id]}});
  }

  void compile_relu_backward(const Node& node) {
    const int src = node.inputs[0];
    auto fwd = relu_forward_pd(mem_[src].get_desc(), dnnl::algorithm::eltwise_relu, node);
    auto pd = ONEDNN_CHECK(where(node, "creating the backward ReLU"),
                           dnnl::eltwise_backward::primitive_desc(
                               dnnl::eltwise_backward::desc(dnnl::algorithm::eltwise_relu,
                                                            diff_[node.id].get_desc(), mem_[src].get_desc(), 0.0f, 0.0f),
                               engine_, fwd));
    memory target = grad_target(src, pd.diff_src_desc());
    backward_.push_back({dnnl::eltwise_backward(pd),
                         {{DNNL_ARG_SRC, mem_[src]}, {DNNL_ARG_DIFF_DST, diff_[node.id]}, {DNNL_ARG_DIFF_SRC, target}},
                         {}});
    finish_grad(src, target);
  }

  // ReLU folded into a convolution or add: its gradient is masked in place from the output.
  // (Folded into batch norm, batch-norm backward applies it from the workspace.)
  void compile_fused_relu_backward(const Node& node) {
    if (graph_.nodes[absorbs_[node.id]].kind == OpKind::batch_norm || relu_masked_in_sum_[node.id]) return;
    const memory::desc md = mem_[node.id].get_desc();
    auto fwd = relu_forward_pd(md, dnnl::algorithm::eltwise_relu_use_dst_for_bwd, node);
    auto pd = ONEDNN_CHECK(where(node, "creating the in-place backward ReLU"),
                           dnnl::eltwise_backward::primitive_desc(
                               dnnl::eltwise_backward::desc(dnnl::algorithm::eltwise_relu_use_dst_for_bwd,
                                                            diff_[node.id].get_desc(), md, 0.0f, 0.0f),
                               engine_, fwd));
    backward_.push_back({dnnl::eltwise_backward(pd),
                         {{DNNL_ARG_DST, mem_[node.id]},
                          {DNNL_ARG_DIFF_DST, diff_[node.id]},
                          {DNNL_ARG_DIFF_SRC, diff_[node.id]}},
                         {}});
  }

  dnnl::algorithm pool_algorithm(const Node& node) const {
    if (node.kind == OpKind::max_pool) return dnnl::algorithm::pooling_max;
    if (node.kind == OpKind::global_avg_pool || !node.pool.count_include_pad)
      return dnnl::algorithm::pooling_avg_exclude_padding;
    return dnnl::algorithm::pooling_avg_include_padding;
  }

  struct PoolGeometry {
    memory::dims strides, kernel, pad_l, pad_r;
  };

  PoolGeometry pool_geometry(const Node& node) const {
    const Shape& in = graph_.nodes[node.inputs[0]].out;
    if (node.kind == OpKind::global_avg_pool) return {{1, 1}, {in.h, in.w}, {0, 0}, {0, 0}};
    const int64_t k = node.pool.kernel, s = node.pool.stride, p = node.pool.pad;
    return {{s, s}, {k, k}, {p, p}, {(node.out.h - 1) * s + k - in.h - p, (node.out.w - 1) * s + k - in.w - p}};
  }

  void compile_pool_forward(const Node& node) {
    const int src = node.inputs[0];
    const PoolGeometry g = pool_geometry(node);
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

  void compile_pool_backward(const Node& node) {
    const int src = node.inputs[0];
    const PoolGeometry g = pool_geometry(node);
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

  void compile_add_forward(const Node& node) {
    const memory a = mem_[node.inputs[0]];
    const memory b = forward_view(node.inputs[1], a.get_desc());
    auto pd = ONEDNN_CHECK(where(node, "creating the binary add"),
                           dnnl::binary::primitive_desc(
                               dnnl::binary::desc(dnnl::algorithm::binary_add, a.get_desc(), b.get_desc(), a.get_desc()),
                               relu_attr(node), engine_));
    mem_[node.id] = alloc(pd.dst_desc());
    both_forward(dnnl::binary(pd), {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, mem_[node.id]}});
  }

  void compile_add_backward(const Node& node) {
    for (int u : node.inputs)
      if (!same(diff_[u], diff_[node.id])) finish_grad(u, diff_[node.id]);
      else grad_written_[u] = true;
  }

  // Option-A shortcut, run on the host directly in the blocked layout oneDNN chose for the
  // input (a strided copy: y[n, c + pad, h, w] = x[n, c, h*s, w*s]); padded channels of y stay
  // at the arena's zeros, since nothing else writes them.
  ref::ShortcutGeometry shortcut_geometry(const Node& node) const {
    const Shape& in = graph_.nodes[node.inputs[0]].out;
    return {in.n, in.c, in.h, in.w, node.out.c, node.out.h, node.out.w, node.shortcut.stride,
            node.shortcut.pad_front};
  }

  static BlockedLayout layout_of(const memory& m, const Node& node) {
    const auto layout = BlockedLayout::of(m.get_desc());
    if (!layout) throw std::invalid_argument(where(node, "input layout is not plain or channel-blocked"));
    return *layout;
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
            const int64_t xb = x.offset(n, 0, oy * g.stride, ox * g.stride), yb = y.offset(n, 0, oy, ox);
            for (int64_t c = 0; c < g.c; ++c) f(xb + x_channel[c], yb + y_channel[c]);
          }
    }
  };

  void compile_shortcut_forward(const Node& node) {
    const int src = node.inputs[0];
    // the output keeps the input's layout family: blocked in, blocked out
    const int64_t block = layout_of(mem_[src], node).block;
    const tag out_tag = block == 16 ? tag::nChw16c : block == 8 ? tag::nChw8c : block == 4 ? tag::nChw4c : tag::nchw;
    mem_[node.id] = alloc(memory::desc(dims(node), act_dt_, out_tag));
    auto host = [x = mem_[src], y = mem_[node.id], wide = act_dt_ == dt::f32,
                 walk = ShortcutWalk(shortcut_geometry(node), layout_of(mem_[src], node), layout_of(mem_[node.id], node))] {
      auto copy = [&](auto* out, const auto* in) { walk.run([&](int64_t xi, int64_t yi) { out[yi] = in[xi]; }); };
      if (wide)
        copy(static_cast<float*>(y.get_data_handle()), static_cast<const float*>(x.get_data_handle()));
      else
        copy(static_cast<uint16_t*>(y.get_data_handle()), static_cast<const uint16_t*>(x.get_data_handle()));
    };
    forward_training_.push_back({{}, {}, host});
    forward_inference_.push_back({{}, {}, host});
  }

  void compile_shortcut_backward(const Node& node) {
    const int src = node.inputs[0];
    memory target = grad_target(src, mem_[src].get_desc());
    backward_.push_back({{}, {}, [dy = diff_[node.id], dx = target, wide = act_dt_ == dt::f32,
                                  walk = ShortcutWalk(shortcut_geometry(node), layout_of(target, node),
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
                         }});
    finish_grad(src, target);
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
  bool may_alias_add_gradient(int id, const Node& add) const {
    if (std::count(add.inputs.begin(), add.inputs.end(), id) != 1) return false;
    if (!(diff_[add.id].get_desc() == mem_[id].get_desc())) return false;
    int last_modifier = -1;
    for (int c : consumers_[id])
      if (c != add.id) last_modifier = std::max(last_modifier, c);
    const bool in_place_relu = absorbs_[id] >= 0 && graph_.nodes[absorbs_[id]].kind != OpKind::batch_norm;
    if (in_place_relu) last_modifier = std::max(last_modifier, id);
    if (last_modifier < 0) return true;  // nothing modifies the buffer
    const int other = add.inputs[0] == id ? add.inputs[1] : add.inputs[0];
    if (other < id) return false;  // its gradient is not decided yet: assume the worst
    const int reader = same(diff_[other], diff_[add.id]) ? other : add.id;
    return reader > last_modifier;
  }

  void allocate_gradients() {
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

  bool input_grad_, input_nhwc_, fuse_, own_kernels_;
  int threads_;  // OpenMP threads the plan's own kernels run
  size_t weight_grad_scratch_bytes_ = 0;
  int own_weight_grads_ = 0;  // convolutions whose weight gradient compile_own_weight_grad() took
  Arena weight_grad_scratch_;
  dt act_dt_ = dt::f32;  // activations, their gradients and the weights' working copies
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::vector<std::vector<int>> consumers_;
  std::vector<memory> mem_, diff_;
  std::vector<int> fused_into_;  // producer -> the ReLU folded into it
  std::vector<int> absorbs_;     // folded ReLU -> its producer
  std::vector<bool> grad_written_;
  std::vector<bool> relu_masked_in_sum_;  // folded ReLU whose mask finish_grad() applied
  int compiling_ = -1;                    // the node whose backward steps compile() is adding
  std::vector<bool> flat_;  // tensor is 2-D (see dims())
  std::vector<std::vector<memory>> forward_views_, backward_views_;
  std::vector<WeightedState> conv_;
  std::unordered_map<int, BatchNormState> bn_;
  struct PoolState {
    dnnl::pooling_forward::primitive_desc forward_pd;
    memory workspace;
  };
  std::unordered_map<int, PoolState> pool_;
  Steps forward_training_, forward_inference_, backward_;
  memory logits_plain_, dlogits_plain_;
  memory input_user_;  // fp32 images from set_input(); mem_[0] is them in the compute type
  std::vector<std::pair<memory, size_t>> placements_;
  size_t activation_bytes_ = 0;
  Arena activations_;  // every activation, gradient, workspace and reordered weight
};

}  // namespace

std::unique_ptr<Plan> make_onednn_plan(const Graph& graph, const PlanOptions& options) {
  return std::make_unique<OnednnPlan>(graph, options);
}

}  // namespace cnnbench
