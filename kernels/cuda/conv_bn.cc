// kernels/cuda/conv_bn.cc — CudaPlan's conv -> batch norm -> ReLU -> conv chains folded into
// their convolutions (kernels/conv_bn_relu.h; fp16, compute capability 8.0 and later): the first
// convolution is a cuDNN graph that also sums its output's statistics, the batch norm turns them
// into a scale and bias (conv_bn_kernels.h), the second convolution is a graph applying
// relu(x * scale + bias) to the first one's output as it reads it, and its weight gradient the
// same (where cuDNN has no such graph, the ReLU's output is recomputed into scratch for its plain
// weight gradient). Its data gradient is cuDNN's plain one, into the ReLU's (= the batch norm's) gradient;
// the batch norm's backward then recomputes the ReLU's mask from the first convolution's output.
// Neither the batch norm's nor the ReLU's output is ever stored. Which chains the device takes is
// asked of cuDNN before the arena is planned (conv_bn_supported()); a refused chain runs as three ops.
#include <cuda_fp16.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "kernels/cuda/conv_bn_kernels.h"
#include "kernels/cuda/plan_internal.h"

namespace cnnbench::cuda {

FusedConvSpec CudaPlan::fused_spec(const Node& conv, FusedConvSpec::Direction direction, bool prologue,
                                   bool stats) const {
  // the graph's shape: this runs while the arena is being planned, and a folded chain never reads
  // the padded input (its channel counts are multiples of 8)
  const Shape x = graph_.nodes[conv.inputs[0]].out;
  FusedConvSpec s;
  s.direction = direction;
  s.n = x.n, s.c = x.c, s.h = x.h, s.w = x.w;
  s.k = conv.conv.out_channels, s.r = conv.conv.kernel_h, s.s = conv.conv.kernel_w;
  s.p = conv.out.h, s.q = conv.out.w;
  s.pad_h = conv.conv.pad_h, s.pad_w = conv.conv.pad_w, s.stride = conv.conv.stride;
  s.prologue = prologue;
  s.stats = stats;
  s.deterministic = deterministic_;
  return s;
}

// Built once per shape; a refusal is remembered too (null), with cuDNN's reason. With a timed
// search, up to four of cuDNN's engines for it for timed_fused_conv() to choose from (a second of
// finalizing past the first, and 20 s over the plan's graphs: runtime-fused engines compile their
// kernels as they finalize); until then, and without, the first.
std::shared_ptr<FusedConv> CudaPlan::fused_conv(const FusedConvSpec& spec) {
  const std::string key = spec.key();
  auto it = fused_convs_.find(key);
  if (it == fused_convs_.end()) {
    FusedGraph g;
    if (recall_graph(spec, g)) return fused_convs_.emplace(key, std::move(g)).first->second.conv;  // search_recall.cc
    const bool explore = timed_search_ && engine_budget_sec_ > 0;
    const auto start = std::chrono::steady_clock::now();
    g.candidates = FusedConv::build_all(cudnn_, spec, explore ? 4 : 1, std::min(1.0, engine_budget_sec_), &g.refusal);
    if (explore) engine_budget_sec_ -= std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!g.candidates.empty()) g.conv = g.candidates.front();
    it = fused_convs_.emplace(key, std::move(g)).first;
  }
  return it->second.conv;
}

