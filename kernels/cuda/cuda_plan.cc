// kernels/cuda/cuda_plan.cc — the cuda backend's compile/replay skeleton: CudaPlan's constructor,
// compile() (the switch over op kinds; each family compiles in its own file, plan_internal.h),
// the replay of the launch lists, synchronize(), and make_cuda_plan().
//
// The cuda backend. compile() walks the graph once: it places every activation and gradient in
// one planned arena (kernels/device_tensors.h, allocated in memory.cc), allocates workspaces and
// statistics buffers, picks each convolution's algorithms (cuDNN's timed search, or its
// heuristics), and records three lists of launches (training forward,
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
// after a convolution with bias it is part of the bias kernel. In fp16 a batch norm whose sum
// with a residual a ReLU follows (kernels/bn_add_relu.h) is cuDNN's BN+add+activation, one call
// each way at the add's place, and its own output is never stored; and a conv -> batch norm ->
// ReLU -> conv chain (kernels/conv_bn_relu.h) is folded into its two convolutions as cuDNN
// graphs (conv_bn.cc), neither the batch norm's nor the ReLU's output stored.
#include "kernels/cuda/cuda_plan.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda/plan_internal.h"
#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {

void check_cublas(cublasStatus_t s, const char* what, const char* where) {
  if (s != CUBLAS_STATUS_SUCCESS) cuda::fail(what, where, cublasGetStatusString(s));
}

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

std::string where(const Node& node) { return "node '" + node.name + "' (" + op_name(node.kind) + ")"; }

CudaPlan::CudaPlan(const Graph& graph, const PlanOptions& options)
    : Plan(graph),
      type_(options.compute),
      input_grad_(options.input_grad),
      input_nhwc_(options.input_nhwc),
      fuse_(options.fuse),
      tf32_(options.allow_tf32),
      timed_search_(options.timed_algorithm_search),
      deterministic_(options.deterministic_algorithms),
      graphs_(options.cuda_graphs),
      share_memory_(options.share_memory),
      pad_input_(options.pad_input_channels),
      padded_channels_(options.padded_channels),
      choices_(options.search_choices) {
  if (cuda::visible_devices() == 0)
    throw std::invalid_argument("backend 'cuda': no GPU is visible (" + cuda::build_info().no_device_reason + ")");
  try {  // a throw leaves no destructor to run: release what was made
    CUDA_CHECK(cudaGetDevice(&device_));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudnnCreate(&cudnn_));
    CUDA_CHECK(cudnnSetStream(cudnn_, stream_));
    CUBLAS_CHECK(cublasCreate(&cublas_));
    CUBLAS_CHECK(cublasSetStream(cublas_, stream_));
    for (cudaEvent_t& e : marks_) CUDA_CHECK(cudaEventCreate(&e));
    if (choices_ && timed_search_) identity_ = search_identity();  // search_recall.cc
    CUBLAS_CHECK(cublasSetMathMode(cublas_, type_ == DType::f32 && !tf32_ ? CUBLAS_PEDANTIC_MATH
                                                                          : CUBLAS_DEFAULT_MATH));
    try {
      compile();
    } catch (const OutOfMemory& e) {
      throw std::runtime_error(out_of_memory(e));
    }
    sample_device_memory();
  } catch (...) {
    release();
    throw;
  }
}

CudaPlan::~CudaPlan() { release(); }

void CudaPlan::release() noexcept {
  if (stream_) cudaStreamSynchronize(stream_);
  nodes_.clear();
  fused_convs_.clear();  // cuDNN's execution plans before the handle they were made with
  algo_cache_.clear();   // (ConvAlgos holds graphs too)
  if (cublas_) cublasDestroy(cublas_);
  if (cudnn_) cudnnDestroy(cudnn_);
  if (stream_) cudaStreamDestroy(stream_);
  if (pinned_) cudaFreeHost(pinned_);
  for (cudaGraphExec_t g : graph_exec_)
    if (g) cudaGraphExecDestroy(g);
  for (cudaEvent_t e : marks_)
    if (e) cudaEventDestroy(e);
}

void CudaPlan::set_input(const float* images) {
  const Shape& in = graph_.input().out;
  CUDA_CHECK(cudaMemcpyAsync(d_images_.data(), images, in.elements() * sizeof(float), cudaMemcpyHostToDevice,
                             stream_));
  cuda::images_to_nhwc(d_images_.as<float>(), out_[0], in.n, in.c, in.h, in.w, tensors_.input_channels, input_nhwc_, type_,
                       stream_);
}

