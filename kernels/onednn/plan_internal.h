// kernels/onednn/plan_internal.h — the oneDNN plan's class, shared by the files that compile
// it: onednn_plan.cc (the compile/replay skeleton), tensors.cc (layouts, views, gradient
// buffers), and one file per op family (conv, linear_loss, batch_norm, pool, elementwise, sgd).
// Nothing outside kernels/onednn/ includes it: the backend's face is onednn_plan.h.
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
//
// Memory (activation_plan.cc): every tensor above lives in one activation arena, placed once the
// step lists are built. Tensors whose lifetimes on the training step and on the inference step
// do not overlap share bytes (PlanOptions::share_memory): a gradient takes the place of an
// activation that backward no longer reads. A host step names the tensors it touches in `uses`.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/onednn/blocked_layout.h"
#include "kernels/onednn/nhwc_batch_norm.h"
#include "kernels/onednn/onednn_check.h"
#include "kernels/plan.h"

namespace cnnbench::onednn {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// One entry of a replayed list: a oneDNN primitive with its arguments, or host work.
struct Step {
  Step(dnnl::primitive p, std::unordered_map<int, memory> a, std::function<void()> h = {},
       std::vector<memory> u = {})
      : primitive(std::move(p)), args(std::move(a)), host(std::move(h)), uses(std::move(u)) {}
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
  std::function<void()> host;  // set instead of primitive for host work
  std::vector<memory> uses;    // the tensors host work reads or writes (the memory plan's lifetimes)
  std::string what;            // "node 'conv1' (conv): reorder", for error messages
  int node = 0;                // the graph node this step belongs to (layer timing)
  bool weight_grad = false;    // computes weight/bias gradients (layer timing's split of backward)
};
using Steps = std::vector<Step>;

inline memory::desc plain_md(const memory::dims& dims) {
  return memory::desc(dims, dt::f32, dims.size() == 2 ? tag::nc : tag::nchw);
}

inline memory::desc any_md(const memory::dims& dims, dt type = dt::f32) { return memory::desc(dims, type, tag::any); }

inline bool same(const memory& a, const memory& b) { return a.get() == b.get(); }

// m's layout as offsets (plain, or channels blocked once); throws naming the node otherwise.
BlockedLayout layout_of(const memory& m, const Node& node);

inline std::string where(const Node& node, const char* what) {
  return "node '" + node.name + "' (" + op_name(node.kind) + "): " + what;
}

class OnednnPlan final : public Plan {
 public:
  OnednnPlan(const Graph& graph, const PlanOptions& options);

  void set_input(const float* images) override;
  void forward(Mode mode) override;
  LossResult loss(const int32_t* labels) override;            // linear_loss.cc
  void set_output_grad(const float* grad) override;           // linear_loss.cc
  void backward() override;
  void sgd_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count) override;  // sgd.cc
  void read_output(int node, float* dst) override;
  std::string kernel_notes() const override;
  size_t working_memory_bytes() const override { return activation_bytes_; }
  size_t unshared_working_memory_bytes() const override { return unshared_activation_bytes_; }
  void read_input_grad(float* dst) override;

 private:
  // ---- running (onednn_plan.cc) ----
  // `timeline` and `first_time`: where the list sits in the memory plan's timelines (poisoning)
  void run(const Steps& steps, double LayerTime::*phase, int timeline, int first_time);
  void poison(int timeline, int time, bool before);
  void run_reorder(const memory& from, const memory& to);

  // ---- compile skeleton (onednn_plan.cc) ----
  void compile();
  struct StepMark {
    size_t training, inference, backward;
  };
  StepMark mark_steps() const;
  void label_steps(const StepMark& mark, const Node& node);
  void plan_fusions();
  // A ReLU folded into batch norm rides in its fuse_norm_relu (mask in its workspace); a folded
  // ReLU6 (or ReLU into a convolution or add) is applied and masked in place on the output.
  bool norm_applies_relu(int producer) const;
  bool masked_in_place(int relu) const;

