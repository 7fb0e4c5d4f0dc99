// kernels/cuda/conv.cc — CudaPlan's convolutions: cuDNN descriptors, the choice of algorithms
// (timed search or heuristics, cached by shape) and the forward, weight- and data-gradient launches.
#include "kernels/cuda/plan_internal.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {

std::string CudaPlan::fmt_key(const Shape& s, const Node& node) const {
  return std::to_string(s.n) + "x" + std::to_string(s.c) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w) +
         ":" + std::to_string(node.conv.out_channels) + conv_label(node.conv);
}

// The fastest result that ran and fits the search's memory limit (cuDNN lists them fastest first),
// and with PlanOptions::deterministic_algorithms one that gives the same bits every run.
template <typename Perf>
bool CudaPlan::usable(const Perf& result) const {
  return result.status == CUDNN_STATUS_SUCCESS && result.memory <= search_limit_ &&
         (!deterministic_ || result.determinism == CUDNN_DETERMINISTIC);
}

template <typename Perf>
const Perf* CudaPlan::first_usable(const Perf* results, int count) const {
  for (int i = 0; i < count; ++i)
    if (usable(results[i])) return &results[i];
  return nullptr;
}

template <typename Perf>
const Perf& CudaPlan::pick(const Perf* results, int count, const char* what) const {
  if (const Perf* p = first_usable(results, count)) return *p;
  throw std::runtime_error(std::string("cuDNN offers no ") + what + " convolution algorithm for this shape");
}

// The timed search's borrowed workspace and tensors, given back before the arena is allocated.
void CudaPlan::release_search_memory() {
  search_workspace_ = DeviceBuffer();
  for (DeviceBuffer& b : search_tensors_) b = DeviceBuffer();
}

std::unique_ptr<ConvDesc> CudaPlan::conv_desc(const Node& node, cudnnMathType_t math) const {
  auto d = std::make_unique<ConvDesc>();
  const int pad_h = static_cast<int>(node.conv.pad_h), pad_w = static_cast<int>(node.conv.pad_w);
  const int stride = static_cast<int>(node.conv.stride);
  CUDA_CHECK(cudnnSetConvolution2dDescriptor(d->d, pad_h, pad_w, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                             CUDNN_DATA_FLOAT));
  CUDA_CHECK(cudnnSetConvolutionMathType(d->d, math));
  CUDA_CHECK(cudnnSetConvolutionGroupCount(d->d, static_cast<int>(node.conv.groups)));
  return d;
}

// The most workspace an algorithm may take: a quarter of the free memory, at most 4 GiB.
void CudaPlan::set_search_limit() {
  if (search_limit_ > 0) return;
  size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  search_limit_ = std::min<size_t>(size_t{4} << 30, free / 4);
}

// The timed search needs that workspace; it is freed after the search.
DeviceBuffer& CudaPlan::search_workspace() {
  set_search_limit();
  if (!search_workspace_.data()) search_workspace_ = DeviceBuffer(search_limit_);
  return search_workspace_;
}

void* CudaPlan::allocate_scratch(size_t bytes) {
  if (scratch_.bytes() < bytes) scratch_ = DeviceBuffer(bytes);
  return scratch_.data();
}

std::unique_ptr<FilterDesc> CudaPlan::filter_desc(const Node& node) const {
  auto d = std::make_unique<FilterDesc>();
  CUDA_CHECK(cudnnSetFilter4dDescriptor(d->d, cudnn_type(type_), CUDNN_TENSOR_NHWC,
                                        static_cast<int>(node.conv.out_channels),
                                        static_cast<int>(stored_shape(node.inputs[0]).c / node.conv.groups),
                                        static_cast<int>(node.conv.kernel_h), static_cast<int>(node.conv.kernel_w)));
  return d;
}

