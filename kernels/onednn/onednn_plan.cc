// kernels/onednn/onednn_plan.cc — the oneDNN CPU backend's skeleton. compile() walks the graph once and builds three lists of
// steps (training forward, inference forward, backward), each a oneDNN primitive with its
// arguments or a small host function, calling the op family's compile_*() for each node (see
// plan_internal.h for layouts, fusions and gradient sums); a step replays a list and allocates
// nothing.
#include "kernels/onednn/plan_internal.h"

#include <chrono>
#include <cstring>

#include <omp.h>

#include "kernels/backend.h"
#include "kernels/onednn/onednn_plan.h"

namespace cnnbench {

bool cpu_computes_bf16() {
  // oneDNN's ISA values are masks that hold the ISAs below them: AVX-512 core and up emulate or
  // run bf16; AVX2 and below have no bf16 primitives at all
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (isa & core) == core;
}

}  // namespace cnnbench

namespace cnnbench::onednn {

OnednnPlan::OnednnPlan(const Graph& graph, const PlanOptions& options)
    : Plan(graph),
      input_grad_(options.input_grad),
      input_nhwc_(options.input_nhwc),
      fuse_(options.fuse),
      own_kernels_(options.own_kernels),
      share_memory_(options.share_memory),
      poison_dead_(options.poison_dead_tensors),
      host_memory_budget_(options.host_memory_budget),
      threads_(omp_get_max_threads()) {
  if (options.compute == DType::f16)
    throw std::invalid_argument(
        "backend 'onednn': fp16 compute needs AVX-512 FP16, which this build does not target; "
        "bf16 is the CPU's fast half type (--precision=bf16, or --use_fp16, picks it)");
  if (options.compute == DType::bf16 && !cpu_computes_bf16())
    throw std::invalid_argument(
        "backend 'onednn': bf16 compute needs AVX-512 (oneDNN has no bf16 kernels for this CPU); run in fp32 "
        "(--precision=fp32, without --use_fp16)");
  act_dt_ = options.compute == DType::bf16 ? dt::bf16 : dt::f32;
  engine_ = ONEDNN_CHECK("creating the CPU engine", dnnl::engine(dnnl::engine::kind::cpu, 0));
  stream_ = dnnl::stream(engine_);
  compile();
}

void OnednnPlan::set_input(const float* images) {
  std::copy_n(images, graph_.input().out.elements(), static_cast<float*>(input_user_.get_data_handle()));
}

void OnednnPlan::forward(Mode mode) {
  if (mode == Mode::training) begin_dropout_step();
  read_point_ = mode == Mode::training ? 0 : 2;
  run(mode == Mode::training ? forward_training_ : forward_inference_, &LayerTime::forward_sec,
      mode == Mode::training ? 0 : 1, 1);
}

void OnednnPlan::backward() {
  read_point_ = 1;
  run(backward_, &LayerTime::backward_sec, 0, backward_first_time_);
}

void OnednnPlan::read_output(int node, float* dst) {
  if (node < 0 || node >= static_cast<int>(graph_.nodes.size()))
    throw std::out_of_range("read_output: no node " + std::to_string(node));
  if (fused_into_[node] >= 0)
    throw std::logic_error("read_output: node '" + graph_.nodes[node].name +
                           "' was fused with its ReLU; build the plan with fuse = false");
  if (!kept_at_[read_point_][node])
    throw std::logic_error("read_output: node '" + graph_.nodes[node].name + "' is not kept after " +
                           (read_point_ == 1 ? "backward" : "forward") +
                           " (a later tensor shares its bytes); build the plan with share_memory = false");
  memory plain(plain_md(dims(graph_.nodes[node])), engine_, dst);
  run_reorder(mem_[node], plain);
}

std::string OnednnPlan::kernel_notes() const {
  std::string notes;
  // "<what> on <count> <noun>s", each after a "; ", where the count is not 0
  auto add = [&notes](const std::string& what, int count, const char* noun) {
    if (count > 0)
      notes += (notes.empty() ? "" : "; ") + what + " on " + std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
  };
  add("cnnbench's bf16 1x1 weight-gradient kernel", own_weight_grads_, "convolution");
  add("cnnbench's depthwise weight-gradient kernel", depthwise_weight_grads_, "convolution");
  add("1x1 weight gradients as AMX matmuls", matmul_weight_grads_, "convolution");
  add("1x1 data gradients as AMX matmuls", matmul_data_grads_, "convolution");
  add("cnnbench's channels-last bf16 batch norm", own_batch_norms_, "layer");
  return notes;
}

void OnednnPlan::read_input_grad(float* dst) {
  if (!input_grad_) throw std::logic_error("plan was built without input_grad");
  memory plain(input_user_.get_desc(), engine_, dst);
  run_reorder(diff_[0], plain);
}

void OnednnPlan::run(const Steps& steps, double LayerTime::*phase, int timeline, int first_time) {
  // a node's steps run one after another: its span starts with the first and ends with the last
  auto node_start = std::chrono::steady_clock::time_point{};
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    if (phase == &LayerTime::forward_sec && (i == 0 || steps[i - 1].node != step.node)) params_needed(step.node);
    const auto start = layer_timing_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (poison_dead_) poison(timeline, first_time + static_cast<int>(i), true);
    if (const size_t time = static_cast<size_t>(first_time) + i; time < zero_padding_at_[timeline].size())
      for (const memory& m : zero_padding_at_[timeline][time]) m.set_data_handle(m.get_data_handle(), stream_);
    if (step.host) {
      step.host();
    } else {
      try {
        step.primitive.execute(stream_, step.args);
      } catch (const dnnl::error& e) {
        throw_onednn_error("running " + step.what, e, __FILE__, __LINE__);
      }
    }
    if (poison_dead_) poison(timeline, first_time + static_cast<int>(i), false);
    // CPU primitives run synchronously on the OpenMP runtime, so this is the step's time.
    if (layer_timing_) {
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      layer_times_[step.node].*phase += sec;
      if (step.weight_grad) layer_times_[step.node].weight_grad_sec += sec;
      if (layer_span_hook_) {
        if (i == 0 || steps[i - 1].node != step.node) node_start = start;
        if (i + 1 == steps.size() || steps[i + 1].node != step.node)
          layer_span_hook_(step.node, phase == &LayerTime::backward_sec, node_start, std::chrono::steady_clock::now());
      }
    }
  }
  stream_.wait();
}