  // ---- tensors, views and gradient buffers (tensors.cc) ----
  // A tensor computed in the plan's compute type, layout left to the primitive.
  memory::desc act(const memory::dims& d) const { return any_md(d, act_dt_); }
  memory::dims dims(const Node& node) const;
  memory param_memory(const Node& node, int index, const memory::desc& md, Arena& arena);
  static void reorder_step(Steps& steps, const memory& from, const memory& to, bool accumulate = false);
  memory forward_view(int t, const memory::desc& want);
  memory backward_view(int t, const memory::desc& want);
  memory alloc(const memory::desc& md);
  void place_activations();  // activation_plan.cc
  memory grad_target(int t, const memory::desc& produced);
  void finish_grad(int t, const memory& target);
  bool sum_can_mask_relu(int t, const memory& target) const;
  memory weights_in(const memory& plain, const memory::desc& want, std::vector<Steps*> lists);
  void both_forward(const dnnl::primitive& p, std::unordered_map<int, memory> args);
  void mark_weight_grad(size_t first);
  void gradients_ready_step(const Node& node);
  bool may_alias_add_gradient(int id, const Node& add) const;
  void allocate_gradients();

  // ---- op families ----
  // Per-node primitives shared by forward and backward compilation (conv.cc, linear_loss.cc).
  struct WeightedState {
    dnnl::primitive_desc forward_pd;
    memory src;                  // the input in the layout the forward primitive reads
    memory weights_forward;      // weights in the forward layout
    memory weights_plain, bias_plain, diff_weights_plain, diff_bias_plain;
  };
  // tensors.cc: the steps a convolution and an inner product share
  void weighted_forward(const Node& node, const dnnl::primitive_desc& pd, const dnnl::primitive& primitive,
                        const memory::desc& weights_plain, const memory::desc* bias_md);
  void weighted_weight_grad(const Node& node, const WeightedState& s, const dnnl::primitive_desc& wpd,
                            const dnnl::primitive& primitive, bool bias);
  void weighted_data_grad(const Node& node, const WeightedState& s, const dnnl::primitive_desc& dpd,
                          const dnnl::primitive& primitive);
  void compile_conv_forward(const Node& node);
  void compile_conv_backward(const Node& node);
  bool compile_own_weight_grad(const Node& node, const Node& in, const WeightedState& s);
  bool compile_matmul_weight_grad(const Node& node, const Node& in, const WeightedState& s);  // matmul_weight_grad.cc
  bool compile_matmul_data_grad(const Node& node, const Node& in, const WeightedState& s);  // matmul_data_grad.cc
  // matmul_weight_grad.cc: what the two AMX matmul paths share
  bool channels_last_bf16_1x1(const Node& node, const Node& in, const WeightedState& s) const;
  std::optional<dnnl::matmul::primitive_desc> amx_matmul(const memory::desc& a, const memory::desc& b,
                                                         const memory::desc& c) const;
  void compile_onednn_weight_grad(const Node& node, const Node& in, const WeightedState& s,
                                  const dnnl::convolution_forward::primitive_desc& fwd_pd);
  bool compile_depthwise_weight_grad(const Node& node, const Node& in, const WeightedState& s);
  void compile_linear_forward(const Node& node);
  void compile_linear_backward(const Node& node);

  struct BatchNormState {  // batch_norm.cc
    dnnl::batch_normalization_forward::primitive_desc training_pd;
    memory mean, variance, workspace, scale, shift, diff_scale, diff_shift;
    bool own = false;  // the training passes are nhwc_batch_norm.h's (no workspace then)
  };
  dnnl::normalization_flags batch_norm_flags(const Node& node) const;
  void compile_batch_norm_forward(const Node& node);
  void compile_batch_norm_backward(const Node& node);
  NhwcBatchNorm own_batch_norm_shape(const Node& node) const;

