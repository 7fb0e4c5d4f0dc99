// kernels/cuda/plan_internal.h — CudaPlan, the cuda backend's plan, for the files that define it
// (internal to kernels/cuda/; everything else sees make_cuda_plan() in cuda_plan.h):
//   cuda_plan.cc      the compile/replay skeleton (compile(), run(), synchronize(), shared helpers)
//   plan_state.cc     host <-> device state and layouts (upload/download, read_output, ...)
//   memory.cc         the activations' and gradients' arena, device memory figures, out-of-memory messages
//   conv.cc, batch_norm.cc, pool.cc, elementwise_ops.cc (relu, add, shortcut), linear_loss.cc
//                     each op family's compile_*() (and the loss), sgd.cc the update,
//   conv_bn.cc        conv -> batch norm -> ReLU -> conv chains folded into cuDNN graphs,
//   conv_epilogues.cc a convolution and the ReLU next to it as one cuDNN graph,
//   plan_report.cc    what the plan says of its choices (the log's note, --layer_timing's kernels).
#pragma once

#include <cublas_v2.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/conv_bn_relu.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cudnn_graph.h"
#include "kernels/cuda/device.h"
#include "kernels/device_plan.h"
#include "kernels/device_tensors.h"
#include "kernels/plan.h"
#include "kernels/tensor_chunks.h"

