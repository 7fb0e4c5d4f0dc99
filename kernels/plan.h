// kernels/plan.h — Plan: a graph compiled once by a backend and replayed every step.
//   Mode, PlanOptions, SgdConfig, LossResult, Plan (the interface every backend implements;
//   a plan on an accelerator adds DevicePlan, kernels/device_plan.h).
// A plan owns the parameter, gradient, momentum and buffer arenas (fp32, plain layout, in
// ParamLayout's backward order) and everything a step needs; forward(), loss(), backward()
// and sgd_step() allocate nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "kernels/arena.h"
#include "kernels/dtype.h"
#include "kernels/param_layout.h"
#include "models/graph.h"

namespace cnnbench {

class DevicePlan;
class SearchChoices;

enum class Mode { training, inference };

struct PlanOptions {
  DType compute = DType::f32;
  bool input_grad = false;  // also compute d(loss)/d(images) (tests only)
  bool fuse = true;         // let the backend fuse ops (batch norm + ReLU, add + ReLU)
  bool input_nhwc = false;  // set_input() receives N x H x W x C images instead of NCHW
  bool own_kernels = true;  // CPU: cnnbench's kernels where they beat oneDNN's (bf16 1x1 weight gradient)
  bool allow_tf32 = true;   // GPU fp32: tensor cores in TF32 (as PyTorch's default for convolutions)
  bool timed_algorithm_search = true;  // GPU: time cuDNN's convolution algorithms (else its heuristics)
  bool deterministic_algorithms = false;  // GPU: only convolution algorithms without atomics (same bits run to run)
  bool cuda_graphs = false;  // GPU: replay forward and backward as CUDA graphs (not with a gradient hook)
  bool pad_input_channels = true;  // GPU, 16-bit: a 3-channel input read only by convolutions is stored with 4 or 8
  int padded_channels = 0;  // then 4 or 8 (tests); 0: the timed search chooses (else 4)
  // GPU, timed search: its choices read from and added to this (kernels/search_choices.h; the
  // caller keeps it alive while the plan compiles, and saves it). Null: search every shape.
  SearchChoices* search_choices = nullptr;
  bool share_memory = true;  // tensors whose lifetimes do not overlap share bytes (kernels/memory_plan.h)
  bool poison_dead_tensors = false;  // tests: fill a shared tensor with NaNs before its first and after its last use
  // CPU: the bytes this rank may take of the host's available memory (0: no check). A plan that
  // needs more refuses in one line, with the batch that would fit, before it touches memory (past
  // it the kernel's OOM killer ends the ranks without a word).
  size_t host_memory_budget = 0;
};

struct SgdConfig {
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  bool nesterov = false;
  float gradient_scale = 1.0f;  // gradients are multiplied by this first (1 / loss scale)
  // LARS (You et al. 2017, as MLPerf's ResNet-50 reference): each weight tensor's rate scaled by
  // eta x |w| / (|g| + weight_decay x |w|); biases and batch-norm parameters (1-D tensors) keep
  // the plain rate and no weight decay. The velocity holds rate x gradient, as in that reference.
  bool lars = false;
  float lars_eta = 0.001f;
  // weight decay on batch norm's scales and shifts too (PyTorch's SGD decays every parameter);
  // false: as tf_cnn_benchmarks, whose models leave them out of the L2 loss (filter_l2_loss_vars)
  bool decay_batch_norm = false;
};

// Time spent in one node's steps, summed over the steps run since timing was switched on.
// weight_grad_sec is the part of backward_sec that computes a convolution's or linear layer's
// weight and bias gradients (with the reorders that feed them); the rest is the data gradient.
struct LayerTime {
  double forward_sec = 0, backward_sec = 0, weight_grad_sec = 0;
};

struct LossResult {
  double loss = 0;           // mean softmax cross-entropy over the batch
  int64_t top1_correct = 0;  // images whose label is the arg-max of the logits
  int64_t top5_correct = 0;
  bool deferred = false;     // a device plan fills the values in DevicePlan::synchronize()
};

class Plan {
 public:
  // Called with an index into layout().params as soon as that gradient is final.
  using GradientReadyHook = std::function<void(int param_index)>;

  explicit Plan(const Graph& graph);
  virtual ~Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  const Graph& graph() const { return graph_; }
  const ParamLayout& layout() const { return layout_; }
  std::span<float> parameters() { return params_.span(); }
  std::span<float> gradients() { return grads_.span(); }
  std::span<float> momentum() { return momentum_.span(); }
  std::span<float> buffers() { return buffers_.span(); }
  void set_gradient_ready_hook(GradientReadyHook hook) { hook_ = std::move(hook); }
  // Called in forward() with a node's id before the first work that reads its parameters (CPU
  // backends; nodes without parameters are not announced): --overlap_forward applies the
  // previous step's update of those parameters there (harness/run/forward_overlap.h).
  using ParamsNeededHook = std::function<void(int node)>;
  void set_params_needed_hook(ParamsNeededHook hook) { params_needed_hook_ = std::move(hook); }

  // Per-node timing (Caffe's `time`): off by default; switching it on resets the sums.
  void set_layer_timing(bool on) {
    layer_timing_ = on;
    layer_times_.assign(graph_.nodes.size(), {});
  }
  const std::vector<LayerTime>& layer_times() const { return layer_times_; }
  // With layer timing on, called after each node's forward or backward work with its start and
  // end (a timeline's per-layer spans; CPU backends).
  using LayerSpanHook = std::function<void(int node, bool backward, std::chrono::steady_clock::time_point start,
                                           std::chrono::steady_clock::time_point end)>;
  void set_layer_span_hook(LayerSpanHook hook) { layer_span_hook_ = std::move(hook); }