  struct PoolState {  // pool.cc
    dnnl::pooling_forward::primitive_desc forward_pd;
    memory workspace;
  };
  void compile_pool_forward(const Node& node);
  void compile_pool_backward(const Node& node);

  struct LrnState {  // lrn.cc
    dnnl::lrn_forward::primitive_desc forward_pd;
    memory workspace;
  };
  void compile_lrn_forward(const Node& node);
  void compile_lrn_backward(const Node& node);

  // elementwise.cc: ReLU (alone or folded), add, the option-A shortcut
  dnnl::primitive_attr relu_attr(const Node& node) const;
  dnnl::eltwise_forward::primitive_desc relu_forward_pd(const memory::desc& md, dnnl::algorithm alg,
                                                        const Node& node, float upper = 0.0f);
  void compile_relu_forward(const Node& node);
  void compile_relu_backward(const Node& node);
  void compile_fused_relu_backward(const Node& node);
  void compile_relu_in_place(const Node& norm, Steps& steps);
  void compile_add_forward(const Node& node);
  void compile_add_backward(const Node& node);
  void compile_shortcut_forward(const Node& node);
  void compile_shortcut_backward(const Node& node);
  void compile_concat_forward(const Node& node);  // concat.cc
  void compile_concat_backward(const Node& node);
  memory::desc plain_desc(const Node& node) const;  // dropout.cc
  void compile_dropout_forward(const Node& node);  // dropout.cc
  void compile_dropout_backward(const Node& node);

  bool input_grad_, input_nhwc_, fuse_, own_kernels_, share_memory_, poison_dead_;
  size_t host_memory_budget_ = 0;
  void check_memory_budget() const;  // activation_plan.cc
  int threads_;  // OpenMP threads the plan's own kernels run
  size_t kernel_scratch_bytes_ = 0;
  int own_weight_grads_ = 0;  // convolutions whose weight gradient compile_own_weight_grad() took
  int depthwise_weight_grads_ = 0;  // and compile_depthwise_weight_grad()
  int matmul_weight_grads_ = 0;     // and compile_matmul_weight_grad()
  int matmul_data_grads_ = 0;       // convolutions whose data gradient compile_matmul_data_grad() took
  int own_batch_norms_ = 0;         // batch norms whose training passes nhwc_batch_norm.h runs
  Arena kernel_scratch_;            // the own kernels' scratch: one runs at a time
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
  std::unordered_map<int, PoolState> pool_;
  std::unordered_map<int, LrnState> lrn_;
  Steps forward_training_, forward_inference_, backward_;
  memory logits_plain_, dlogits_plain_;
  memory input_user_;  // fp32 images from set_input(); mem_[0] is them in the compute type
  std::vector<memory> placements_;  // every tensor alloc() made, placed by place_activations()
  // per node, whether read_output() may read it after training forward, after backward, after
  // inference forward (read_point_: which of the three the plan last passed)
  std::vector<bool> kept_at_[3];
  int read_point_ = 0;
  struct Poisoned {  // a shared tensor and its lifetimes, kept for poison_dead_tensors
    memory tensor;
    int first[2], last[2];
  };
  std::vector<Poisoned> poisoned_;
  // Shared tensors whose channels are padded to the block, by the time on each timeline their
  // life starts: oneDNN relies on the padding being zero, and the bytes may hold another
  // tensor's values, so it is zeroed before that step (memory::set_data_handle does it). The
  // oneDNN 2.6 primitives nasnet runs write their outputs' padding as zeros themselves (its
  // poison test passes without this too); a host step writing part of a padded tensor may not.
  std::vector<std::vector<memory>> zero_padding_at_[2];
  int backward_first_time_ = 0;
  size_t activation_bytes_ = 0, unshared_activation_bytes_ = 0;
  Arena activations_;  // every activation, gradient, workspace and reordered weight
};

}  // namespace cnnbench::onednn