void CudaPlan::forward(Mode mode) {
  mark(0);
  if (mode == Mode::training)  // this step's dropout masks: the step count on the device
    cuda::store_value(d_dropout_step_.as<uint64_t>(), begin_dropout_step(), stream_);
  if (type_ != DType::f32)  // this step's weights in the compute type
    cuda::convert(d_params_.data(), DType::f32, d_params_half_.data(), type_, device_params_, 1.0f, stream_);
  const int which = mode == Mode::training ? 0 : 1;
  run(mode == Mode::training ? forward_training_ : forward_inference_, &LayerTime::forward_sec, which);
}

void CudaPlan::backward() {
  run(backward_, &LayerTime::backward_sec, 2);
  if (graph_marked_backward_)  // inside the graph, before it waits for the allreduces
    marked_ |= 1 << 2;
  else
    mark(2);
}

void CudaPlan::drop_graphs() {
  for (cudaGraphExec_t& g : graph_exec_)
    if (g) {
      cudaGraphExecDestroy(g);  // an executing graph is freed once its work ends
      g = nullptr;
    }
}

void CudaPlan::synchronize(LossResult* loss) {
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
  sample_device_memory();
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

bool CudaPlan::device_phase_times(StepPhases* phases) const {
  if (phases_valid_) *phases = phases_;
  return phases_valid_;
}

// ---- running ----
// With graphs on (and no per-layer timing), the first call captures the list and later calls
// launch the captured graph. A gradient hook (an NCCL reducer's bucket launches) is captured
// too where the reducer gave capture hooks (set_capture_hooks): its launches join the capture,
// it ends them before the capture ends, and it hears of every later replay, since the hooks'
// host code runs only while capturing. Every list runs once plainly before its capture: NCCL
// sets up its connections then, and a kernel's first launch (a cuDNN graph's engine compiled at
// run time, an algorithm read from --algorithm_cache that no search ran) fails outside a capture,
// where its error names it, rather than inside one.
void CudaPlan::run(const std::vector<Step>& steps, double LayerTime::*phase, int which) {
  const bool hooked = hook_ && which == 2;
  const bool capturable = graphs_ && !layer_timing_ && (!hook_ || (join_hook_ && replayed_hook_));
  if (which == 2) graph_marked_backward_ = false;
  if (capturable && ran_plainly_[which]) {
    if (!graph_exec_[which]) {
      cudaGraph_t graph = nullptr;
      CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
      try {
        for (const Step& step : steps) step.run();
        if (hooked) {  // backward's end for the phase times, then the allreduces' streams rejoin
          CUDA_CHECK(cudaEventRecordWithFlags(marks_[2], stream_, cudaEventRecordExternal));
          join_hook_();
        }
      } catch (...) {
        cudaStreamEndCapture(stream_, &graph);
        if (graph) cudaGraphDestroy(graph);
        throw;
      }
      CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
      CUDA_CHECK(cudaGraphInstantiate(&graph_exec_[which], graph, 0));
      CUDA_CHECK(cudaGraphDestroy(graph));
    } else if (hooked) {
      replayed_hook_();
    }
    CUDA_CHECK(cudaGraphLaunch(graph_exec_[which], stream_));
    graph_marked_backward_ = hooked;
    return;
  }
  if (capturable) ran_plainly_[which] = true;
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
void CudaPlan::mark(int i) {
  CUDA_CHECK(cudaEventRecord(marks_[i], stream_));
  marked_ |= 1 << i;
}

// Polls instead of blocking in the driver, so that a wait hook (a stuck collective's
// watchdog) runs while the GPU works.
void CudaPlan::wait() {
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

// ---- compile ----
void* CudaPlan::weights(int node, int index) {  // in the compute type
  const int64_t offset = param_offset_[layout_.params_of_node[node][index]];
  if (type_ == DType::f32) return d_params_.as<float>() + offset;
  return d_params_half_.as<uint16_t>() + offset;
}

void CudaPlan::ready(const Node& node) {
  for (int index : layout_.params_of_node[node.id]) gradient_ready(index);
}

std::unique_ptr<TensorDesc> CudaPlan::nhwc_desc(const Shape& s, DType type) const {
  auto d = std::make_unique<TensorDesc>();
  CUDA_CHECK(cudnnSetTensor4dDescriptor(d->d, CUDNN_TENSOR_NHWC, cudnn_type(type), static_cast<int>(s.n),
                                        static_cast<int>(s.c), static_cast<int>(s.h), static_cast<int>(s.w)));
  return d;
}

void CudaPlan::compile() {
  const size_t count = graph_.nodes.size();
  consumers_ = graph_.consumers();
  nodes_.resize(count);
  out_.assign(count, nullptr);
  diff_.assign(count, nullptr);
  const Node& last = graph_.logits();

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
  prepare_update_chunks();
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
  d_dropout_step_ = DeviceBuffer(sizeof(uint64_t));
  CUDA_CHECK(cudaMemset(d_dropout_step_.data(), 0, sizeof(uint64_t)));
  pinned_labels_ = reinterpret_cast<int32_t*>(static_cast<char*>(pinned_) + 4096);

  // what runs fused or in place, the input's stored channels and the arena (kernels/device_tensors.h)
  const int64_t width = padded_channels_ == 8 ? 8 : 4;
  DeviceTensorOptions tensor_options{type_, fuse_, pad_input_, width, share_memory_, input_grad_, {}};
  tensor_options.conv_bn_supported = [this](const ConvBnRelu& chain, bool has_prologue) {
    return conv_bn_supported(chain, has_prologue);  // conv_bn.cc: asks cuDNN for the chain's graphs
  };
  tensors_ = plan_device_tensors(graph_, tensor_options);
  check_tensors_fit();  // memory.cc: first, so that a batch too large is told as such
  if (tensors_.input_channels != graph_.input().out.c) {  // a padded input: 8 channels where the search finds them faster
    tensor_options.padded_channels = choose_input_padding();  // conv.cc
    if (tensor_options.padded_channels != tensors_.input_channels) {
      DeviceTensors four = std::move(tensors_);
      tensors_ = plan_device_tensors(graph_, tensor_options);
      try {
        check_tensors_fit();
      } catch (const OutOfMemory&) {  // 8 channels do not fit where 4 do: 4
        tensors_ = std::move(four);
        check_tensors_fit();
      }
    }
  }
  allocate_padded_filters();  // conv.cc
  search_convolutions();  // conv.cc: before the arena, so that the search's memory and the arena's never add up
  place_tensors();
  for (const Node& node : graph_.nodes) {
    NodeState& s = nodes_[node.id];
    s.out = nhwc_desc(stored_shape(node.id), type_);
    try {
      switch (node.kind) {
        case OpKind::input: break;
        case OpKind::conv: compile_conv(node); break;
        case OpKind::batch_norm: compile_batch_norm(node); break;
        case OpKind::relu:
        case OpKind::relu6: compile_relu(node); break;
        case OpKind::max_pool:
        case OpKind::avg_pool:
        case OpKind::global_avg_pool: compile_pool(node); break;
        case OpKind::linear: compile_linear(node); break;
        case OpKind::add: compile_add(node); break;
        case OpKind::shortcut: compile_shortcut(node); break;
        case OpKind::concat: compile_concat(node); break;
        case OpKind::dropout: compile_dropout(node); break;
        case OpKind::lrn: compile_lrn(node); break;
      }
    } catch (const std::exception& e) {
      throw std::invalid_argument("backend 'cuda': " + where(node) + ": " + e.what());
    }
  }
  std::reverse(backward_.begin(), backward_.end());
  workspace_ = DeviceBuffer(std::max<size_t>(workspace_bytes_, 256));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  device_name_ = "/gpu:" + std::to_string(device_) + " (" + prop.name + ")";
  CUDA_CHECK(cudaDeviceSynchronize());  // the arena's zeroing (cudaMemset, legacy stream) too, not only stream_
}

void* CudaPlan::allocate(size_t bytes) {
  storage_.emplace_back(std::max<size_t>(bytes, 16));
  return storage_.back().data();
}

// Gradient of input `k` of `node`: the first consumer in backward order (the last in the
// graph) writes it, the others add to it.
bool CudaPlan::accumulates(const Node& node, size_t k) const {
  const int t = node.inputs[k];
  for (size_t j = 0; j < k; ++j)
    if (node.inputs[j] == t) return true;
  return node.id != *std::max_element(consumers_[t].begin(), consumers_[t].end());
}

void CudaPlan::push_forward(int node, Launch training, Launch inference) {
  forward_inference_.push_back({inference ? inference : training, node});
  forward_training_.push_back({std::move(training), node});
}

void CudaPlan::push_backward(int node, Launch launch, bool weight_grad) {
  backward_.push_back({std::move(launch), node, weight_grad});
}

}  // namespace cnnbench::cuda

namespace cnnbench {

std::unique_ptr<Plan> make_cuda_plan(const Graph& graph, const PlanOptions& options) {
  return std::make_unique<cuda::CudaPlan>(graph, options);
}

}  // namespace cnnbench