// One graph's launch on `p`, timed as median_ms() does; negative where it fails.
float CudaPlan::time_graph(const std::shared_ptr<FusedConv>& conv, const FusedConv::Pointers& p) {
  if (conv->workspace_bytes() > search_limit_) return -1;
  FusedConvCall call{conv, nullptr, {}, nullptr};
  void* ws = search_workspace().data();
  return median_ms([&] {
    try {
      call.run(cudnn_, p, ws);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  });
}

// The fastest of a graph's engines on `p` (the search's tensors), timed once per shape; without
// a timed search, the first.
std::shared_ptr<FusedConv> CudaPlan::timed_fused_conv(const FusedConvSpec& spec, const FusedConv::Pointers& p) {
  fused_conv(spec);
  FusedGraph& g = fused_convs_[spec.key()];
  if (!g.conv || !timed_search_ || g.ms > 0) return g.conv;
  float best = -1;
  for (const auto& c : g.candidates)
    if (const float ms = time_graph(c, p); ms >= 0 && (best < 0 || ms < best)) best = ms, g.conv = c;
  g.ms = best;
  g.engines_timed = g.candidates.size();
  g.candidates.clear();  // the slower engines' plans (a runtime-fused engine's hold compiled kernels)
  remember_graph(spec, g);
  return g.conv;
}

// A folded chain's graphs timed over their engines on the search's tensors, before the arena:
// the convolution's forward (with its prologue and/or statistics) and its weight gradient
// through the prologue. The values are zeros: the engines' speed does not depend on them.
void CudaPlan::time_folded_graphs(const Node& node) {
  const int in_bn = tensors_.prologue_bn[node.id], out_bn = tensors_.stats_bn[node.id];
  if (!timed_search_ || (in_bn < 0 && out_bn < 0)) return;
  const Shape in = graph_.nodes[node.inputs[0]].out;
  const int64_t c = in.c, k = node.out.c;
  DeviceBuffer small(2 * c * 2 + 2 * k * 4);  // scale and bias (fp16), sum and sum of squares (fp32)
  CUDA_CHECK(cudaMemset(small.data(), 0, small.bytes()));
  FusedConv::Pointers p{};
  p[FusedConv::x] = search_tensor(0, in.elements() * esize());
  p[FusedConv::w] = weights(node.id, 0);
  p[FusedConv::y] = search_tensor(2, node.out.elements() * esize());
  if (in_bn >= 0) {
    p[FusedConv::scale] = small.as<uint16_t>();
    p[FusedConv::bias] = small.as<uint16_t>() + c;
  }
  if (const std::shared_ptr<FusedConv> g = forward_graph(node, in_bn >= 0, out_bn >= 0)) {
    if (g->spec().stats) {
      p[FusedConv::sum] = reinterpret_cast<float*>(small.as<uint16_t>() + 2 * c);
      p[FusedConv::sqsum] = reinterpret_cast<float*>(small.as<uint16_t>() + 2 * c) + k;
    }
    timed_fused_conv(g->spec(), p);
    // the arena is already planned without the batch norm's and ReLU's outputs: no fallback here
    const FusedGraph& timed = fused_convs_[g->spec().key()];
    if (timed.ms < 0 && timed.conv->workspace_bytes() <= search_limit_)
      throw std::runtime_error("every engine cuDNN offered for the folded batch norm's graph (" + g->spec().key() +
                               ") failed to run; --fuse_ops=false runs the chain unfolded");
  }
  if (in_bn < 0) return;
  p[FusedConv::w] = grad_half(node.id, 0);
  p[FusedConv::y] = search_tensor(3, node.out.elements() * esize());
  p[FusedConv::sum] = p[FusedConv::sqsum] = nullptr;
  const FusedConvSpec filter = fused_spec(node, FusedConvSpec::weight_gradient, true, false);
  if (fused_conv(filter)) timed_fused_conv(filter, p);
}

// A convolution's forward graph. cuDNN's ConvBNfprop engine (compute capability 9.0) takes the
// prologue only together with the statistics: where the prologue alone is refused, the graph
// with statistics runs and sums into a buffer nothing reads.
std::shared_ptr<FusedConv> CudaPlan::forward_graph(const Node& conv, bool prologue, bool stats, std::string* why) {
  std::shared_ptr<FusedConv> g = fused_conv(fused_spec(conv, FusedConvSpec::forward, prologue, stats));
  if (!g && prologue && !stats) g = fused_conv(fused_spec(conv, FusedConvSpec::forward, true, true));
  if (!g && why) {
    const std::string key = fused_spec(conv, FusedConvSpec::forward, prologue, stats).key();
    *why = conv.name + " (" + key + "): " + fused_convs_[key].refusal;
  }
  return g;
}

// Both forward graphs must be taken; the weight gradient through the batch norm is a graph where
// cuDNN takes it, else the ReLU's output is recomputed for cuDNN's plain one. A refused chain's
// batch norm keeps the reason (layer_kernels()).
bool CudaPlan::conv_bn_supported(const ConvBnRelu& f, bool has_prologue) {
  if (type_ != DType::f16) return false;
  std::string why;
  if (compute_capability() < 80)
    why = "cuDNN fuses a batch norm into a convolution's input from compute capability 8.0";
  else if (forward_graph(graph_.nodes[f.conv], has_prologue, true, &why) &&
           forward_graph(graph_.nodes[f.next_conv], true, false, &why))
    return true;
  unfolded_[f.batch_norm] = why;
  return false;
}

// The convolution's forward as a graph: its input through the batch norm and ReLU of the chain
// it ends (prologue_bn), its output's statistics for the chain it begins (stats_bn).
void CudaPlan::compile_folded_conv_forward(const Node& node) {
  NodeState& s = nodes_[node.id];
  const int in_bn = tensors_.prologue_bn[node.id], out_bn = tensors_.stats_bn[node.id];
  s.fused_forward = std::make_unique<FusedConvCall>();
  s.fused_forward->conv = forward_graph(node, in_bn >= 0, out_bn >= 0);
  if (!s.fused_forward->conv) throw std::logic_error("cuDNN refused a graph it took before");
  workspace_bytes_ = std::max(workspace_bytes_, s.fused_forward->conv->workspace_bytes());
  const bool unread_stats = out_bn < 0 && s.fused_forward->conv->spec().stats;
  if (unread_stats) s.stat_sums = DeviceBuffer(2 * node.out.c * sizeof(float));
  if (in_bn >= 0) {
    std::shared_ptr<FusedConv> filter = fused_conv(fused_spec(node, FusedConvSpec::weight_gradient, true, false));
    if (filter) {
      s.fused_filter = std::make_unique<FusedConvCall>();
      s.fused_filter->conv = filter;
      workspace_bytes_ = std::max(workspace_bytes_, filter->workspace_bytes());
    } else {  // the input recomputed into scratch for cuDNN's plain weight gradient
      allocate_scratch(graph_.nodes[node.inputs[0]].out.elements() * esize());
    }
  }
  const int x = in_bn >= 0 ? graph_.nodes[in_bn].inputs[0] : node.inputs[0];
  push_forward(node.id, [this, &node, &s, in_bn, out_bn, x, unread_stats] {
    FusedConv::Pointers p{};
    p[FusedConv::x] = out_[x];
    p[FusedConv::w] = weights(node.id, 0);
    p[FusedConv::y] = out_[node.id];
    if (in_bn >= 0) {
      p[FusedConv::scale] = folded_scale(in_bn);
      p[FusedConv::bias] = folded_bias(in_bn);
    }
    if (out_bn >= 0 || unread_stats) {
      DeviceBuffer& sums = unread_stats ? s.stat_sums : nodes_[out_bn].stat_sums;
      if (!unread_stats) CUDA_CHECK(cudaMemsetAsync(sums.data(), 0, sums.bytes(), stream_));
      p[FusedConv::sum] = sums.as<float>();
      p[FusedConv::sqsum] = sums.as<float>() + node.out.c;
    }
    s.fused_forward->run(cudnn_, p, workspace_.data());
  });
}

// The weight gradient of a convolution that applies a batch norm and ReLU to its input: a graph
// with the same prologue, or cuDNN's plain one on the input recomputed into scratch (xd describes it).
void CudaPlan::run_folded_filter_gradient(const Node& node, void* dw, cudnnTensorDescriptor_t xd) {
  const int in_bn = tensors_.prologue_bn[node.id], x = graph_.nodes[in_bn].inputs[0];
  NodeState& s = nodes_[node.id];
  if (s.fused_filter) {
    FusedConv::Pointers p{};
    p[FusedConv::x] = out_[x];
    p[FusedConv::w] = dw;
    p[FusedConv::y] = diff_[node.id];
    p[FusedConv::scale] = folded_scale(in_bn);
    p[FusedConv::bias] = folded_bias(in_bn);
    s.fused_filter->run(cudnn_, p, workspace_.data());
    return;
  }
  const Shape& in = graph_.nodes[x].out;
  bn_relu_apply(out_[x], folded_scale(in_bn), folded_bias(in_bn), scratch_.data(), in.n * in.h * in.w, in.c, stream_);
  const float one = 1.0f, zero = 0.0f;
  CUDA_CHECK(cudnnConvolutionBackwardFilter(cudnn_, &one, xd, scratch_.data(), s.out->d, diff_[node.id],
                                            s.conv_filter->d, s.algos.backward_filter, workspace_.data(),
                                            s.algos.workspace, &zero, s.filter->d, dw));
}

void* CudaPlan::folded_scale(int bn) { return nodes_[bn].scale_bias.data(); }
void* CudaPlan::folded_bias(int bn) {
  return nodes_[bn].scale_bias.as<char>() + graph_.nodes[bn].out.c * sizeof(__half);
}

// The batch norm of a folded chain: its statistics (summed by the convolution before) into the
// scale and bias the convolution after applies; in inference those of the running statistics.
// Backward: the ReLU's and its own from the ReLU's gradient (the next convolution's data
// gradient) and the first convolution's output.
void CudaPlan::compile_folded_batch_norm(const Node& node) {
  NodeState& s = nodes_[node.id];
  const int64_t c = node.out.c, rows = node.out.n * node.out.h * node.out.w;
  s.stat_sums = DeviceBuffer(2 * c * sizeof(float));
  s.scale_bias = DeviceBuffer(2 * c * sizeof(__half));
  s.saved_mean = DeviceBuffer(c * sizeof(float));
  s.saved_inv_var = DeviceBuffer(c * sizeof(float));  // here 1 / sqrt(var + eps), as cuDNN's
  // the backward's partial sums and coefficients live in the cuDNN workspace while it runs
  workspace_bytes_ = std::max(workspace_bytes_, bn_relu_backward_scratch_bytes(rows, c));
  const int x = node.inputs[0];
  bn_relu_check(c, {out_[x], diff_[node.id], diff_[x], folded_scale(node.id), folded_bias(node.id)});
  const float eps = static_cast<float>(node.batch_norm.epsilon), momentum = static_cast<float>(node.batch_norm.momentum);
  push_forward(
      node.id,
      [this, &node, &s, c, rows, eps, momentum] {
        bn_finalize_training(s.stat_sums.as<float>(), s.stat_sums.as<float>() + c, master(node.id, 0),
                             master(node.id, 1), buffer(node.id, 0), buffer(node.id, 1), s.saved_mean.as<float>(),
                             s.saved_inv_var.as<float>(), folded_scale(node.id), folded_bias(node.id), c, rows,
                             momentum, eps, stream_);
      },
      [this, &node, c, eps] {
        bn_finalize_inference(master(node.id, 0), master(node.id, 1), buffer(node.id, 0), buffer(node.id, 1),
                              folded_scale(node.id), folded_bias(node.id), c, eps, stream_);
      });
  const bool acc = accumulates(node, 0);
  push_backward(node.id, [this, &node, &s, c, rows, x, acc] {
    bn_relu_backward(out_[x], diff_[node.id], folded_scale(node.id), folded_bias(node.id), s.saved_mean.as<float>(),
                     s.saved_inv_var.as<float>(), master(node.id, 0), grad(node.id, 0), grad(node.id, 1), diff_[x],
                     rows, c, acc, workspace_.data(), stream_);
    ready(node);
  });
}

}  // namespace cnnbench::cuda