// NaNs (all bits set, in fp32 and bf16) in every shared tensor whose life starts at `time`
// (before the step) or ended at it (after): a step that reads a tensor outside the lifetime the
// memory plan gave it, or does not write all of its output, then shows in the results. loss()
// runs outside the step lists and is not covered: its tensors' lifetimes are set by hand in
// activation_plan.cc, and the shared-against-unshared test checks them.
void OnednnPlan::poison(int timeline, int time, bool before) {
  for (const Poisoned& p : poisoned_)
    if ((before ? p.first[timeline] : p.last[timeline]) == time)
      std::memset(p.tensor.get_data_handle(), 0xff, p.tensor.get_desc().get_size());
}

void OnednnPlan::run_reorder(const memory& from, const memory& to) {
  dnnl::reorder(from, to).execute(stream_, const_cast<memory&>(from), const_cast<memory&>(to));
  stream_.wait();
}

void OnednnPlan::compile() {
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
                     ((node.kind == OpKind::relu || node.kind == OpKind::relu6 || node.kind == OpKind::batch_norm ||
                       node.kind == OpKind::add ||
                       node.kind == OpKind::dropout) &&
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
      case OpKind::relu:
      case OpKind::relu6: compile_relu_forward(node); break;
      case OpKind::max_pool:
      case OpKind::avg_pool:
      case OpKind::global_avg_pool: compile_pool_forward(node); break;
      case OpKind::add: compile_add_forward(node); break;
      case OpKind::shortcut: compile_shortcut_forward(node); break;
      case OpKind::concat: compile_concat_forward(node); break;
      case OpKind::dropout: compile_dropout_forward(node); break;
      case OpKind::lrn: compile_lrn_forward(node); break;
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
      case OpKind::relu:
      case OpKind::relu6: compile_relu_backward(node); break;
      case OpKind::max_pool:
      case OpKind::avg_pool:
      case OpKind::global_avg_pool: compile_pool_backward(node); break;
      case OpKind::add: compile_add_backward(node); break;
      case OpKind::shortcut: compile_shortcut_backward(node); break;
      case OpKind::concat: compile_concat_backward(node); break;
      case OpKind::dropout: compile_dropout_backward(node); break;
      case OpKind::lrn: compile_lrn_backward(node); break;
    }
    label_steps(mark, node);
  }

  const Node& logits = graph_.logits();
  const memory::desc logits_md = plain_md(dims(logits));
  logits_plain_ = mem_[logits.id].get_desc() == logits_md ? mem_[logits.id] : alloc(logits_md);
  dlogits_plain_ = diff_[logits.id].get_desc() == logits_md ? diff_[logits.id] : alloc(logits_md);
  place_activations();
  kernel_scratch_ = Arena((kernel_scratch_bytes_ + sizeof(float) - 1) / sizeof(float));
}

OnednnPlan::StepMark OnednnPlan::mark_steps() const { return {forward_training_.size(), forward_inference_.size(), backward_.size()}; }

void OnednnPlan::label_steps(const StepMark& mark, const Node& node) {
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

bool OnednnPlan::norm_applies_relu(int producer) const {
  const int relu = fused_into_[producer];
  return relu >= 0 && graph_.nodes[producer].kind == OpKind::batch_norm && graph_.nodes[relu].kind == OpKind::relu;
}

bool OnednnPlan::masked_in_place(int relu) const { return absorbs_[relu] >= 0 && !norm_applies_relu(absorbs_[relu]); }

// A ReLU or ReLU6 that is its producer's only reader (a convolution's, batch norm's or add's) is
// folded into it: no tensor of its own, its gradient the producer's.
void OnednnPlan::plan_fusions() {
  if (!fuse_) return;
  for (const Node& node : graph_.nodes) {
    if (node.kind != OpKind::relu && node.kind != OpKind::relu6) continue;
    const int producer = node.inputs[0];
    const OpKind kind = graph_.nodes[producer].kind;
    if (producer == 0 || consumers_[producer].size() != 1) continue;
    if (kind == OpKind::conv || kind == OpKind::batch_norm || kind == OpKind::add) {
      absorbs_[node.id] = producer;
      fused_into_[producer] = node.id;
    }
  }
}

}  // namespace cnnbench::onednn

namespace cnnbench {

std::unique_ptr<Plan> make_onednn_plan(const Graph& graph, const PlanOptions& options) {
  return std::make_unique<onednn::OnednnPlan>(graph, options);
}

}  // namespace cnnbench
