// kernels/cuda/search_recall.cc — the timed algorithm search's choices read back from an earlier
// run and added for later ones (PlanOptions::search_choices, kernels/search_choices.h). Three kinds:
//   conv <type, math, shape, fusions>   each direction's cuDNN algorithm and math type, and whether
//                                       the conv + bias + ReLU and dgrad + ReLU graphs won (with
//                                       the medians that decided it, for --layer_timing);
//   graph <FusedConvSpec::key()>        the fastest engine configuration of a cuDNN graph, where it
//                                       stood in cuDNN's heuristics, and its median;
//   input padding <type, shape, convs>  4 or 8 channels for a 16-bit RGB input, and both times.
// A choice is read back only on the same device identity (GPU, compute capability, cuDNN, driver)
// and only where it still holds: each algorithm's workspace is asked of cuDNN again for this
// shape (an algorithm it no longer takes, or one needing more than the search may borrow, and
// the shape is searched anew), and a graph is built from its one engine configuration, which
// must be the same engine. Anything else is searched as without the file.
#include "kernels/cuda/plan_internal.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "kernels/search_choices.h"

namespace cnnbench::cuda {

namespace {

// The kept values of a convolution: 6 algorithm and math numbers, the two graphs' flags and
// medians, the workspace the search measured.
constexpr int kConvValues = 13;

bool whole_in(double v, double below) { return v >= 0 && v < below && v == static_cast<double>(static_cast<int>(v)); }

// "a b c ..." -> exactly `n` numbers, or false.
bool numbers(const std::string& text, double* out, int n) {
  std::istringstream in(text);
  for (int i = 0; i < n; ++i)
    if (!(in >> out[i])) return false;
  std::string rest;
  return !(in >> rest);
}

std::string ms_text(float ms) {
  char t[32];
  std::snprintf(t, sizeof t, "%.4f", ms);
  return t;
}

}  // namespace

std::string CudaPlan::search_identity() const {
  int driver = 0;
  cudaDriverGetVersion(&driver);
  return cuda::device_name() + " sm_" + std::to_string(compute_capability()) + " cuDNN " +
         std::to_string(cudnnGetVersion()) + " driver " + std::to_string(driver);
}

const std::string* CudaPlan::recall(const std::string& key) {
  return identity_.empty() ? nullptr : choices_->find(identity_, key);
}

void CudaPlan::remember(const std::string& key, const std::string& value) {
  if (identity_.empty()) return;
  choices_->put(identity_, key, value);
  ++choices_added_;
}

std::string CudaPlan::conv_choice_key(const std::string& shape_key) const {
  return std::string("conv ") + dtype_name(type_) + (tf32_ ? ":tf32" : "") + (deterministic_ ? ":deterministic" : "") +
         ":" + shape_key;
}

// The convolution's algorithms as an earlier search chose them, each still taken by cuDNN for this
// shape within the search's workspace limit, and its graphs built again; false: search it.
bool CudaPlan::recall_algorithms(const Node& node, const std::string& shape_key, cudnnTensorDescriptor_t x,
                                 cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t y, ConvAlgos& a) {
  const std::string* value = recall(conv_choice_key(shape_key));
  double v[kConvValues];
  if (!value || !numbers(*value, v, kConvValues)) return false;
  // numbers cuDNN has names for (a math type it does not know would fail the descriptor, not the choice)
  const double maths = CUDNN_FMA_MATH + 1;
  if (!whole_in(v[0], CUDNN_CONVOLUTION_FWD_ALGO_COUNT) || !whole_in(v[2], CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT) ||
      !whole_in(v[4], CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT) || !whole_in(v[1], maths) || !whole_in(v[3], maths) ||
      !whole_in(v[5], maths) || !(v[12] >= 0 && v[12] < 0x1p50))
    return false;
  set_search_limit();
  ConvAlgos r;
  r.forward = static_cast<cudnnConvolutionFwdAlgo_t>(v[0]);
  r.forward_math = static_cast<cudnnMathType_t>(v[1]);
  r.backward_filter = static_cast<cudnnConvolutionBwdFilterAlgo_t>(v[2]);
  r.filter_math = static_cast<cudnnMathType_t>(v[3]);
  r.backward_data = static_cast<cudnnConvolutionBwdDataAlgo_t>(v[4]);
  r.data_math = static_cast<cudnnMathType_t>(v[5]);
  size_t bytes[3] = {};
  const auto fwd = conv_desc(node, r.forward_math), filter = conv_desc(node, r.filter_math),
             data = conv_desc(node, r.data_math);
  if (cudnnGetConvolutionForwardWorkspaceSize(cudnn_, x, w, fwd->d, y, r.forward, &bytes[0]) != CUDNN_STATUS_SUCCESS ||
      cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn_, x, y, filter->d, w, r.backward_filter, &bytes[1]) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn_, w, y, data->d, x, r.backward_data, &bytes[2]) !=
          CUDNN_STATUS_SUCCESS)
    return false;
  // the workspace the search measured (Find's), where cuDNN's figure for the shape is smaller
  r.workspace = std::max(static_cast<size_t>(v[12]), *std::max_element(bytes, bytes + 3));
  if (r.workspace > search_limit_) return false;
  // a graph that won is used only as its kept engine (timed then); one rebuilt untimed is not
  const auto graph = [this, &r](bool kept, const FusedConvSpec& spec) -> std::shared_ptr<FusedConv> {
    if (!kept) return nullptr;
    std::shared_ptr<FusedConv> g = fused_conv(spec);
    if (!g || fused_convs_[spec.key()].ms <= 0 || g->workspace_bytes() > search_limit_) return nullptr;
    r.workspace = std::max(r.workspace, g->workspace_bytes());
    return g;
  };
  if (v[6] != 0 && !bias_relu_candidate(node)) return false;
  if (v[9] != 0 && !dgrad_relu_candidate(node)) return false;
  r.bias_relu = graph(v[6] != 0, bias_relu_spec(node));
  r.dgrad_relu = graph(v[9] != 0, dgrad_relu_spec(node));
  if ((v[6] != 0 && !r.bias_relu) || (v[9] != 0 && !r.dgrad_relu)) return false;
  r.bias_relu_ms = static_cast<float>(v[7]);
  r.plain_ms = static_cast<float>(v[8]);
  r.dgrad_relu_ms = static_cast<float>(v[10]);
  r.plain_dgrad_ms = static_cast<float>(v[11]);
  a = r;
  ++choices_read_;
  return true;
}

