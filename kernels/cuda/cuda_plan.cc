// The cuda backend. compile() walks the graph once: it allocates every activation, gradient,
// workspace and statistics buffer on the device, picks each convolution's algorithms (cuDNN's
// timed search, or its heuristics), and records three lists of launches (training forward,
// inference forward, backward). A step replays a list on one stream: no allocation, and no
// host synchronisation until synchronize() ends the step.
//
// Layouts and types: activations are NHWC in the compute type (fp32, or fp16/bf16 on tensor
// cores); the logits of a final linear layer are fp32. Parameters, gradients, momentum and
// running statistics stay fp32 on the device ("master weights") in the plan's ParamLayout
// order, with conv weights as O x H x W x I and the weights of a linear layer that reads a
// spatial tensor with their columns in H x W x C order: the host arenas keep the plain layout,
// and upload_state()/download_state() convert. With a 16-bit compute type the weights are cast
// once per step; weight gradients come back in the compute type and are cast to fp32 as each
// layer finishes.
//
// Fusions (PlanOptions::fuse): a ReLU whose input feeds nothing else runs in place; after
// batch norm it is cuDNN's BN+activation (fp16), after an add it is part of the add kernel,
// after a convolution with bias it is part of the bias kernel.
#include "kernels/cuda/cuda_plan.h"

#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench {
namespace {

using cuda::DeviceBuffer;

void check_cublas(cublasStatus_t s, const char* what, const char* where) {
  if (s != CUBLAS_STATUS_SUCCESS) cuda::fail(what, where, cublasGetStatusString(s));
}
#define CUBLAS_CHECK(call) check_cublas((call), #call, __FILE__ ":" CNNBENCH_STR(__LINE__))

cudnnDataType_t cudnn_type(DType t) {
  switch (t) {
    case DType::f32: return CUDNN_DATA_FLOAT;
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
  }
  return CUDNN_DATA_FLOAT;
}

cudaDataType_t blas_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

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

struct ConvAlgos {
  cudnnConvolutionFwdAlgo_t forward{};
  cudnnConvolutionBwdDataAlgo_t backward_data{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter{};
  size_t workspace = 0;
};

// Everything one node's launches need besides the tensors in out_ and diff_.
struct NodeState {
  std::unique_ptr<TensorDesc> out;  // NHWC, compute type
  std::unique_ptr<FilterDesc> filter;
  std::unique_ptr<ConvDesc> conv;
  std::unique_ptr<PoolDesc> pool;
  std::unique_ptr<TensorDesc> stats;  // batch norm: per-channel fp32
  ConvAlgos algos;
  DeviceBuffer saved_mean, saved_inv_var, reserve;
  size_t reserve_bytes = 0;
  cudnnBatchNormOps_t bn_ops = CUDNN_BATCHNORM_OPS_BN;
};

std::string where(const Node& node) { return "node '" + node.name + "' (" + op_name(node.kind) + ")"; }

class CudaPlan final : public Plan {
  using Launch = std::function<void()>;
  struct Step {
    Launch run;
    int node;
    bool weight_grad = false;  // computes weight/bias gradients (layer timing's split of backward)
  };

 public:
  CudaPlan(const Graph& graph, const PlanOptions& options)
      : Plan(graph),
        type_(options.compute),
        input_grad_(options.input_grad),
        input_nhwc_(options.input_nhwc),
        fuse_(options.fuse),
        tf32_(options.allow_tf32),
        timed_search_(options.timed_algorithm_search),
        graphs_(options.cuda_graphs) {
    if (cuda::visible_devices() == 0)
      throw std::invalid_argument("backend 'cuda': no GPU is visible (" + cuda::build_info().no_device_reason + ")");
    CUDA_CHECK(cudaGetDevice(&device_));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudnnCreate(&cudnn_));
    CUDA_CHECK(cudnnSetStream(cudnn_, stream_));
    CUBLAS_CHECK(cublasCreate(&cublas_));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    for (cudaEvent_t& e : marks_) CUDA_CHECK(cudaEventCreate(&e));
    CUBLAS_CHECK(cublasSetMathMode(cublas_, type_ == DType::f32 && !tf32_ ? CUBLAS_PEDANTIC_MATH
                                                                          : CUBLAS_DEFAULT_MATH));
    compile();
  }

  ~CudaPlan() override {
    if (stream_) cudaStreamSynchronize(stream_);
    nodes_.clear();
    if (cublas_) cublasDestroy(cublas_);
    if (cudnn_) cudnnDestroy(cudnn_);
    if (stream_) cudaStreamDestroy(stream_);
    if (pinned_) cudaFreeHost(pinned_);
    for (cudaGraphExec_t g : graph_exec_)
      if (g) cudaGraphExecDestroy(g);
    for (cudaEvent_t e : marks_)
      if (e) cudaEventDestroy(e);
  }

  // ---- the Plan interface ----
  bool input_on_device() const override { return true; }
  void* device_gradients() override { return d_grads_.data(); }
  void* device_stream() override { return stream_; }
  std::string device_name() const override { return device_name_; }

  void set_input(const float* images) override {
    const Shape& in = graph_.input().out;
    CUDA_CHECK(cudaMemcpyAsync(d_images_.data(), images, in.elements() * sizeof(float), cudaMemcpyHostToDevice,
                               stream_));
    cuda::images_to_nhwc(d_images_.as<float>(), out_[0], in.n, in.c, in.h, in.w, in.c, input_nhwc_, type_, stream_);
  }

  void forward(Mode mode) override {
    mark(0);
    if (type_ != DType::f32)  // this step's weights in the compute type
      cuda::convert(d_params_.data(), DType::f32, d_params_half_.data(), type_, device_params_, 1.0f, stream_);
    const int which = mode == Mode::training ? 0 : 1;
    run(mode == Mode::training ? forward_training_ : forward_inference_, &LayerTime::forward_sec, which);
  }

