// kernels/cuda/plan_report.cc — what CudaPlan says about its choices: the log header's note on
// the algorithm search and the fused graphs it kept, and per node for --layer_timing's kernels
// column the cuDNN algorithms, graphs and engines (with their timings) each direction runs.
#include "kernels/cuda/plan_internal.h"

#include <cstdio>
#include <string>

namespace cnnbench::cuda {

// For the log's "Backend:" line: how long choosing the convolutions' algorithms took (cuDNN's
// timed search runs every algorithm of each direction once per distinct shape: minutes are
// possible at large batches, and otherwise unexplained), and how many convolutions run the
// graphs with a ReLU that the search kept.
std::string CudaPlan::kernel_notes() const {
  int convs = 0, bias_relu = 0, dgrad_relu = 0;
  for (const Node& node : graph_.nodes) {
    if (node.kind != OpKind::conv) continue;
    ++convs;
    bias_relu += nodes_[node.id].algos.bias_relu != nullptr;
    dgrad_relu += nodes_[node.id].fused_data != nullptr;
  }
  if (convs == 0) return {};
  char text[160];
  std::snprintf(text, sizeof text, "convolution algorithms %s in %.1f s (%zu shapes)",
                timed_search_ ? "timed" : "from cuDNN's heuristics", search_sec_, algo_cache_.size());
  std::string s = text;
  if (choices_)  // PlanOptions::search_choices (--algorithm_cache)
    s += "; " + std::to_string(choices_read_) + " choices read from earlier searches, " + std::to_string(choices_added_) +
         " new";
  if (bias_relu > 0) s += "; " + std::to_string(bias_relu) + " convolutions add their bias and ReLU in a cuDNN graph";
  if (dgrad_relu > 0)
    s += "; " + std::to_string(dgrad_relu) + " data gradients do their input ReLU's backward in a cuDNN graph";
  return s;
}

namespace {

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor-op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor-op+conversion";
    case CUDNN_FMA_MATH: return "fma";
  }
  return "?";
}

template <size_t N>
std::string algo_name(int algo, const char* const (&names)[N]) {
  return algo >= 0 && static_cast<size_t>(algo) < N ? names[algo] : "algo " + std::to_string(algo);
}

}  // namespace

// "engine 12", and with a timed search "engine 12 (timed: fastest of 4 engines, 0.321 ms)".
std::string CudaPlan::engine_text(const FusedConv& conv) const {
  const auto it = fused_convs_.find(conv.spec().key());
  if (it == fused_convs_.end() || it->second.ms <= 0) return conv.engine();
  char text[96];
  const size_t n = it->second.engines_timed;
  if (n == 0)
    std::snprintf(text, sizeof text, " (timed in an earlier search: %.3f ms)", it->second.ms);
  else if (n == 1)
    std::snprintf(text, sizeof text, " (timed: its only engine, %.3f ms)", it->second.ms);
  else
    std::snprintf(text, sizeof text, " (timed: fastest of %zu engines, %.3f ms)", n, it->second.ms);
  return conv.engine() + text;
}