// 16-bit tensor-core kernels want channel counts that are multiples of 4 or 8: where the input
// is stored with a fourth zero channel (kernels/device_tensors.h), its convolutions read a copy
// of their filter with a fourth zero input channel, refreshed from the weights each step; their
// filter gradient comes back with 4 channels and the first 3 are kept. The images' gradient
// (tests) has the stored 4 channels too; read_input_grad() drops one.
void CudaPlan::allocate_padded_filters() {
  if (tensors_.input_channels == graph_.input().out.c) return;
  for (const int u : consumers_[0]) {
    const Node& conv = graph_.nodes[u];
    const size_t bytes = conv.conv.out_channels * conv.conv.kernel_h * conv.conv.kernel_w * tensors_.input_channels * esize();
    for (DeviceBuffer* b : {&nodes_[u].padded_weights, &nodes_[u].padded_grad}) {
      *b = DeviceBuffer(bytes);
      CUDA_CHECK(cudaMemset(b->data(), 0, bytes));
    }
  }
}

// An RGB input read only by convolutions is stored padded in 16 bits (kernels/device_tensors.h),
// to 4 channels or to 8. cuDNN's kernels for 4 channels ran VGG16's 3x3 first layer at 21
// TFLOP/s on an H100 (4.1 ms forward at b256, where writing its output takes 0.5 ms), while
// ResNet's 7x7 stem has kernels made for 4. With a timed search both widths are tried on the
// input's convolutions (cuDNN Find's best forward and weight gradient), and 8 kept where it was
// 5% faster in all (its input takes twice the bytes); without, 4. Runs once the arena planned
// with 4 is known to fit (memory.cc), before the algorithm search, and gives its memory back.
int64_t CudaPlan::choose_input_padding() {
  if (padded_channels_ == 4 || padded_channels_ == 8) return padded_channels_;
  if (!timed_search_) return 4;
  if (const int64_t kept = recall_padding()) return kept;  // search_recall.cc
  for (int i = 0; i < 2; ++i) {
    padding_ms_[i] = 0;
    for (const int u : consumers_[0]) {
      const float ms = input_conv_ms(graph_.nodes[u], i == 0 ? 4 : 8);
      padding_ms_[i] = ms < 0 || padding_ms_[i] < 0 ? -1 : padding_ms_[i] + ms;
    }
  }
  release_search_memory();
  const int64_t channels = padding_ms_[1] > 0 && (padding_ms_[0] < 0 || padding_ms_[1] < 0.95f * padding_ms_[0]) ? 8 : 4;
  remember_padding(channels);
  return channels;
}

// cuDNN Find's best forward and weight gradient (ms, summed) of a convolution of the input
// stored with `channels`; negative where either has no algorithm that ran.
float CudaPlan::input_conv_ms(const Node& node, int64_t channels) {
  Shape s = graph_.input().out;
  s.c = channels;
  const auto x = nhwc_desc(s, type_), y = nhwc_desc(node.out, type_);
  FilterDesc filter;
  CUDA_CHECK(cudnnSetFilter4dDescriptor(filter.d, cudnn_type(type_), CUDNN_TENSOR_NHWC,
                                        static_cast<int>(node.conv.out_channels), static_cast<int>(channels),
                                        static_cast<int>(node.conv.kernel_h), static_cast<int>(node.conv.kernel_w)));
  const auto conv = conv_desc(node, search_math());
  DeviceBuffer& ws = search_workspace();
  void* xp = search_tensor(0, s.elements() * esize());
  void* yp = search_tensor(2, node.out.elements() * esize());
  void* dyp = search_tensor(3, node.out.elements() * esize());
  DeviceBuffer w(node.conv.out_channels * node.conv.kernel_h * node.conv.kernel_w * channels * esize());
  DeviceBuffer dw(w.bytes());
  CUDA_CHECK(cudaMemset(w.data(), 0, w.bytes()));
  constexpr int want = 10;
  int got = 0;
  cudnnConvolutionFwdAlgoPerf_t f[want];
  cudnnConvolutionBwdFilterAlgoPerf_t bf[want];
  CUDA_CHECK(cudnnFindConvolutionForwardAlgorithmEx(cudnn_, x->d, xp, filter.d, w.data(), conv->d, y->d, yp, want, &got,
                                                    f, ws.data(), search_limit_));
  const cudnnConvolutionFwdAlgoPerf_t* fwd = first_usable(f, got);
  CUDA_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(cudnn_, x->d, xp, y->d, dyp, conv->d, filter.d, dw.data(),
                                                           want, &got, bf, ws.data(), search_limit_));
  const cudnnConvolutionBwdFilterAlgoPerf_t* filter_best = first_usable(bf, got);
  return fwd && filter_best ? fwd->time + filter_best->time : -1;
}