  LossResult loss(const int32_t* labels) override {
    const Node& logits = graph_.logits();
    if (logits.out.h != 1 || logits.out.w != 1)
      throw std::invalid_argument("loss needs logits of shape n x classes, not " + logits.out.str());
    const int64_t n = logits.out.n, classes = logits.out.c;
    std::memcpy(pinned_labels_, labels, n * sizeof(int32_t));
    CUDA_CHECK(cudaMemcpyAsync(d_labels_.data(), pinned_labels_, n * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
    CUDA_CHECK(cudaMemsetAsync(d_totals_.data(), 0, 4 * sizeof(float), stream_));
    const float* z = logits_f32();
    cuda::softmax_cross_entropy_totals(z, d_labels_.as<int32_t>(), diff_[logits.id], d_totals_.as<float>(), n,
                                       classes, loss_gradient_scale_ * loss_scale_, type_, stream_);
    CUDA_CHECK(cudaMemcpyAsync(pinned_totals_, d_totals_.data(), 4 * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    loss_pending_ = true;
    mark(1);
    LossResult result;
    result.deferred = true;
    return result;
  }

  void synchronize(LossResult* loss) override {
    mark(3);
    wait();
    if (guarded_pending_) {
      last_update_applied_ = *pinned_flag_ == 0;
      guarded_pending_ = false;
    }
    phases_valid_ = marked_ == 0xf;
    if (phases_valid_) {
      float ms[3] = {};
      for (int i = 0; i < 3; ++i) CUDA_CHECK(cudaEventElapsedTime(&ms[i], marks_[i], marks_[i + 1]));
      phases_ = {ms[0] / 1e3, ms[1] / 1e3, ms[2] / 1e3};
    }
    marked_ = 0;
    if (!loss_pending_) return;
    loss_pending_ = false;
    if (pinned_totals_[3] != 0.0f)
      throw std::out_of_range("a label is outside [0, " + std::to_string(graph_.num_classes()) + ")");
    if (loss && loss->deferred) {
      loss->loss = pinned_totals_[0] / static_cast<double>(graph_.batch_size());
      loss->top1_correct = static_cast<int64_t>(pinned_totals_[1]);
      loss->top5_correct = static_cast<int64_t>(pinned_totals_[2]);
      loss->deferred = false;
    }
  }

  void set_output_grad(const float* grad) override {
    const Node& out = graph_.logits();
    std::vector<float> nhwc = to_nhwc(out, grad);
    DeviceBuffer& staging = staging_for(nhwc.size());
    CUDA_CHECK(cudaMemcpyAsync(staging.data(), nhwc.data(), nhwc.size() * 4, cudaMemcpyHostToDevice, stream_));
    cuda::convert(staging.data(), DType::f32, diff_[out.id], type_, out.out.elements(), 1.0f, stream_);
    wait();
  }

  void backward() override {
    run(backward_, &LayerTime::backward_sec, 2);
    mark(2);
  }

  bool device_phase_times(StepPhases* phases) const override {
    if (phases_valid_) *phases = phases_;
    return phases_valid_;
  }

  void sgd_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count) override {
    cuda::sgd_update(d_params_.as<float>() + offset, d_grads_.as<float>() + offset, d_momentum_.as<float>() + offset,
                     static_cast<int64_t>(count), learning_rate, config.momentum, config.weight_decay,
                     config.nesterov, config.gradient_scale, stream_);
  }

  bool checks_finite_on_device() const override { return true; }

  void sgd_step_if_finite(const SgdConfig& config, float learning_rate) override {
    CUDA_CHECK(cudaMemsetAsync(d_flag_.data(), 0, sizeof(int), stream_));
    cuda::flag_non_finite(d_grads_.as<float>(), device_params_, d_flag_.as<int>(), stream_);
    cuda::sgd_update(d_params_.as<float>(), d_grads_.as<float>(), d_momentum_.as<float>(), device_params_,
                     learning_rate, config.momentum, config.weight_decay, config.nesterov, config.gradient_scale,
                     stream_, d_flag_.as<int>());
    CUDA_CHECK(cudaMemcpyAsync(pinned_flag_, d_flag_.data(), sizeof(int), cudaMemcpyDeviceToHost, stream_));
    guarded_pending_ = true;
  }

  bool last_update_applied() const override { return last_update_applied_; }

  bool gradients_finite() override {
    CUDA_CHECK(cudaMemsetAsync(d_flag_.data(), 0, sizeof(int), stream_));
    cuda::flag_non_finite(d_grads_.as<float>(), device_params_, d_flag_.as<int>(), stream_);
    CUDA_CHECK(cudaMemcpyAsync(pinned_flag_, d_flag_.data(), sizeof(int), cudaMemcpyDeviceToHost, stream_));
    wait();
    return *pinned_flag_ == 0;
  }

  void upload_state() override {
    wait();
    std::vector<float> staged(device_params_);
    to_device_layout(params_.data(), staged.data());
    d_params_.upload(staged.data(), staged.size() * 4);
    to_device_layout(momentum_.data(), staged.data());
    d_momentum_.upload(staged.data(), staged.size() * 4);
    std::vector<float> buffers(device_buffers_);
    for (size_t i = 0; i < layout_.buffers.size(); ++i)
      std::copy_n(buffers_.data() + layout_.buffers[i].offset, layout_.buffers[i].elements,
                  buffers.data() + buffer_offset_[i]);
    d_buffers_.upload(buffers.data(), buffers.size() * 4);
  }

  int64_t exchange_offset(int param_index) const override { return param_offset_[param_index]; }
  int64_t exchange_elements() const override { return device_params_; }

  void download_state() override {
    wait();
    std::vector<float> staged(device_params_);
    d_params_.download(staged.data(), staged.size() * 4);
    to_plain_layout(staged.data(), params_.data());
    d_grads_.download(staged.data(), staged.size() * 4);
    to_plain_layout(staged.data(), grads_.data());
    d_momentum_.download(staged.data(), staged.size() * 4);
    to_plain_layout(staged.data(), momentum_.data());
    std::vector<float> buffers(device_buffers_);
    d_buffers_.download(buffers.data(), buffers.size() * 4);
    for (size_t i = 0; i < layout_.buffers.size(); ++i)
      std::copy_n(buffers.data() + buffer_offset_[i], layout_.buffers[i].elements,
                  buffers_.data() + layout_.buffers[i].offset);
  }

  void read_output(int node, float* dst) override {
    if (node < 0 || node >= static_cast<int>(graph_.nodes.size()))
      throw std::out_of_range("read_output: no node " + std::to_string(node));
    const Node& n = graph_.nodes[node];
    if (fused_relu_of_[node] >= 0)
      throw std::logic_error("read_output: node '" + n.name +
                             "' shares its buffer with a fused ReLU; build the plan with fuse = false");
    std::vector<float> nhwc(n.out.elements());
    download_as_f32(out_[node], out_type(node), nhwc);
    from_nhwc(n, nhwc.data(), dst);
  }

  void read_input_grad(float* dst) override {
    if (!input_grad_) throw std::logic_error("plan was built without input_grad");
    const Node& in = graph_.input();
    std::vector<float> nhwc(in.out.elements());
    download_as_f32(diff_[0], type_, nhwc);
    if (input_nhwc_)
      std::copy(nhwc.begin(), nhwc.end(), dst);
    else
      from_nhwc(in, nhwc.data(), dst);
  }

 private:
  // ---- running ----
  // With graphs on (and no per-layer timing or gradient hook, whose host work a replay would
  // skip), the first call captures the list and later calls launch the captured graph.
  void run(const std::vector<Step>& steps, double LayerTime::*phase, int which) {
    if (graphs_ && !layer_timing_ && !hook_) {
      if (!graph_exec_[which]) {
        cudaGraph_t graph = nullptr;
        CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
        try {
          for (const Step& step : steps) step.run();
        } catch (...) {
          cudaStreamEndCapture(stream_, &graph);
          if (graph) cudaGraphDestroy(graph);
          throw;
        }
        CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
        CUDA_CHECK(cudaGraphInstantiate(&graph_exec_[which], graph, 0));
        CUDA_CHECK(cudaGraphDestroy(graph));
      }
      CUDA_CHECK(cudaGraphLaunch(graph_exec_[which], stream_));
      return;
    }
    for (const Step& step : steps) {
      if (!layer_timing_) {
        step.run();
        continue;
      }
      // per-layer times: each launch is waited for, so the sums add up to a slower step
      wait();
      const auto start = std::chrono::steady_clock::now();
      step.run();
      wait();
      const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      layer_times_[step.node].*phase += sec;
      if (step.weight_grad) layer_times_[step.node].weight_grad_sec += sec;
    }
  }

  // Events at the phase boundaries of a step: forward, loss done, backward done, step end.
  void mark(int i) {
    CUDA_CHECK(cudaEventRecord(marks_[i], stream_));
    marked_ |= 1 << i;
  }

  // Polls instead of blocking in the driver, so that a wait hook (a stuck collective's
  // watchdog) runs while the GPU works.
  void wait() {
    if (!wait_hook_) {
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    auto last_hook = start;
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return;
      if (e != cudaErrorNotReady) CUDA_CHECK(e);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      if (std::chrono::steady_clock::now() - last_hook > std::chrono::milliseconds(100)) {
        last_hook = std::chrono::steady_clock::now();
        wait_hook_(std::chrono::duration<double>(last_hook - start).count());
      }
    }
  }

  // ---- layouts ----
  // Conv weights O x I x H x W <-> O x H x W x I; a linear layer reading C x H x W features
  // (H*W > 1) has its columns permuted alike. Everything else keeps its layout.
  template <bool to_device>
  void permute(const float* from, float* to) const {
    for (size_t k = 0; k < layout_.params.size(); ++k) {
      const ArenaEntry& e = layout_.params[k];
      const Node& node = graph_.nodes[e.node];
      const float* src = from + (to_device ? e.offset : param_offset_[k]);
      float* dst = to + (to_device ? param_offset_[k] : e.offset);
      std::copy_n(src, e.elements, dst);
      if (e.index != 0) continue;
      int64_t o = 0, c = 0, hw = 0;
      if (node.kind == OpKind::conv) {
        o = node.conv.out_channels;
        c = graph_.nodes[node.inputs[0]].out.c;
        hw = node.conv.kernel * node.conv.kernel;
      } else if (node.kind == OpKind::linear) {
        const Shape& in = graph_.nodes[node.inputs[0]].out;
        o = node.linear.out_features;
        c = in.c;
        hw = in.h * in.w;
      }
      if (hw <= 1) continue;
      for (int64_t oo = 0; oo < o; ++oo)
        for (int64_t cc = 0; cc < c; ++cc)
          for (int64_t p = 0; p < hw; ++p) {
            const int64_t plain = (oo * c + cc) * hw + p, device = (oo * hw + p) * c + cc;
            if (to_device)
              dst[device] = src[plain];
            else
              dst[plain] = src[device];
          }
    }
  }
  void to_device_layout(const float* plain, float* device) const { permute<true>(plain, device); }
  void to_plain_layout(const float* device, float* plain) const { permute<false>(device, plain); }

  static std::vector<float> to_nhwc(const Node& node, const float* nchw) {
    const Shape& s = node.out;
    std::vector<float> out(s.elements());
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t p = 0; p < s.h * s.w; ++p) out[(n * s.h * s.w + p) * s.c + c] = nchw[(n * s.c + c) * s.h * s.w + p];
    return out;
  }

  static void from_nhwc(const Node& node, const float* nhwc, float* nchw) {
    const Shape& s = node.out;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t p = 0; p < s.h * s.w; ++p) nchw[(n * s.c + c) * s.h * s.w + p] = nhwc[(n * s.h * s.w + p) * s.c + c];
  }

  DeviceBuffer& staging_for(size_t floats) {
    if (staging_.bytes() < floats * 4) staging_ = DeviceBuffer(floats * 4);
    return staging_;
  }

  void download_as_f32(const void* src, DType type, std::vector<float>& dst) {
    wait();
    const void* from = src;
    if (type != DType::f32) {
      DeviceBuffer& staging = staging_for(dst.size());
      cuda::convert(src, type, staging.data(), DType::f32, static_cast<int64_t>(dst.size()), 1.0f, stream_);
      wait();
      from = staging.data();
    }
    CUDA_CHECK(cudaMemcpy(dst.data(), from, dst.size() * 4, cudaMemcpyDeviceToHost));
  }

  DType out_type(int node) const { return logits_are_f32_ && node == graph_.output ? DType::f32 : type_; }

  const float* logits_f32() {
    const int id = graph_.output;
    if (out_type(id) == DType::f32) return static_cast<const float*>(out_[id]);
    cuda::convert(out_[id], type_, d_logits_.data(), DType::f32, graph_.logits().out.elements(), 1.0f, stream_);
    return d_logits_.as<float>();
  }

  // ---- compile ----
  size_t esize() const { return dtype_size(type_); }
  void* weights(int node, int index) {  // in the compute type
    const int64_t offset = param_offset_[layout_.params_of_node[node][index]];
    if (type_ == DType::f32) return d_params_.as<float>() + offset;
    return d_params_half_.as<uint16_t>() + offset;
  }
  int64_t param_at(int node, int index) const { return param_offset_[layout_.params_of_node[node][index]]; }
  float* master(int node, int index) { return d_params_.as<float>() + param_at(node, index); }
  float* grad(int node, int index) { return d_grads_.as<float>() + param_at(node, index); }
  void* grad_half(int node, int index) { return d_grads_half_.as<uint16_t>() + param_at(node, index); }
  float* buffer(int node, int index) {
    return d_buffers_.as<float>() + buffer_offset_[layout_.buffers_of_node[node][index]];
  }

  void ready(const Node& node) {
    for (int index : layout_.params_of_node[node.id]) gradient_ready(index);
  }

  std::unique_ptr<TensorDesc> nhwc_desc(const Shape& s, DType type) const {
    auto d = std::make_unique<TensorDesc>();
    CUDA_CHECK(cudnnSetTensor4dDescriptor(d->d, CUDNN_TENSOR_NHWC, cudnn_type(type), static_cast<int>(s.n),
                                          static_cast<int>(s.c), static_cast<int>(s.h), static_cast<int>(s.w)));
    return d;
  }

  void compile() {
    const size_t count = graph_.nodes.size();
    consumers_ = graph_.consumers();
    nodes_.resize(count);
    out_.assign(count, nullptr);
    diff_.assign(count, nullptr);
    alias_of_.resize(count);
    fused_relu_of_.assign(count, -1);
    for (size_t i = 0; i < count; ++i) alias_of_[i] = static_cast<int>(i);
    const Node& last = graph_.logits();
    logits_are_f32_ = last.kind == OpKind::linear;

    // arenas
    // every tensor starts on a 256-byte boundary: cuDNN reads scales and statistics in vectors
    constexpr int64_t align = 64;
    for (const ArenaEntry& e : layout_.params) {
      param_offset_.push_back(device_params_);
      device_params_ += (e.elements + align - 1) / align * align;
    }
    for (const ArenaEntry& e : layout_.buffers) {
      buffer_offset_.push_back(device_buffers_);
      device_buffers_ += (e.elements + align - 1) / align * align;
    }
    d_params_ = DeviceBuffer(std::max<int64_t>(1, device_params_) * 4);
    d_grads_ = DeviceBuffer(std::max<int64_t>(1, device_params_) * 4);
    d_momentum_ = DeviceBuffer(std::max<int64_t>(1, device_params_) * 4);
    d_buffers_ = DeviceBuffer(std::max<int64_t>(1, device_buffers_) * 4);
    CUDA_CHECK(cudaMemset(d_params_.data(), 0, d_params_.bytes()));
    CUDA_CHECK(cudaMemset(d_buffers_.data(), 0, d_buffers_.bytes()));
    CUDA_CHECK(cudaMemset(d_grads_.data(), 0, d_grads_.bytes()));
    CUDA_CHECK(cudaMemset(d_momentum_.data(), 0, d_momentum_.bytes()));
    if (type_ != DType::f32) {
      d_params_half_ = DeviceBuffer(std::max<int64_t>(1, device_params_) * 2);
      d_grads_half_ = DeviceBuffer(std::max<int64_t>(1, device_params_) * 2);
    }
    const Shape& in = graph_.input().out;
    d_images_ = DeviceBuffer(in.elements() * 4);
    d_labels_ = DeviceBuffer(in.n * sizeof(int32_t));
    d_totals_ = DeviceBuffer(4 * sizeof(float));
    d_flag_ = DeviceBuffer(sizeof(int));
    d_logits_ = DeviceBuffer(last.out.elements() * 4);
    CUDA_CHECK(cudaMallocHost(&pinned_, 4096 + in.n * sizeof(int32_t)));
    pinned_totals_ = static_cast<float*>(pinned_);
    pinned_flag_ = reinterpret_cast<int*>(static_cast<char*>(pinned_) + 64);
    pinned_labels_ = reinterpret_cast<int32_t*>(static_cast<char*>(pinned_) + 4096);

    // ReLUs that run in place on their input's buffer (and gradient)
    for (const Node& node : graph_.nodes) {
      if (node.kind != OpKind::relu || !fuse_) continue;
      const int p = node.inputs[0];
      if (p == 0 || consumers_[p].size() != 1 || p == graph_.output) continue;
      alias_of_[node.id] = alias_of_[p];
      fused_relu_of_[p] = node.id;
    }
    // buffers: one per tensor that is not an alias
    for (const Node& node : graph_.nodes) {
      const size_t bytes = node.out.elements() * dtype_size(out_type(node.id));
      if (alias_of_[node.id] != node.id) {
        out_[node.id] = out_[alias_of_[node.id]];
        diff_[node.id] = diff_[alias_of_[node.id]];
        continue;
      }
      out_[node.id] = allocate(bytes);
      const bool needs_grad = node.id != 0 || input_grad_;
      if (needs_grad) diff_[node.id] = allocate(node.out.elements() * esize());
    }
    for (const Node& node : graph_.nodes) {
      NodeState& s = nodes_[node.id];
      s.out = nhwc_desc(node.out, type_);
      try {
        switch (node.kind) {
          case OpKind::input: break;
          case OpKind::conv: compile_conv(node); break;
          case OpKind::batch_norm: compile_batch_norm(node); break;
          case OpKind::relu: compile_relu(node); break;
          case OpKind::max_pool:
          case OpKind::avg_pool:
          case OpKind::global_avg_pool: compile_pool(node); break;
          case OpKind::linear: compile_linear(node); break;
          case OpKind::add: compile_add(node); break;
          case OpKind::shortcut: compile_shortcut(node); break;
        }
      } catch (const std::exception& e) {
        throw std::invalid_argument("backend 'cuda': " + where(node) + ": " + e.what());
      }
    }
    std::reverse(backward_.begin(), backward_.end());
    workspace_ = DeviceBuffer(std::max<size_t>(workspace_bytes_, 256));
    search_workspace_ = DeviceBuffer();
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    device_name_ = "/gpu:" + std::to_string(device_) + " (" + prop.name + ")";
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  void* allocate(size_t bytes) {
    storage_.emplace_back(std::max<size_t>(bytes, 16));
    return storage_.back().data();
  }

  // Gradient of input `k` of `node`: the first consumer in backward order (the last in the
  // graph) writes it, the others add to it.
  bool accumulates(const Node& node, size_t k) const {
    const int t = node.inputs[k];
    for (size_t j = 0; j < k; ++j)
      if (node.inputs[j] == t) return true;
    return node.id != *std::max_element(consumers_[t].begin(), consumers_[t].end());
  }
  bool wants_grad(int t) const { return t != 0 || input_grad_; }

  void push_forward(int node, Launch training, Launch inference = {}) {
    forward_inference_.push_back({inference ? inference : training, node});
    forward_training_.push_back({std::move(training), node});
  }
  void push_backward(int node, Launch launch, bool weight_grad = false) {
    backward_.push_back({std::move(launch), node, weight_grad});
  }

  // The timed search needs a workspace; it is freed after compile.
  DeviceBuffer& search_workspace() {
    if (!search_workspace_.data()) {
      size_t free = 0, total = 0;
      CUDA_CHECK(cudaMemGetInfo(&free, &total));
      search_limit_ = std::min<size_t>(size_t{4} << 30, free / 4);
      search_workspace_ = DeviceBuffer(search_limit_);
    }
    return search_workspace_;
  }

  ConvAlgos choose_algorithms(const Node& node, const TensorDesc& x, const TensorDesc& y, bool need_data) {
    const Shape& s = graph_.nodes[node.inputs[0]].out;
    const std::string key = fmt_key(s, node);
    if (auto it = algo_cache_.find(key); it != algo_cache_.end()) return it->second;
    NodeState& st = nodes_[node.id];
    ConvAlgos a;
    DeviceBuffer& ws = search_workspace();
    void* xp = out_[node.inputs[0]];
    void* yp = out_[node.id];
    void* wp = weights(node.id, 0);
    void* dyp = diff_[node.id];
    void* dxp = need_data ? diff_[node.inputs[0]] : allocate_scratch(s.elements() * esize());
    void* dwp = type_ == DType::f32 ? static_cast<void*>(grad(node.id, 0)) : grad_half(node.id, 0);
    constexpr int want = 8;
    int got = 0;
    if (timed_search_) {
      cudnnConvolutionFwdAlgoPerf_t f[want];
      CUDA_CHECK(cudnnFindConvolutionForwardAlgorithmEx(cudnn_, x.d, xp, st.filter->d, wp, st.conv->d, y.d, yp, want,
                                                        &got, f, ws.data(), search_limit_));
      a.forward = pick(f, got, "forward");
      a.workspace = std::max(a.workspace, chosen_memory(f, got, a.forward));
      cudnnConvolutionBwdFilterAlgoPerf_t bf[want];
      CUDA_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(cudnn_, x.d, xp, y.d, dyp, st.conv->d, st.filter->d,
                                                               dwp, want, &got, bf, ws.data(), search_limit_));
      a.backward_filter = pick(bf, got, "backward filter");
      a.workspace = std::max(a.workspace, chosen_memory(bf, got, a.backward_filter));
      cudnnConvolutionBwdDataAlgoPerf_t bd[want];
      CUDA_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(cudnn_, st.filter->d, wp, y.d, dyp, st.conv->d, x.d, dxp,
                                                             want, &got, bd, ws.data(), search_limit_));
      a.backward_data = pick(bd, got, "backward data");
      a.workspace = std::max(a.workspace, chosen_memory(bd, got, a.backward_data));
    } else {
      search_workspace();  // sets the limit
      cudnnConvolutionFwdAlgoPerf_t f[want];
      CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, x.d, st.filter->d, st.conv->d, y.d, want, &got, f));
      a.forward = pick(f, got, "forward");
      cudnnConvolutionBwdFilterAlgoPerf_t bf[want];
      CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_, x.d, y.d, st.conv->d, st.filter->d, want, &got,
                                                               bf));
      a.backward_filter = pick(bf, got, "backward filter");
      cudnnConvolutionBwdDataAlgoPerf_t bd[want];
      CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, st.filter->d, y.d, st.conv->d, x.d, want, &got,
                                                             bd));
      a.backward_data = pick(bd, got, "backward data");
      size_t b = 0;
      CUDA_CHECK(cudnnGetConvolutionForwardWorkspaceSize(cudnn_, x.d, st.filter->d, st.conv->d, y.d, a.forward, &b));
      a.workspace = std::max(a.workspace, b);
      CUDA_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn_, x.d, y.d, st.conv->d, st.filter->d,
                                                                a.backward_filter, &b));
      a.workspace = std::max(a.workspace, b);
      CUDA_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn_, st.filter->d, y.d, st.conv->d, x.d,
                                                              a.backward_data, &b));
      a.workspace = std::max(a.workspace, b);
    }
    algo_cache_[key] = a;
    return a;
  }

  std::string fmt_key(const Shape& s, const Node& node) const {
    return std::to_string(s.n) + "x" + std::to_string(s.c) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w) +
           ":" + std::to_string(node.conv.out_channels) + "k" + std::to_string(node.conv.kernel) + "s" +
           std::to_string(node.conv.stride) + "p" + std::to_string(node.conv.pad);
  }

  template <typename Perf>
  auto pick(const Perf* results, int count, const char* what) -> decltype(results[0].algo) {
    for (int i = 0; i < count; ++i)
      if (results[i].status == CUDNN_STATUS_SUCCESS && results[i].memory <= search_limit_) return results[i].algo;
    throw std::runtime_error(std::string("cuDNN offers no ") + what + " convolution algorithm for this shape");
  }
  template <typename Perf, typename Algo>
  static size_t chosen_memory(const Perf* results, int count, Algo algo) {
    for (int i = 0; i < count; ++i)
      if (results[i].algo == algo && results[i].status == CUDNN_STATUS_SUCCESS) return results[i].memory;
    return 0;
  }

  void* allocate_scratch(size_t bytes) {
    if (scratch_.bytes() < bytes) scratch_ = DeviceBuffer(bytes);
    return scratch_.data();
  }

  void compile_conv(const Node& node) {
    NodeState& s = nodes_[node.id];
    const Node& src = graph_.nodes[node.inputs[0]];
    const auto x = nhwc_desc(src.out, type_);
    s.filter = std::make_unique<FilterDesc>();
    CUDA_CHECK(cudnnSetFilter4dDescriptor(s.filter->d, cudnn_type(type_), CUDNN_TENSOR_NHWC,
                                          static_cast<int>(node.conv.out_channels), static_cast<int>(src.out.c),
                                          static_cast<int>(node.conv.kernel), static_cast<int>(node.conv.kernel)));
    s.conv = std::make_unique<ConvDesc>();
    const int pad = static_cast<int>(node.conv.pad), stride = static_cast<int>(node.conv.stride);
    CUDA_CHECK(cudnnSetConvolution2dDescriptor(s.conv->d, pad, pad, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                               CUDNN_DATA_FLOAT));
    CUDA_CHECK(cudnnSetConvolutionMathType(
        s.conv->d, type_ != DType::f32 ? CUDNN_TENSOR_OP_MATH : tf32_ ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
    int n, c, h, w;
    CUDA_CHECK(cudnnGetConvolution2dForwardOutputDim(s.conv->d, x->d, s.filter->d, &n, &c, &h, &w));
    if (h != node.out.h || w != node.out.w || c != node.out.c)
      throw std::logic_error("cuDNN's output shape differs from the graph's");
    const bool data_grad = wants_grad(src.id);
    s.algos = choose_algorithms(node, *x, *s.out, data_grad);
    workspace_bytes_ = std::max(workspace_bytes_, s.algos.workspace);
    const int relu = fused_relu_of_[node.id];
    const bool bias = node.conv.bias;
    const int64_t rows = node.out.n * node.out.h * node.out.w, channels = node.out.c;
    auto xd = std::shared_ptr<TensorDesc>(nhwc_desc(src.out, type_));
    push_forward(node.id, [this, &node, &s, xd, bias, relu, rows, channels] {
      const float one = 1.0f, zero = 0.0f;
      CUDA_CHECK(cudnnConvolutionForward(cudnn_, &one, xd->d, out_[node.inputs[0]], s.filter->d, weights(node.id, 0),
                                         s.conv->d, s.algos.forward, workspace_.data(), s.algos.workspace, &zero,
                                         s.out->d, out_[node.id]));
      if (bias) cuda::add_bias(out_[node.id], master(node.id, 1), rows, channels, relu >= 0, type_, stream_);
    });
    const bool acc = accumulates(node, 0);
    push_backward(node.id, [this, &node, &s, xd, bias, rows, channels] {
      const float one = 1.0f, zero = 0.0f;
      const bool half = type_ != DType::f32;
      void* dw = half ? grad_half(node.id, 0) : grad(node.id, 0);
      CUDA_CHECK(cudnnConvolutionBackwardFilter(cudnn_, &one, xd->d, out_[node.inputs[0]], s.out->d, diff_[node.id],
                                                s.conv->d, s.algos.backward_filter, workspace_.data(),
                                                s.algos.workspace, &zero, s.filter->d, dw));
      if (half)
        cuda::convert(dw, type_, grad(node.id, 0), DType::f32, layout_.param(node.id, 0).elements, 1.0f, stream_);
      if (bias) cuda::bias_gradient(diff_[node.id], grad(node.id, 1), rows, channels, type_, stream_);
      ready(node);
    }, true);
    if (data_grad)
      push_backward(node.id, [this, &node, &s, xd, acc] {
        const float one = 1.0f, beta = acc ? 1.0f : 0.0f;
        CUDA_CHECK(cudnnConvolutionBackwardData(cudnn_, &one, s.filter->d, weights(node.id, 0), s.out->d,
                                                diff_[node.id], s.conv->d, s.algos.backward_data, workspace_.data(),
                                                s.algos.workspace, &beta, xd->d, diff_[node.inputs[0]]));
      });
  }

  void compile_batch_norm(const Node& node) {
    NodeState& s = nodes_[node.id];
    const Node& src = graph_.nodes[node.inputs[0]];
    const auto x = nhwc_desc(src.out, type_);
    s.stats = std::make_unique<TensorDesc>();
    const cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
    CUDA_CHECK(cudnnDeriveBNTensorDescriptor(s.stats->d, x->d, mode));
    const int relu = fused_relu_of_[node.id];
    // cuDNN fuses the activation for fp16 NHWC with channels a multiple of 4
    const bool fused = relu >= 0 && type_ == DType::f16 && node.out.c % 4 == 0;
    s.bn_ops = fused ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION : CUDNN_BATCHNORM_OPS_BN;
    cudnnActivationDescriptor_t act = fused ? activation_.d : nullptr;
    size_t fw = 0, bw = 0;
    CUDA_CHECK(cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(cudnn_, mode, s.bn_ops, x->d, nullptr,
                                                                        s.out->d, s.stats->d, act, &fw));
    CUDA_CHECK(cudnnGetBatchNormalizationBackwardExWorkspaceSize(cudnn_, mode, s.bn_ops, x->d, s.out->d, s.out->d,
                                                                 nullptr, x->d, s.stats->d, act, &bw));
    CUDA_CHECK(cudnnGetBatchNormalizationTrainingExReserveSpaceSize(cudnn_, mode, s.bn_ops, act, x->d,
                                                                    &s.reserve_bytes));
    workspace_bytes_ = std::max({workspace_bytes_, fw, bw});
    s.saved_mean = DeviceBuffer(node.out.c * 4);
    s.saved_inv_var = DeviceBuffer(node.out.c * 4);
    if (s.reserve_bytes) s.reserve = DeviceBuffer(s.reserve_bytes);
    const double eps = node.batch_norm.epsilon, momentum = node.batch_norm.momentum;
    auto xd = std::shared_ptr<TensorDesc>(nhwc_desc(src.out, type_));
    const bool relu_after = relu >= 0 && !fused;
    const int64_t count = node.out.elements();
    push_forward(
        node.id,
        [this, &node, &s, xd, mode, act, eps, momentum, relu_after, count] {
          const float one = 1.0f, zero = 0.0f;
          CUDA_CHECK(cudnnBatchNormalizationForwardTrainingEx(
              cudnn_, mode, s.bn_ops, &one, &zero, xd->d, out_[node.inputs[0]], nullptr, nullptr, s.out->d,
              out_[node.id], s.stats->d, master(node.id, 0), master(node.id, 1), momentum, buffer(node.id, 0),
              buffer(node.id, 1), eps, s.saved_mean.data(), s.saved_inv_var.data(), act, workspace_.data(),
              workspace_.bytes(), s.reserve.data(), s.reserve_bytes));
          if (relu_after) cuda::relu_forward(out_[node.id], out_[node.id], count, type_, stream_);
        },
        [this, &node, &s, xd, eps, relu, count] {
          const float one = 1.0f, zero = 0.0f;
          CUDA_CHECK(cudnnBatchNormalizationForwardInference(
              cudnn_, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd->d, out_[node.inputs[0]], s.out->d, out_[node.id],
              s.stats->d, master(node.id, 0), master(node.id, 1), buffer(node.id, 0), buffer(node.id, 1), eps));
          if (relu >= 0) cuda::relu_forward(out_[node.id], out_[node.id], count, type_, stream_);
        });
    const bool data_grad = wants_grad(src.id);
    const bool acc = accumulates(node, 0);
    push_backward(node.id, [this, &node, &s, xd, mode, act, eps, data_grad, acc] {
      const float one = 1.0f, zero = 0.0f, beta = acc ? 1.0f : 0.0f;
      // without an input gradient the data gradient goes to scratch (cuDNN always writes one)
      void* dx = data_grad ? diff_[node.inputs[0]] : scratch_.data();
      CUDA_CHECK(cudnnBatchNormalizationBackwardEx(
          cudnn_, mode, s.bn_ops, &one, &beta, &one, &zero, xd->d, out_[node.inputs[0]], s.out->d, out_[node.id],
          s.out->d, diff_[node.id], nullptr, nullptr, xd->d, dx, s.stats->d, master(node.id, 0), master(node.id, 1),
          grad(node.id, 0), grad(node.id, 1), eps, s.saved_mean.data(), s.saved_inv_var.data(), act, workspace_.data(),
          workspace_.bytes(), s.reserve.data(), s.reserve_bytes));
      ready(node);
    });
    if (!data_grad) allocate_scratch(src.out.elements() * esize());
  }

  // A ReLU alone (its input feeds others too) or in place (fused: nothing to launch forward
  // when batch norm, the add or the conv bias applied it).
  void compile_relu(const Node& node) {
    const int p = node.inputs[0];
    const int64_t count = node.out.elements();
    const bool in_place = alias_of_[node.id] != node.id;
    const Node& producer = graph_.nodes[p];
    const bool applied_by_producer =
        in_place && (producer.kind == OpKind::batch_norm || producer.kind == OpKind::add ||
                     producer.kind == OpKind::linear || (producer.kind == OpKind::conv && producer.conv.bias));
    if (!applied_by_producer)
      push_forward(node.id, [this, p, &node, count] {
        cuda::relu_forward(out_[p], out_[node.id], count, type_, stream_);
      });
    // batch norm (fused or not) and add take the mask themselves; others are masked here
    const bool masked_by_producer =
        in_place && (producer.kind == OpKind::add ||
                     (producer.kind == OpKind::batch_norm && nodes_[p].bn_ops == CUDNN_BATCHNORM_OPS_BN_ACTIVATION));
    if (masked_by_producer || !wants_grad(p)) return;
    const bool acc = !in_place && accumulates(node, 0);
    push_backward(node.id, [this, p, &node, count, acc] {
      cuda::relu_backward(out_[node.id], diff_[node.id], diff_[p], count, acc, type_, stream_);
    });
  }

  void compile_pool(const Node& node) {
    NodeState& s = nodes_[node.id];
    const Node& src = graph_.nodes[node.inputs[0]];
    s.pool = std::make_unique<PoolDesc>();
    // window kh x kw moved by sh x sw; global average pooling is one window over the whole map
    int kh = static_cast<int>(node.pool.kernel), kw = kh, sh = static_cast<int>(node.pool.stride), sw = sh,
        pad = static_cast<int>(node.pool.pad);
    cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
    if (node.kind == OpKind::avg_pool)
      mode = node.pool.count_include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                         : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    if (node.kind == OpKind::global_avg_pool) {
      mode = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
      kh = sh = static_cast<int>(src.out.h);
      kw = sw = static_cast<int>(src.out.w);
      pad = 0;
    }
    CUDA_CHECK(cudnnSetPooling2dDescriptor(s.pool->d, mode, CUDNN_NOT_PROPAGATE_NAN, kh, kw, pad, pad, sh, sw));
    auto xd = std::shared_ptr<TensorDesc>(nhwc_desc(src.out, type_));
    int n, c, h, w;
    CUDA_CHECK(cudnnGetPooling2dForwardOutputDim(s.pool->d, xd->d, &n, &c, &h, &w));
    if (h != node.out.h || w != node.out.w) throw std::logic_error("cuDNN's pooling output shape differs from the graph's");
    push_forward(node.id, [this, &node, &s, xd] {
      const float one = 1.0f, zero = 0.0f;
      CUDA_CHECK(cudnnPoolingForward(cudnn_, s.pool->d, &one, xd->d, out_[node.inputs[0]], &zero, s.out->d,
                                     out_[node.id]));
    });
    if (!wants_grad(src.id)) return;
    const bool acc = accumulates(node, 0);
    // cuDNN's NHWC max-pool backward took 14 ms of VGG16's 94 ms fp16 step (b256, H100): windows
    // that tile the input get a kernel of their own; overlapping ones (ResNet's 3x3/2) stay cuDNN's
    if (node.kind == OpKind::max_pool && node.pool.kernel == node.pool.stride && node.pool.pad == 0 &&
        node.out.h * node.pool.kernel == src.out.h && node.out.w * node.pool.kernel == src.out.w) {
      const Shape i = src.out, o = node.out;
      const int64_t kk = node.pool.kernel;
      push_backward(node.id, [this, &node, i, o, kk, acc] {
        cuda::max_pool_backward_tiled(out_[node.inputs[0]], diff_[node.id], diff_[node.inputs[0]], i.n, i.c, i.h, i.w,
                                      o.h, o.w, kk, acc, type_, stream_);
      });
      return;
    }
    push_backward(node.id, [this, &node, &s, xd, acc] {
      const float one = 1.0f, beta = acc ? 1.0f : 0.0f;
      CUDA_CHECK(cudnnPoolingBackward(cudnn_, s.pool->d, &one, s.out->d, out_[node.id], s.out->d, diff_[node.id],
                                      xd->d, out_[node.inputs[0]], &beta, xd->d, diff_[node.inputs[0]]));
    });
  }

  // y[n x o] = x[n x i] w[o x i]^T (+ bias): cuBLAS is column-major, so it computes y^T.
  void compile_linear(const Node& node) {
    const Node& src = graph_.nodes[node.inputs[0]];
    const int batch = static_cast<int>(node.out.n), o = static_cast<int>(node.linear.out_features),
              i = static_cast<int>(src.out.elements() / src.out.n);
    const DType yt = out_type(node.id);
    const bool bias = node.linear.bias;
    const int relu = fused_relu_of_[node.id];
    const cublasComputeType_t compute =
        type_ == DType::f32 && tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    push_forward(node.id, [this, &node, batch, o, i, yt, bias, relu, compute] {
      const float one = 1.0f, zero = 0.0f;
      CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, o, batch, i, &one, weights(node.id, 0),
                                blas_type(type_), i, out_[node.inputs[0]], blas_type(type_), i, &zero, out_[node.id],
                                blas_type(yt), o, compute, CUBLAS_GEMM_DEFAULT));
      if (bias) cuda::add_bias(out_[node.id], master(node.id, 1), batch, o, false, yt, stream_);
      if (relu >= 0) cuda::relu_forward(out_[node.id], out_[node.id], int64_t{batch} * o, yt, stream_);
    });
    const bool data_grad = wants_grad(src.id);
    const bool acc = accumulates(node, 0);
    push_backward(node.id, [this, &node, batch, o, i, bias, compute] {
      const float one = 1.0f, zero = 0.0f;
      // dw^T [i x o] = x^T [i x n] dy [n x o], straight into the fp32 gradient
      CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, i, o, batch, &one, out_[node.inputs[0]],
                                blas_type(type_), i, diff_[node.id], blas_type(type_), o, &zero, grad(node.id, 0),
                                CUDA_R_32F, i, compute, CUBLAS_GEMM_DEFAULT));
      if (bias) cuda::bias_gradient(diff_[node.id], grad(node.id, 1), batch, o, type_, stream_);
      ready(node);
    }, true);
    if (data_grad)  // dx^T [i x n] = w^T [i x o] dy^T [o x n]
      push_backward(node.id, [this, &node, batch, o, i, acc, compute] {
        const float one = 1.0f, beta = acc ? 1.0f : 0.0f;
        CUBLAS_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, i, batch, o, &one, weights(node.id, 0),
                                  blas_type(type_), i, diff_[node.id], blas_type(type_), o, &beta,
                                  diff_[node.inputs[0]], blas_type(type_), i, compute, CUBLAS_GEMM_DEFAULT));
      });
  }

  void compile_add(const Node& node) {
    const int a = node.inputs[0], b = node.inputs[1];
    const int64_t count = node.out.elements();
    const bool relu = fused_relu_of_[node.id] >= 0;
    push_forward(node.id, [this, &node, a, b, count, relu] {
      cuda::add_forward(out_[a], out_[b], out_[node.id], count, relu, type_, stream_);
    });
    const bool acc_a = accumulates(node, 0), acc_b = accumulates(node, 1);
    void* scratch = nullptr;
    if (!wants_grad(a) || !wants_grad(b)) scratch = allocate(count * esize());
    push_backward(node.id, [this, &node, a, b, count, relu, acc_a, acc_b, scratch] {
      cuda::add_backward(out_[node.id], diff_[node.id], wants_grad(a) ? diff_[a] : scratch,
                         wants_grad(b) ? diff_[b] : scratch, count, relu, acc_a, acc_b, type_, stream_);
    });
  }

  void compile_shortcut(const Node& node) {
    const Node& src = graph_.nodes[node.inputs[0]];
    const Shape i = src.out, o = node.out;
    const int64_t stride = node.shortcut.stride, pad = node.shortcut.pad_front;
    push_forward(node.id, [this, &node, i, o, stride, pad] {
      cuda::shortcut_forward(out_[node.inputs[0]], out_[node.id], i.n, i.c, i.h, i.w, o.c, o.h, o.w, stride, pad,
                             type_, stream_);
    });
    if (!wants_grad(src.id)) return;
    const bool acc = accumulates(node, 0);
    push_backward(node.id, [this, &node, i, o, stride, pad, acc] {
      cuda::shortcut_backward(diff_[node.id], diff_[node.inputs[0]], i.n, i.c, i.h, i.w, o.c, o.h, o.w, stride, pad,
                              acc, type_, stream_);
    });
  }

  DType type_;
  bool input_grad_, input_nhwc_, fuse_, tf32_, timed_search_, graphs_;
  cudaGraphExec_t graph_exec_[3] = {};  // training forward, inference forward, backward
  bool logits_are_f32_ = false;
  int device_ = 0;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  ActivationDesc activation_;

  std::vector<std::vector<int>> consumers_;
  std::vector<int> alias_of_, fused_relu_of_;
  std::vector<NodeState> nodes_;
  std::vector<void*> out_, diff_;
  std::vector<DeviceBuffer> storage_;
  DeviceBuffer d_params_, d_grads_, d_momentum_, d_buffers_, d_params_half_, d_grads_half_;
  DeviceBuffer d_images_, d_labels_, d_totals_, d_flag_, d_logits_, staging_, scratch_;
  DeviceBuffer workspace_, search_workspace_;
  size_t workspace_bytes_ = 0, search_limit_ = 0;
  std::map<std::string, ConvAlgos> algo_cache_;
  // the device arenas: tensor k of layout_.params at param_offset_[k] (aligned; gaps are zero)
  std::vector<int64_t> param_offset_, buffer_offset_;
  int64_t device_params_ = 0, device_buffers_ = 0;
  void* pinned_ = nullptr;
  float* pinned_totals_ = nullptr;
  int* pinned_flag_ = nullptr;
  int32_t* pinned_labels_ = nullptr;
  bool loss_pending_ = false;
  bool guarded_pending_ = false, last_update_applied_ = true;
  cudaEvent_t marks_[4] = {};
  int marked_ = 0;
  bool phases_valid_ = false;
  StepPhases phases_;
  std::vector<Step> forward_training_, forward_inference_, backward_;
};

}  // namespace

std::unique_ptr<Plan> make_cuda_plan(const Graph& graph, const PlanOptions& options) {
  return std::make_unique<CudaPlan>(graph, options);
}

}  // namespace cnnbench