  // Copies one batch of images (plain fp32 NCHW, or NHWC if PlanOptions::input_nhwc) in.
  virtual void set_input(const float* images) = 0;
  virtual void forward(Mode mode) = 0;
  // Softmax cross-entropy of the logits against labels in [0, classes); seeds backward()
  // with d(mean loss)/d(logits).
  virtual LossResult loss(const int32_t* labels) = 0;
  // Seeds backward() with a given gradient of the logits (plain, tests only).
  virtual void set_output_grad(const float* grad) = 0;
  // Fills gradients() (overwriting), calling the hook for each parameter as it is ready.
  virtual void backward() = 0;
  // With g = gradient_scale x gradient:
  // v = momentum * v + (g + weight_decay * w);  w -= lr * v  (or the Nesterov form), over the
  // parameter elements [offset, offset + count) (the whole arena by default).
  virtual void sgd_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count) = 0;
  void sgd_step(const SgdConfig& config, float learning_rate) {
    sgd_step(config, learning_rate, 0, static_cast<size_t>(exchange_elements()));
  }
  // The arena that sgd_step()'s offsets and the gradient exchange address: the host layout on
  // CPUs; a device plan may start each tensor on an aligned offset (the gaps stay zero).
  int64_t exchange_offset(int param_index) const;
  int64_t exchange_elements() const;
  // loss() seeds backward with scale x d(mean loss)/d(logits): 1/ranks turns the allreduce sum
  // of gradients into their average at no cost.
  void set_loss_gradient_scale(float scale) { loss_gradient_scale_ = scale; }
  // Loss scaling for half precision: multiplies the loss gradient too (undone in sgd_step by
  // SgdConfig::gradient_scale).
  void set_loss_scale(float scale) { loss_scale_ = scale; }
  // Label smoothing s in [0, 1): the loss's target is (1 - s) on the label and s / classes on
  // every class (every backend).
  void set_label_smoothing(float s) { label_smoothing_ = s; }
  // Dropout masks (kernels/dropout_mask.h) come from this seed (each rank its own) and a step
  // count that each training forward() advances, from `step` (a resumed run's steps so far).
  void set_dropout_seed(uint64_t seed, uint64_t step = 0) {
    dropout_seed_ = seed;
    next_dropout_step_ = step;
  }

  // Which device the plan runs on, for the log header ("/cpu:0", "/gpu:0 (NVIDIA H100 ...)").
  virtual std::string device_name() const { return "/cpu:0"; }
  // Kernels the backend chose beyond its library's, for the log header ("" if none).
  virtual std::string kernel_notes() const { return {}; }
  // The library kernels a node's steps run where the backend chose among several (a GPU
  // convolution's algorithms per direction), for --layer_timing's table ("" where nothing was chosen).
  virtual std::string layer_kernels(int /*node*/) const { return {}; }
  // Bytes of activations, gradients, workspaces and weight copies a step works in, as planned,
  // and what they would take without sharing (0 where a backend does not say).
  virtual size_t working_memory_bytes() const { return 0; }
  virtual size_t unshared_working_memory_bytes() const { return 0; }
  // No gradient is inf or NaN (after backward and any reduction).
  virtual bool gradients_finite();
  // Half the sum of squares of the weights that sgd_step(config) decays (batch norm's scales and
  // shifts only with decay_batch_norm; with LARS the tensors of more than one dimension), as they
  // are now: tf_cnn_benchmarks' l2_loss, which its total_loss adds times the decay. A device
  // plan's weights are read from the device first.
  double decayed_weights_l2(const SgdConfig& config);

  // A plan whose state lives on an accelerator answers with its device face (device_plan.h);
  // a CPU plan has none, and everything a CPU backend writes is above.
  virtual DevicePlan* device() { return nullptr; }
  const DevicePlan* device() const { return const_cast<Plan*>(this)->device(); }

  // Copies a node's output (plain NCHW fp32) out of the plan, after forward() (or backward()). The
  // logits always; another node only if the plan keeps it that long (a later step reads it, or
  // PlanOptions::share_memory is off). loss() and set_output_grad() come between forward() and
  // backward(): after backward their gradient's bytes may hold another tensor.
  virtual void read_output(int node, float* dst) = 0;
  // Copies d(loss)/d(images) out (in set_input's layout), after backward() with input_grad.
  virtual void read_input_grad(float* dst) = 0;

 protected:
  void gradient_ready(int param_index) {
    if (hook_) hook_(param_index);
  }
  void params_needed(int node) {
    if (params_needed_hook_ && !layout_.params_of_node[node].empty()) params_needed_hook_(node);
  }

  Graph graph_;
  ParamLayout layout_;
  Arena params_, grads_, momentum_, buffers_;
  GradientReadyHook hook_;
  ParamsNeededHook params_needed_hook_;
  LayerSpanHook layer_span_hook_;
  float loss_gradient_scale_ = 1.0f, loss_scale_ = 1.0f, label_smoothing_ = 0.0f;
  // A backend's training forward() calls this once; that forward and the backward after it draw
  // their masks with the step it returns.
  uint64_t begin_dropout_step() { return dropout_step_ = next_dropout_step_++; }
  uint64_t dropout_seed_ = 0, next_dropout_step_ = 0, dropout_step_ = 0;
  bool layer_timing_ = false;
  std::vector<LayerTime> layer_times_;
};

}  // namespace cnnbench