void* CudaPlan::conv_weights(const Node& node) {
  return reads_padded_input(node) ? nodes_[node.id].padded_weights.data() : weights(node.id, 0);
}

cudnnMathType_t CudaPlan::search_math() const {
  return type_ != DType::f32 ? CUDNN_TENSOR_OP_MATH : tf32_ ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

// cuDNN's Find times each algorithm once, and on small problems that ranking is noise: at
// resnet50 fp16 b32 on an H100 it put default-math 1x1 convolutions at 8-15 TFLOP/s ahead of
// tensor-op ones at 40-60. Its best few are timed again here, each on a descriptor with its own
// math type: one launch to warm up, then the median of five. A candidate cuDNN refuses to run is
// passed over. None are timed again where Find's best took a millisecond or more: one launch that
// long ranks them well enough (vgg16 fp16 at batch 256 had not begun its first step after 99 s on
// an H200, where each of its large convolutions timed up to three slower candidates six times
// each, per direction). Find's own time is not used to drop candidates: on small problems it is
// the measurement in doubt.
template <typename Perf>
const Perf& CudaPlan::retime(const Node& node, const Perf* results, int count, const char* what,
                             const std::function<cudnnStatus_t(const Perf&, cudnnConvolutionDescriptor_t)>& launch) {
  std::vector<const Perf*> candidates;
  for (int i = 0; i < count && candidates.size() < 4; ++i)
    if (usable(results[i])) candidates.push_back(&results[i]);
  if (candidates.size() < 2 || candidates[0]->time >= 1.0f) return pick(results, count, what);
  const Perf* best = nullptr;
  float best_ms = 0;
  for (const Perf* p : candidates) {
    const auto desc = conv_desc(node, p->mathType);
    const float ms = median_ms([&] { return launch(*p, desc->d) == CUDNN_STATUS_SUCCESS; });
    if (ms >= 0 && (!best || ms < best_ms)) best = p, best_ms = ms;
  }
  return best ? *best : pick(results, count, what);
}

// One launch to warm up, then the median of five timed on the plan's stream (device events);
// negative where a launch fails.
float CudaPlan::median_ms(const std::function<bool()>& launch) {
  if (!launch()) return -1;
  cudaEvent_t start = nullptr, stop = nullptr;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  float ms[5];
  bool ran = true;
  for (float& t : ms) {
    CUDA_CHECK(cudaEventRecord(start, stream_));
    ran = ran && launch();
    CUDA_CHECK(cudaEventRecord(stop, stream_));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!ran) return -1;
  std::sort(ms, ms + 5);
  return ms[2];
}


// Tensors of the convolution's shapes for the timed search, before the plan's arena exists: the
// search's peak memory is then the largest convolution's tensors and the search workspace, not
// those on top of every activation.
void* CudaPlan::search_tensor(int which, size_t bytes) {
  DeviceBuffer& b = search_tensors_[which];
  if (b.bytes() < bytes) {
    b = DeviceBuffer();
    b = DeviceBuffer(bytes);
    CUDA_CHECK(cudaMemset(b.data(), 0, bytes));
  }
  return b.data();
}

ConvAlgos CudaPlan::choose_algorithms(const Node& node) {
  const Shape s = stored_shape(node.inputs[0]);
  const bool bias_relu = bias_relu_candidate(node), dgrad_relu = dgrad_relu_candidate(node);
  const std::string key = fmt_key(s, node) + (bias_relu ? ":bias_relu" : "") + (dgrad_relu ? ":dgrad_relu" : "");
  if (auto it = algo_cache_.find(key); it != algo_cache_.end()) return it->second;
  const auto x = nhwc_desc(s, type_), y = nhwc_desc(node.out, type_);
  const auto filter = filter_desc(node);
  const auto conv = conv_desc(node, search_math());
  ConvAlgos a;
  if (timed_search_ && recall_algorithms(node, key, x->d, filter->d, y->d, a)) return algo_cache_[key] = a;
  constexpr int want = 10;  // every algorithm of a direction (8 forward, 6 data, 7 filter)
  int got = 0;
  cudnnConvolutionFwdAlgoPerf_t f[want];
  cudnnConvolutionBwdFilterAlgoPerf_t bf[want];
  cudnnConvolutionBwdDataAlgoPerf_t bd[want];
  const auto take = [&a](const auto& chosen, auto& algo, cudnnMathType_t& math) {
    algo = chosen.algo;
    math = chosen.mathType;
    a.workspace = std::max(a.workspace, chosen.memory);
  };
  if (timed_search_) {
    DeviceBuffer& ws = search_workspace();
    void* xp = search_tensor(0, s.elements() * esize());
    void* dxp = search_tensor(1, s.elements() * esize());
    void* yp = search_tensor(2, node.out.elements() * esize());
    void* dyp = search_tensor(3, node.out.elements() * esize());
    void* wp = conv_weights(node);
    void* dwp = reads_padded_input(node)    ? nodes_[node.id].padded_grad.data()
                : type_ == DType::f32 ? static_cast<void*>(grad(node.id, 0))
                                      : grad_half(node.id, 0);
    const float one = 1.0f, zero = 0.0f;
    CUDA_CHECK(cudnnFindConvolutionForwardAlgorithmEx(cudnn_, x->d, xp, filter->d, wp, conv->d, y->d, yp, want, &got,
                                                      f, ws.data(), search_limit_));
    take(retime<cudnnConvolutionFwdAlgoPerf_t>(node, f, got, "forward", [&](const auto& p, cudnnConvolutionDescriptor_t c) {
           return cudnnConvolutionForward(cudnn_, &one, x->d, xp, filter->d, wp, c, p.algo, ws.data(), p.memory, &zero,
                                          y->d, yp);
         }), a.forward, a.forward_math);
    if (bias_relu) {
      const auto chosen = conv_desc(node, a.forward_math);
      const int64_t rows = node.out.n * node.out.h * node.out.w;
      choose_bias_relu(node, a, xp, wp, yp, [&] {
        const bool ran = cudnnConvolutionForward(cudnn_, &one, x->d, xp, filter->d, wp, chosen->d, a.forward, ws.data(),
                                                 a.workspace, &zero, y->d, yp) == CUDNN_STATUS_SUCCESS;
        cuda::add_bias(yp, master(node.id, 1), rows, node.out.c, true, type_, stream_);
        return ran;
      });
    }
    CUDA_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(cudnn_, x->d, xp, y->d, dyp, conv->d, filter->d, dwp,
                                                             want, &got, bf, ws.data(), search_limit_));
    take(retime<cudnnConvolutionBwdFilterAlgoPerf_t>(
             node, bf, got, "backward filter",
             [&](const auto& p, cudnnConvolutionDescriptor_t c) {
               return cudnnConvolutionBackwardFilter(cudnn_, &one, x->d, xp, y->d, dyp, c, p.algo, ws.data(),
                                                     p.memory, &zero, filter->d, dwp);
             }),
         a.backward_filter, a.filter_math);
    CUDA_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(cudnn_, filter->d, wp, y->d, dyp, conv->d, x->d, dxp, want,
                                                           &got, bd, ws.data(), search_limit_));
    take(retime<cudnnConvolutionBwdDataAlgoPerf_t>(
             node, bd, got, "backward data",
             [&](const auto& p, cudnnConvolutionDescriptor_t c) {
               return cudnnConvolutionBackwardData(cudnn_, &one, filter->d, wp, y->d, dyp, c, p.algo, ws.data(),
                                                   p.memory, &zero, x->d, dxp);
             }),
         a.backward_data, a.data_math);
    if (dgrad_relu) {  // xp stands for the ReLU's output, dxp for its gradient
      const auto chosen = conv_desc(node, a.data_math);
      choose_dgrad_relu(node, a, dxp, wp, dyp, xp, [&] {
        const bool ran = cudnnConvolutionBackwardData(cudnn_, &one, filter->d, wp, y->d, dyp, chosen->d,
                                                      a.backward_data, ws.data(), a.workspace, &zero, x->d,
                                                      dxp) == CUDNN_STATUS_SUCCESS;
        cuda::relu_backward(xp, dxp, dxp, s.elements(), false, type_, stream_);
        return ran;
      });
    }
    remember_algorithms(key, a);  // search_recall.cc
  } else {  // heuristics: each result carries the workspace it needs
    set_search_limit();
    CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, x->d, filter->d, conv->d, y->d, want, &got, f));
    take(pick(f, got, "forward"), a.forward, a.forward_math);
    if (bias_relu) choose_bias_relu(node, a, nullptr, nullptr, nullptr, {});
    CUDA_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_, x->d, y->d, conv->d, filter->d, want, &got, bf));
    take(pick(bf, got, "backward filter"), a.backward_filter, a.filter_math);
    CUDA_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, filter->d, y->d, conv->d, x->d, want, &got, bd));
    take(pick(bd, got, "backward data"), a.backward_data, a.data_math);
    if (dgrad_relu) choose_dgrad_relu(node, a, nullptr, nullptr, nullptr, nullptr, {});
  }
  algo_cache_[key] = a;
  return a;
}