namespace cnnbench::cuda {

void check_cublas(cublasStatus_t s, const char* what, const char* where);
#define CUBLAS_CHECK(call) ::cnnbench::cuda::check_cublas((call), #call, __FILE__ ":" CNNBENCH_STR(__LINE__))

cudnnDataType_t cudnn_type(DType t);
cudaDataType_t blas_type(DType t);

// Owners of cuDNN descriptors (destroyed with the plan).
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc() { CUDA_CHECK(cudnnCreateTensorDescriptor(&d)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
};
struct FilterDesc {
  cudnnFilterDescriptor_t d = nullptr;
  FilterDesc() { CUDA_CHECK(cudnnCreateFilterDescriptor(&d)); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d); }
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t d = nullptr;
  ConvDesc() { CUDA_CHECK(cudnnCreateConvolutionDescriptor(&d)); }
  ~ConvDesc() { cudnnDestroyConvolutionDescriptor(d); }
};
struct PoolDesc {
  cudnnPoolingDescriptor_t d = nullptr;
  PoolDesc() { CUDA_CHECK(cudnnCreatePoolingDescriptor(&d)); }
  ~PoolDesc() { cudnnDestroyPoolingDescriptor(d); }
};
struct ActivationDesc {
  cudnnActivationDescriptor_t d = nullptr;
  ActivationDesc() {
    CUDA_CHECK(cudnnCreateActivationDescriptor(&d));
    CUDA_CHECK(cudnnSetActivationDescriptor(d, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
  ~ActivationDesc() { cudnnDestroyActivationDescriptor(d); }
};

// Each algorithm with the math type cuDNN found it under: a 16-bit search on a tensor-op
// descriptor also returns default-math kernels, which fail with BAD_PARAM when run on that
// descriptor (seen on an H100: fp16 3x3 stride-2 16 -> 32 channels, backward filter).
struct ConvAlgos {
  cudnnConvolutionFwdAlgo_t forward{};
  cudnnConvolutionBwdDataAlgo_t backward_data{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter{};
  cudnnMathType_t forward_math{}, data_math{}, filter_math{};
  size_t workspace = 0;
  // conv + bias + ReLU as one cuDNN graph (conv.cc, bias_relu_graph()); null: the plain convolution
  // then add_bias(). With a timed search, both ways' medians (ms; 0: not timed).
  std::shared_ptr<FusedConv> bias_relu;
  float bias_relu_ms = 0, plain_ms = 0;
  // the data gradient with the backward of the ReLU whose output the convolution reads, as one
  // cuDNN graph (dgrad_relu_graph()); null: cuDNN's data gradient, the ReLU's mask elsewhere
  std::shared_ptr<FusedConv> dgrad_relu;
  float dgrad_relu_ms = 0, plain_dgrad_ms = 0;
};

// Everything one node's launches need besides the tensors in out_ and diff_.
struct NodeState {
  std::unique_ptr<TensorDesc> out;  // NHWC, compute type
  std::unique_ptr<FilterDesc> filter;
  std::unique_ptr<ConvDesc> conv, conv_data, conv_filter;  // forward, data and filter gradients' math types
  std::unique_ptr<PoolDesc> pool;
  std::unique_ptr<TensorDesc> stats;  // batch norm: per-channel fp32
  ConvAlgos algos;
  DeviceBuffer saved_mean, saved_inv_var, reserve;
  DeviceBuffer padded_weights, padded_grad;  // a convolution of the padded input: its filter with 4 input channels
  size_t reserve_bytes = 0;
  cudnnBatchNormOps_t bn_ops = CUDNN_BATCHNORM_OPS_BN;
  // a convolution of a folded chain (conv_bn.cc): its forward, and its weight gradient where it
  // applies a batch norm to its input, as cuDNN graphs; or a convolution's forward with its bias
  // and ReLU (ConvAlgos::bias_relu), and its data gradient with a ReLU's backward (dgrad_relu)
  std::unique_ptr<FusedConvCall> fused_forward, fused_filter, fused_data;
  // a folded batch norm: its output's sum and sum of squares (fp32; a convolution's own where its
  // graph sums statistics nobody reads), its scale and bias (fp16)
  DeviceBuffer stat_sums, scale_bias;
  DeviceBuffer pool_index;  // an overlapping max pool: each output element's window maximum's place (pool.cc)
};

std::string where(const Node& node);

class CudaPlan final : public Plan, public DevicePlan {
  using Launch = std::function<void()>;
  struct Step {
    Launch run;
    int node;
    bool weight_grad = false;  // computes weight/bias gradients (layer timing's split of backward)
  };

 public:
  CudaPlan(const Graph& graph, const PlanOptions& options);
  ~CudaPlan() override;
  void release() noexcept;  // the handles, streams, events and graphs: by the destructor, or by a constructor that throws

  // ---- the Plan interface ----
  DevicePlan* device() override { return this; }
  std::string device_name() const override { return device_name_; }
  std::string kernel_notes() const override;  // plan_report.cc: the algorithm search's time, the fused graphs
  void set_input(const float* images) override;
  void forward(Mode mode) override;
  LossResult loss(const int32_t* labels) override;            // linear_loss.cc
  void set_output_grad(const float* grad) override;           // plan_state.cc
  void backward() override;
  void sgd_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count) override;  // sgd.cc
  bool gradients_finite() override;                           // sgd.cc
  size_t batch_bytes() const;                                 // memory.cc
  size_t working_memory_bytes() const override;               // memory.cc
  size_t unshared_working_memory_bytes() const override;      // memory.cc
  void read_output(int node, float* dst) override;            // plan_state.cc
  void read_input_grad(float* dst) override;                  // plan_state.cc

  // ---- the DevicePlan interface ----
  void upload_state() override;                               // plan_state.cc
  void download_state() override;                             // plan_state.cc
  void download_parameters() override;                        // plan_state.cc
  void synchronize(LossResult* loss) override;
  void* device_gradients() override { return d_grads_.data(); }
  void* device_stream() override { return stream_; }
  int64_t gradient_offset(int param_index) const override;    // plan_state.cc
  int64_t gradient_elements() const override;                 // plan_state.cc
  std::string layer_kernels(int node) const override;       // plan_report.cc
  bool device_phase_times(StepPhases* phases) const override;
  int64_t peak_device_memory_bytes() const override;         // memory.cc
  void set_wait_hook(std::function<void(double)> hook) override { wait_hook_ = std::move(hook); }
  void set_capture_hooks(std::function<void()> join, std::function<void()> replayed) override {
    join_hook_ = std::move(join);
    replayed_hook_ = std::move(replayed);
  }
  void drop_graphs() override;  // cuda_plan.cc
  void sgd_step_if_finite(const SgdConfig& config, float learning_rate) override;  // sgd.cc
  bool last_update_applied() const override;                  // sgd.cc

 private:
  // ---- running (cuda_plan.cc) ----
  void run(const std::vector<Step>& steps, double LayerTime::*phase, int which);
  void mark(int i);
  void wait();

  // ---- layouts (plan_state.cc) ----
  template <bool to_device>
  void permute(const float* from, float* to) const;
  void to_device_layout(const float* plain, float* device) const;
  void to_plain_layout(const float* device, float* plain) const;
  static std::vector<float> to_nhwc(const Node& node, const float* nchw);
  static void from_nhwc(const Node& node, const float* nhwc, float* nchw);
  DeviceBuffer& staging_for(size_t floats);
  void download_as_f32(const void* src, DType type, std::vector<float>& dst);
  std::vector<float> download_stored(int node, const void* src, DType type);

  DType out_type(int node) const { return tensors_.out_type(graph_, node, type_); }
  const float* logits_f32();  // linear_loss.cc

  // ---- compile (cuda_plan.cc) ----
  size_t esize() const { return dtype_size(type_); }
  void* weights(int node, int index);  // in the compute type
  int64_t param_at(int node, int index) const { return param_offset_[layout_.params_of_node[node][index]]; }
  float* master(int node, int index) { return d_params_.as<float>() + param_at(node, index); }
  float* grad(int node, int index) { return d_grads_.as<float>() + param_at(node, index); }
  void* grad_half(int node, int index) { return d_grads_half_.as<uint16_t>() + param_at(node, index); }
  float* buffer(int node, int index) {
    return d_buffers_.as<float>() + buffer_offset_[layout_.buffers_of_node[node][index]];
  }
  void ready(const Node& node);
  std::unique_ptr<TensorDesc> nhwc_desc(const Shape& s, DType type) const;

  void compile();
  void prepare_update_chunks();  // sgd.cc: the chunk table the updates launch over
  void update_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count, const int* skip_if);
  void check_tensors_fit();  // memory.cc: the arena in the free memory, every tensor in cuDNN's descriptors
  int64_t largest_batch_for_descriptors() const;
  void place_tensors();  // memory.cc: out_ and diff_ in the arena tensors_ planned
  void sample_device_memory();     // memory.cc
  std::string out_of_memory(const OutOfMemory& e) const;
  void* allocate(size_t bytes);
  bool accumulates(const Node& node, size_t k) const;
  bool wants_grad(int t) const { return t != 0 || input_grad_; }
  void push_forward(int node, Launch training, Launch inference = {});
  void push_backward(int node, Launch launch, bool weight_grad = false);

  // ---- convolution (conv.cc) ----
  void set_search_limit();
  DeviceBuffer& search_workspace();
  ConvAlgos choose_algorithms(const Node& node);
  void search_convolutions();
  void* search_tensor(int which, size_t bytes);
  cudnnMathType_t search_math() const;
  std::unique_ptr<FilterDesc> filter_desc(const Node& node) const;
  template <typename Perf>
  const Perf& retime(const Node& node, const Perf* results, int count, const char* what,
                     const std::function<cudnnStatus_t(const Perf&, cudnnConvolutionDescriptor_t)>& launch);
  std::string fmt_key(const Shape& s, const Node& node) const;
  template <typename Perf>
  bool usable(const Perf& result) const;
  template <typename Perf>
  const Perf* first_usable(const Perf* results, int count) const;  // null: none
  template <typename Perf>
  const Perf& pick(const Perf* results, int count, const char* what) const;
  void release_search_memory();
  std::unique_ptr<ConvDesc> conv_desc(const Node& node, cudnnMathType_t math) const;
  float median_ms(const std::function<bool()>& launch);
  void* allocate_scratch(size_t bytes);
  void compile_conv(const Node& node);
  void allocate_padded_filters();  // conv.cc: for the convolutions of a padded input, before the search
  int64_t choose_input_padding();  // conv.cc: 4 or 8 channels for a padded input
  float input_conv_ms(const Node& conv, int64_t channels);
  bool reads_padded_input(const Node& node) const {
    return node.inputs[0] == 0 && tensors_.input_channels != graph_.input().out.c;
  }
  Shape stored_shape(int node) const { return tensors_.stored_shape(graph_, node); }  // the input padded
  void* conv_weights(const Node& node);  // in the compute type, as cuDNN reads them (padded or the arena's)

  // ---- the search's choices kept between runs (search_recall.cc) ----
  std::string search_identity() const;
  const std::string* recall(const std::string& key);  // null: not kept, or no PlanOptions::search_choices
  void remember(const std::string& key, const std::string& value);
  std::string conv_choice_key(const std::string& shape_key) const;
  bool recall_algorithms(const Node& node, const std::string& shape_key, cudnnTensorDescriptor_t x,
                         cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t y, ConvAlgos& a);
  void remember_algorithms(const std::string& shape_key, const ConvAlgos& a);
  struct FusedGraph;
  bool recall_graph(const FusedConvSpec& spec, FusedGraph& g);
  void remember_graph(const FusedConvSpec& spec, const FusedGraph& g);
  std::string padding_choice_key() const;
  int64_t recall_padding();  // 0: none kept
  void remember_padding(int64_t channels);

  // ---- conv + ReLU as one cuDNN graph (conv_epilogues.cc) ----
  bool bias_relu_candidate(const Node& node) const;
  FusedConvSpec bias_relu_spec(const Node& node) const;
  FusedConvSpec dgrad_relu_spec(const Node& node) const;
  void choose_bias_relu(const Node& node, ConvAlgos& a, void* x, void* w, void* y,
                        const std::function<bool()>& plain);
  bool dgrad_relu_candidate(const Node& node) const;
  void choose_dgrad_relu(const Node& node, ConvAlgos& a, void* dx, void* w, void* dy, void* relu_out,
                         const std::function<bool()>& plain);
  int masking_conv(int relu);  // the convolution doing a ReLU's backward in its data gradient, or -1
  std::shared_ptr<FusedConv> graph_if_faster(const FusedConvSpec& spec, const FusedConv::Pointers& p,
                                             const std::function<bool()>& plain, float* graph_ms, float* plain_ms);

  // ---- conv -> batch norm -> ReLU -> conv folded (conv_bn.cc) ----
  FusedConvSpec fused_spec(const Node& conv, FusedConvSpec::Direction direction, bool prologue, bool stats) const;
  std::shared_ptr<FusedConv> fused_conv(const FusedConvSpec& spec);
  float time_graph(const std::shared_ptr<FusedConv>& conv, const FusedConv::Pointers& p);
  std::shared_ptr<FusedConv> timed_fused_conv(const FusedConvSpec& spec, const FusedConv::Pointers& p);
  void time_folded_graphs(const Node& node);
  std::string engine_text(const FusedConv& conv) const;  // plan_report.cc: "engine 12 (timed: ...)"
  std::shared_ptr<FusedConv> forward_graph(const Node& conv, bool prologue, bool stats, std::string* why = nullptr);
  bool conv_bn_supported(const ConvBnRelu& chain, bool has_prologue);
  void compile_folded_conv_forward(const Node& node);
  void run_folded_filter_gradient(const Node& node, void* dw, cudnnTensorDescriptor_t xd);
  void compile_folded_batch_norm(const Node& node);
  void* folded_scale(int bn);
  void* folded_bias(int bn);

  // ---- the other op families ----
  void compile_batch_norm(const Node& node);  // batch_norm.cc
  void compile_bn_add_relu(const Node& bn, const Node& add);  // batch_norm.cc, from compile_add()
  void compile_relu(const Node& node);        // elementwise_ops.cc
  void compile_pool(const Node& node);        // pool.cc
  bool tiled_max_pool(const Node& node) const;    // pool.cc
  bool indexed_max_pool(const Node& node) const;  // pool.cc: overlapping windows, our kernels
  int masking_pool(int relu) const;             // pool.cc: the max pool doing a ReLU's backward, or -1
  void compile_linear(const Node& node);      // linear_loss.cc
  void compile_add(const Node& node);         // elementwise_ops.cc
  void compile_shortcut(const Node& node);
  void compile_concat(const Node& node);    // elementwise_ops.cc
  void compile_dropout(const Node& node);   // elementwise_ops.cc
  void compile_lrn(const Node& node);       // elementwise_ops.cc

  DType type_;
  bool input_grad_, input_nhwc_, fuse_, tf32_, timed_search_, deterministic_, graphs_, share_memory_, pad_input_;
  int padded_channels_;  // PlanOptions::padded_channels
  float padding_ms_[2] = {0, 0};  // choose_input_padding(): the input's convolutions at 4 and 8 channels
  DeviceTensors tensors_;       // fusions, padding and the arena's offsets, decided on the host
  cudaGraphExec_t graph_exec_[3] = {};  // training forward, inference forward, backward
  int device_ = 0;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  ActivationDesc activation_;

  std::vector<std::vector<int>> consumers_;
  std::vector<NodeState> nodes_;
  std::vector<void*> out_, diff_;
  std::vector<DeviceBuffer> storage_;
  DeviceBuffer d_params_, d_grads_, d_momentum_, d_buffers_, d_params_half_, d_grads_half_;
  DeviceBuffer d_images_, d_labels_, d_totals_, d_flag_, d_logits_, staging_, scratch_;
  DeviceBuffer workspace_, search_workspace_, search_tensors_[4];
  DeviceBuffer d_tensors_;  // every activation and its gradient (memory.cc)
  size_t tensor_bytes_ = 0, unshared_tensor_bytes_ = 0, pool_index_bytes_ = 0;
  int64_t peak_device_bytes_ = 0;
  size_t workspace_bytes_ = 0, search_limit_ = 0;
  std::map<std::string, ConvAlgos> algo_cache_;
  double search_sec_ = 0;  // search_convolutions()'s wall time
  struct FusedGraph {
    std::shared_ptr<FusedConv> conv;  // null: refused
    std::string refusal;              // then cuDNN's reason
    std::vector<std::shared_ptr<FusedConv>> candidates;  // its engines' plans until timed, conv among them
    float ms = 0;                     // timed_fused_conv(): conv's median, ms (0: not timed)
    size_t engines_timed = 0;         // how many engines that timing chose from (0: kept from an earlier search)
  };
  std::map<std::string, FusedGraph> fused_convs_;  // by FusedConvSpec::key()
  double engine_budget_sec_ = 20;  // fused_conv(): finalizing engines beyond each graph's first
  SearchChoices* choices_ = nullptr;  // PlanOptions::search_choices
  std::string identity_;              // search_identity() where choices_ and a timed search, else empty
  int choices_read_ = 0, choices_added_ = 0;
  std::map<int, std::string> unfolded_;  // batch norm of a chain cuDNN refused -> why
  // the device arenas: tensor k of layout_.params at param_offset_[k] (aligned; gaps are zero)
  std::vector<int64_t> param_offset_, buffer_offset_;
  int64_t device_params_ = 0, device_buffers_ = 0;
  void* pinned_ = nullptr;
  float* pinned_totals_ = nullptr;
  int* pinned_flag_ = nullptr;
  int32_t* pinned_labels_ = nullptr;
  DeviceBuffer d_dropout_step_;
  std::vector<TensorChunk> update_chunks_;  // every parameter tensor's chunks, in device arena order
  DeviceBuffer d_update_chunks_, d_batch_norm_, d_lars_first_chunk_, d_lars_adapt_, d_lars_partials_;
  bool loss_pending_ = false;
  bool guarded_pending_ = false, last_update_applied_ = true;
  cudaEvent_t marks_[4] = {};
  int marked_ = 0;
  bool phases_valid_ = false;
  StepPhases phases_;
  std::vector<Step> forward_training_, forward_inference_, backward_;
  std::function<void(double)> wait_hook_;  // set_wait_hook(): called while wait() polls
  std::function<void()> join_hook_, replayed_hook_;  // set_capture_hooks()
  bool ran_plainly_[3] = {};  // each list runs once without capture first (run() says why)
  bool graph_marked_backward_ = false;  // this step's backward graph recorded marks_[2] before the allreduces' join
};

}  // namespace cnnbench::cuda