void CudaPlan::remember_algorithms(const std::string& shape_key, const ConvAlgos& a) {
  std::ostringstream v;
  v << a.forward << ' ' << a.forward_math << ' ' << a.backward_filter << ' ' << a.filter_math << ' '
    << a.backward_data << ' ' << a.data_math << ' ' << (a.bias_relu ? 1 : 0) << ' ' << ms_text(a.bias_relu_ms) << ' '
    << ms_text(a.plain_ms) << ' ' << (a.dgrad_relu ? 1 : 0) << ' ' << ms_text(a.dgrad_relu_ms) << ' '
    << ms_text(a.plain_dgrad_ms) << ' ' << a.workspace;
  remember(conv_choice_key(shape_key), v.str());
}

// A graph's one engine configuration, as an earlier timed search kept it; false: build and time
// its candidates.
bool CudaPlan::recall_graph(const FusedConvSpec& spec, FusedGraph& g) {
  const std::string* value = recall("graph " + spec.key());
  double v[5];
  if (!value || !numbers(*value, v, 5) || !whole_in(v[0], 2) || !whole_in(v[1], 3) || !whole_in(v[2], 1e6) ||
      !whole_in(v[3], 1e6) || !(v[4] > 0 && v[4] < 1e6))
    return false;
  const EngineChoice only{static_cast<int>(v[0]), static_cast<int>(v[1]), static_cast<int64_t>(v[2]),
                          static_cast<int64_t>(v[3])};
  std::string why;
  std::vector<std::shared_ptr<FusedConv>> built = FusedConv::build_all(cudnn_, spec, 1, 0, &why, &only);
  set_search_limit();
  if (built.empty() || built.front()->workspace_bytes() > search_limit_) return false;  // then timed anew
  g.conv = built.front();
  g.ms = static_cast<float>(v[4]);
  ++choices_read_;
  return true;
}

void CudaPlan::remember_graph(const FusedConvSpec& spec, const FusedGraph& g) {
  if (!g.conv || g.ms <= 0) return;
  const EngineChoice& c = g.conv->choice();
  remember("graph " + spec.key(), std::to_string(c.mid) + " " + std::to_string(c.mode) + " " +
                                      std::to_string(c.position) + " " + std::to_string(c.engine) + " " +
                                      ms_text(g.ms));
}

std::string CudaPlan::padding_choice_key() const {
  const Shape& in = graph_.input().out;
  std::string key = std::string("input padding ") + dtype_name(type_) + (deterministic_ ? ":deterministic" : "");
  const int64_t dims[4] = {in.n, in.c, in.h, in.w};
  for (int i = 0; i < 4; ++i) key.append(i == 0 ? ":" : "x").append(std::to_string(dims[i]));
  for (const int u : consumers_[0]) key.append(":").append(fmt_key(in, graph_.nodes[u]));
  return key;
}

// 4 or 8 as an earlier search chose for this input and its convolutions, the times in
// padding_ms_; 0: none kept.
int64_t CudaPlan::recall_padding() {
  const std::string* value = recall(padding_choice_key());
  double v[3];
  if (!value || !numbers(*value, v, 3) || (v[0] != 4 && v[0] != 8)) return 0;
  padding_ms_[0] = static_cast<float>(v[1]);
  padding_ms_[1] = static_cast<float>(v[2]);
  ++choices_read_;
  return static_cast<int64_t>(v[0]);
}

void CudaPlan::remember_padding(int64_t channels) {
  remember(padding_choice_key(), std::to_string(channels) + " " + ms_text(padding_ms_[0]) + " " + ms_text(padding_ms_[1]));
}

}  // namespace cnnbench::cuda