// "fwd IMPLICIT_PRECOMP_GEMM (tensor-op), data ALGO_1 (tensor-op), filter ALGO_1 (default), workspace 12 MiB":
// cuDNN's names for the algorithms the plan chose, so that a profile can be read against a benchmark.
std::string CudaPlan::layer_kernels(int id) const {
  const Node& node = graph_.nodes[id];
  if (node.kind == OpKind::batch_norm) {
    if (const int add = tensors_.fused_into_add[id]; add >= 0)  // its time is the add's (it runs at the add's place)
      return "cuDNN batch norm + add + ReLU, timed as " + graph_.nodes[add].name;
    if (const int next = tensors_.bn_into_conv[id]; next >= 0)
      return "folded: statistics summed by " + graph_.nodes[node.inputs[0]].name + ", normalised + ReLU by " +
             graph_.nodes[next].name + " as it reads its input";
    std::string s = nodes_[id].bn_ops == CUDNN_BATCHNORM_OPS_BN_ACTIVATION ? "cuDNN batch norm + ReLU" : "cuDNN batch norm";
    if (const auto it = unfolded_.find(id); it != unfolded_.end())
      s += " (not folded into its convolutions: " + it->second + ")";
    return s;
  }
  if (node.kind == OpKind::add && tensors_.fused_bn_of[id] >= 0)
    return "cuDNN batch norm + add + ReLU, with " + graph_.nodes[tensors_.fused_bn_of[id]].name;
  if (node.kind == OpKind::max_pool && tiled_max_pool(node))
    return "tiled max pool (cnnbench's kernels)" +
           (masking_pool(node.inputs[0]) == id ? ", doing " + graph_.nodes[node.inputs[0]].name + "'s backward"
                                               : std::string());
  if (node.kind == OpKind::max_pool && indexed_max_pool(node))
    return "max pool keeping its windows' maxima's places (cnnbench's kernels)";
  if (node.kind != OpKind::conv) return {};
  static const char* const fwd[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                    "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const data[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const filter[] = {"ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
  const ConvAlgos& a = nodes_[id].algos;
  const NodeState& ns = nodes_[id];
  std::string s = ns.fused_forward ? "fwd cuDNN graph " + engine_text(*ns.fused_forward->conv)
                                   : "fwd " + algo_name(a.forward, fwd) + " (" + math_name(a.forward_math) + ")";
  if (const int bn = tensors_.prologue_bn[id]; bn >= 0) s += " reading relu(" + graph_.nodes[bn].name + ")";
  if (const int bn = tensors_.stats_bn[id]; bn >= 0) s += " summing " + graph_.nodes[bn].name + "'s statistics";
  if (a.bias_relu) s += " adding the bias and ReLU";
  // a timed choice between the graph with the bias and ReLU and the plain convolution + add_bias()
  if (a.bias_relu_ms > 0 && a.plain_ms > 0) {
    char timed[160];
    std::snprintf(timed, sizeof timed, " (graph with bias + ReLU %.3f ms, conv + bias kernel %.3f ms)", a.bias_relu_ms,
                  a.plain_ms);
    s += timed;
  }
  if (ns.fused_data) {
    s += ", data cuDNN graph " + engine_text(*ns.fused_data->conv) + " doing " + graph_.nodes[node.inputs[0]].name +
         "'s backward";
  } else if (wants_grad(node.inputs[0])) {
    s += ", data " + algo_name(a.backward_data, data) + " (" + math_name(a.data_math) + ")";
  }
  if (a.dgrad_relu_ms > 0 && a.plain_dgrad_ms > 0) {
    char timed[160];
    std::snprintf(timed, sizeof timed, " (graph with the ReLU's backward %.3f ms, data gradient + ReLU kernel %.3f ms)",
                  a.dgrad_relu_ms, a.plain_dgrad_ms);
    s += timed;
  }
  s += ns.fused_filter ? ", filter cuDNN graph " + engine_text(*ns.fused_filter->conv)
                       : ", filter " + algo_name(a.backward_filter, filter) + " (" + math_name(a.filter_math) + ")";
  if (tensors_.prologue_bn[id] >= 0 && !ns.fused_filter) s += " on its input recomputed";
  if (node.inputs[0] == 0 && tensors_.input_channels != graph_.input().out.c) {
    s += ", input padded to " + std::to_string(tensors_.input_channels) + " channels";
    if (padding_ms_[0] > 0 && padding_ms_[1] > 0) {  // choose_input_padding() timed both widths
      char timed[96];
      std::snprintf(timed, sizeof timed, " (the input's convolutions %.3f ms at 4, %.3f ms at 8)", padding_ms_[0],
                    padding_ms_[1]);
      s += timed;
    }
  }
  return s + ", workspace " + std::to_string((a.workspace + (1 << 20) - 1) >> 20) + " MiB";
}

}  // namespace cnnbench::cuda