// Every convolution's algorithms, chosen before the activations' arena is allocated; then the
// search's borrowed memory goes back.
void CudaPlan::search_convolutions() {
  const auto start = std::chrono::steady_clock::now();
  for (const Node& node : graph_.nodes) {
    if (node.kind != OpKind::conv) continue;
    try {
      choose_algorithms(node);
      time_folded_graphs(node);  // conv_bn.cc
    } catch (const OutOfMemory&) {
      throw;
    } catch (const std::exception& e) {
      throw std::invalid_argument("backend 'cuda': " + where(node) + ": " + e.what());
    }
  }
  release_search_memory();
  // engines built for a graph that no search timed (a chain's forward asked for without the
  // statistics a later chain added): the plan keeps the first, not all four plans' kernels
  for (auto& [key, g] : fused_convs_) g.candidates.clear();
  search_sec_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}


void CudaPlan::compile_conv(const Node& node) {
  NodeState& s = nodes_[node.id];
  const Node& src = graph_.nodes[node.inputs[0]];
  const auto x = nhwc_desc(stored_shape(src.id), type_);
  s.filter = filter_desc(node);
  // The search ran on this descriptor; each direction then runs on one with its algorithm's math type.
  s.conv = conv_desc(node, search_math());
  int n, c, h, w;
  CUDA_CHECK(cudnnGetConvolution2dForwardOutputDim(s.conv->d, x->d, s.filter->d, &n, &c, &h, &w));
  if (h != node.out.h || w != node.out.w || c != node.out.c)
    throw std::logic_error("cuDNN's output shape differs from the graph's");
  const bool data_grad = wants_grad(src.id);
  s.algos = choose_algorithms(node);
  s.conv = conv_desc(node, s.algos.forward_math);
  s.conv_filter = conv_desc(node, s.algos.filter_math);
  s.conv_data = conv_desc(node, s.algos.data_math);
  workspace_bytes_ = std::max(workspace_bytes_, s.algos.workspace);
  const int relu = tensors_.fused_relu_of[node.id];
  const bool bias = node.conv.bias;
  const int64_t rows = node.out.n * node.out.h * node.out.w, channels = node.out.c;
  auto xd = std::shared_ptr<TensorDesc>(nhwc_desc(stored_shape(src.id), type_));
  const bool padded = reads_padded_input(node);
  const int64_t filter_rows = node.conv.out_channels * node.conv.kernel_h * node.conv.kernel_w;
  const int64_t in_c = src.out.c, stored_c = tensors_.input_channels;
  const bool folded = tensors_.prologue_bn[node.id] >= 0 || tensors_.stats_bn[node.id] >= 0;
  if (s.algos.bias_relu) {
    s.fused_forward = std::make_unique<FusedConvCall>();
    s.fused_forward->conv = s.algos.bias_relu;
  }
  if (folded) compile_folded_conv_forward(node);  // conv_bn.cc (no bias, no padded input)
  else push_forward(node.id, [this, &node, &s, xd, bias, relu, rows, channels, padded, filter_rows, in_c, stored_c] {
    const float one = 1.0f, zero = 0.0f;
    if (padded)  // this step's weights into the padded filter (its fourth channel stays zero)
      cuda::copy_channels(weights(node.id, 0), in_c, 0, s.padded_weights.data(), stored_c, 0, filter_rows, in_c, false,
                          type_, stream_);
    if (s.algos.bias_relu) {  // relu(conv + bias) written once, the bias as the step's fp16 copy
      FusedConv::Pointers p{};
      p[FusedConv::x] = out_[node.inputs[0]];
      p[FusedConv::w] = conv_weights(node);
      p[FusedConv::y] = out_[node.id];
      p[FusedConv::out_bias] = weights(node.id, 1);
      s.fused_forward->run(cudnn_, p, workspace_.data());
      return;
    }
    CUDA_CHECK(cudnnConvolutionForward(cudnn_, &one, xd->d, out_[node.inputs[0]], s.filter->d, conv_weights(node),
                                       s.conv->d, s.algos.forward, workspace_.data(), s.algos.workspace, &zero,
                                       s.out->d, out_[node.id]));
    if (bias) cuda::add_bias(out_[node.id], master(node.id, 1), rows, channels, relu >= 0, type_, stream_);
  });
  const bool acc = accumulates(node, 0);
  // bias + ReLU in place: the ReLU's mask and the bias gradient in one kernel, before both
  // gradients read the masked dy (backward_ runs this node's launches in reverse push order);
  // where a max pool masked the gradient already (pool.cc), the bias gradient only reads it
  const bool mask_with_bias = bias && relu >= 0 && masking_pool(relu) < 0 && masking_conv(relu) < 0;
  push_backward(node.id, [this, &node, &s, xd, bias = bias && !mask_with_bias, rows, channels, padded, filter_rows,
                           in_c, stored_c] {
    const float one = 1.0f, zero = 0.0f;
    const bool half = type_ != DType::f32;
    void* dw = half ? grad_half(node.id, 0) : grad(node.id, 0);
    if (tensors_.prologue_bn[node.id] >= 0)  // its input through the folded batch norm and ReLU (conv_bn.cc)
      run_folded_filter_gradient(node, dw, xd->d);
    else
      CUDA_CHECK(cudnnConvolutionBackwardFilter(cudnn_, &one, xd->d, out_[node.inputs[0]], s.out->d, diff_[node.id],
                                              s.conv_filter->d, s.algos.backward_filter, workspace_.data(),
                                              s.algos.workspace, &zero, s.filter->d, padded ? s.padded_grad.data() : dw));
    if (padded)  // the real channels' gradient (only 16-bit types are padded)
      cuda::copy_channels(s.padded_grad.data(), stored_c, 0, dw, in_c, 0, filter_rows, in_c, false, type_, stream_);
    if (half)
      cuda::convert(dw, type_, grad(node.id, 0), DType::f32, layout_.param(node.id, 0).elements, 1.0f, stream_);
    if (bias) cuda::bias_gradient(diff_[node.id], grad(node.id, 1), rows, channels, type_, stream_);
    ready(node);
  }, true);
  if (data_grad && s.algos.dgrad_relu) {
    s.fused_data = std::make_unique<FusedConvCall>();
    s.fused_data->conv = s.algos.dgrad_relu;
    push_backward(node.id, [this, &node, &s] {  // the ReLU's gradient, masked by its output
      FusedConv::Pointers p{};
      p[FusedConv::x] = diff_[node.inputs[0]];
      p[FusedConv::w] = conv_weights(node);
      p[FusedConv::y] = diff_[node.id];
      p[FusedConv::relu_out] = out_[node.inputs[0]];
      s.fused_data->run(cudnn_, p, workspace_.data());
    });
  } else if (data_grad)
    push_backward(node.id, [this, &node, &s, xd, acc] {
      const float one = 1.0f, beta = acc ? 1.0f : 0.0f;
      CUDA_CHECK(cudnnConvolutionBackwardData(cudnn_, &one, s.filter->d, conv_weights(node), s.out->d,
                                              diff_[node.id], s.conv_data->d, s.algos.backward_data, workspace_.data(),
                                              s.algos.workspace, &beta, xd->d, diff_[node.inputs[0]]));
    });
  if (mask_with_bias)
    push_backward(node.id, [this, &node, rows, channels] {
      cuda::relu_mask_bias_gradient(out_[node.id], diff_[node.id], grad(node.id, 1), rows, channels, type_, stream_);
    }, true);
}

}  // namespace cnnbench::cuda
