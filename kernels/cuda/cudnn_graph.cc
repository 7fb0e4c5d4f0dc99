#include "kernels/cuda/cudnn_graph.h"

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.h"

namespace cnnbench::cuda {

namespace {

// Unique ids of the tensors a launch binds (FusedConv::Role + 1) and of the virtual ones.
constexpr int64_t uid_of(FusedConv::Role r) { return r + 1; }
constexpr int64_t scaled_uid = 101, biased_uid = 102, activated_uid = 103, conv_out_uid = 104, out_biased_uid = 105,
                  unmasked_uid = 106;

// cuDNN's status as text, for the reason a graph is refused.
struct Refusal {
  std::string what;
};

void ok(cudnnStatus_t s, const char* step) {
  if (s != CUDNN_STATUS_SUCCESS) throw Refusal{std::string(step) + ": " + cudnnGetErrorString(s)};
}

template <typename T>
void set(const BackendDesc& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
         const T* values, const char* step) {
  ok(cudnnBackendSetAttribute(d.get(), name, type, count, values), step);
}

void set_desc(const BackendDesc& d, cudnnBackendAttributeName_t name, const BackendDesc& value, const char* step) {
  cudnnBackendDescriptor_t v = value.get();
  set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v, step);
}

// NCHW extents, NHWC strides (a per-channel tensor is 1 x C x 1 x 1).
std::unique_ptr<BackendDesc> tensor(int64_t uid, cudnnDataType_t type, int64_t n, int64_t c, int64_t h, int64_t w,
                                    bool is_virtual = false) {
  auto t = std::make_unique<BackendDesc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t dims[4] = {n, c, h, w}, strides[4] = {c * h * w, 1, w * c, c}, alignment = 16;
  set(*t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "tensor type");
  set(*t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, "tensor dimensions");
  set(*t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides, "tensor strides");
  set(*t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor id");
  set(*t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, "tensor alignment");
  const bool v = is_virtual;
  set(*t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v, "tensor virtual");
  ok(cudnnBackendFinalize(t->get()), "tensor");
  return t;
}

// An op of `mode` computed in fp32 on the tensors given as (attribute, tensor) pairs (null
// tensors left out); the mode's descriptor joins `keep`.
std::unique_ptr<BackendDesc> pointwise_op(
    cudnnPointwiseMode_t mode,
    std::initializer_list<std::pair<cudnnBackendAttributeName_t, const BackendDesc*>> tensors,
    std::vector<std::unique_ptr<BackendDesc>>& keep) {
  keep.push_back(std::make_unique<BackendDesc>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
  const BackendDesc& desc = *keep.back();
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  set(desc, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
  set(desc, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f32, "pointwise precision");
  ok(cudnnBackendFinalize(desc.get()), "pointwise descriptor");
  auto op = std::make_unique<BackendDesc>(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set_desc(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, desc, "pointwise op");
  for (const auto& [name, tensor] : tensors)
    if (tensor) set_desc(*op, name, *tensor, "pointwise tensor");
  ok(cudnnBackendFinalize(op->get()), "pointwise op");
  return op;
}

// y = mode(x, b) (b null for a unary mode).
std::unique_ptr<BackendDesc> pointwise(cudnnPointwiseMode_t mode, const BackendDesc& x, const BackendDesc* b,
                                       const BackendDesc& y, std::vector<std::unique_ptr<BackendDesc>>& keep) {
  return pointwise_op(mode,
                      {{CUDNN_ATTR_OPERATION_POINTWISE_XDESC, &x}, {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b},
                       {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, &y}},
                      keep);
}

// dx = the backward of `mode` at x applied to dy (RELU_BWD: dy where x > 0).
std::unique_ptr<BackendDesc> pointwise_backward(cudnnPointwiseMode_t mode, const BackendDesc& x, const BackendDesc& dy,
                                                const BackendDesc& dx, std::vector<std::unique_ptr<BackendDesc>>& keep) {
  return pointwise_op(mode,
                      {{CUDNN_ATTR_OPERATION_POINTWISE_XDESC, &x}, {CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, &dy},
                       {CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, &dx}},
                      keep);
}

std::unique_ptr<BackendDesc> convolution(const FusedConvSpec& s) {
  auto d = std::make_unique<BackendDesc>(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t dims = 2, dilation[2] = {1, 1}, stride[2] = {s.stride, s.stride}, pad[2] = {s.pad_h, s.pad_w};
  set(*d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, "convolution type");
  set(*d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, "convolution mode");
  set(*d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims, "convolution dimensions");
  set(*d, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation, "convolution dilation");
  set(*d, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride, "convolution stride");
  set(*d, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad, "convolution padding");
  set(*d, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad, "convolution padding");
  ok(cudnnBackendFinalize(d->get()), "convolution descriptor");
  return d;
}

std::string status_text(cudnnStatus_t s) { return cudnnGetErrorString(s); }

}  // namespace

std::string FusedConvSpec::key() const {
  std::string text = direction == forward ? "fwd" : direction == weight_gradient ? "wgrad" : "dgrad";
  for (const int64_t v : {n, c, h, w, k, r, s, p, q, pad_h, pad_w, stride}) text.append(":").append(std::to_string(v));
  return text + (prologue ? ":bn_relu_in" : "") + (stats ? ":stats_out" : "") + (bias_relu ? ":bias_relu_out" : "") +
         (relu_mask ? ":relu_mask" : "") + (deterministic ? ":deterministic" : "");
}

BackendDesc::BackendDesc(cudnnBackendDescriptorType_t type) { CUDA_CHECK(cudnnBackendCreateDescriptor(type, &d_)); }
BackendDesc::~BackendDesc() {
  if (d_) cudnnBackendDestroyDescriptor(d_);
}

FusedConv::~FusedConv() = default;

// The prologue's intermediate values are asked for in fp32 first (cuDNN's recommendation), then
// in fp16 (its support tables say "all tensors involved" of a convolution's main-loop fusion are
// half).
std::vector<std::shared_ptr<FusedConv>> FusedConv::build_all(cudnnHandle_t handle, const FusedConvSpec& s, size_t most,
                                                             double budget_sec, std::string* why,
                                                             const EngineChoice* only) {
  std::string first;
  for (int mid = 0; mid < (s.prologue ? 2 : 1); ++mid) {  // fp32 between the ops, else (a prologue) fp16
    if (only && only->mid != mid) continue;
    if (auto f = build(handle, s, mid, most, budget_sec, why, only); !f.empty()) return f;
    if (first.empty() && why) first = *why;
  }
  if (why && !first.empty()) *why = first;
  return {};
}

std::shared_ptr<FusedConv> FusedConv::build(cudnnHandle_t handle, const FusedConvSpec& s, std::string* why) {
  const auto plans = build_all(handle, s, 1, 0, why);
  return plans.empty() ? nullptr : plans.front();
}

std::vector<std::shared_ptr<FusedConv>> FusedConv::build(cudnnHandle_t handle, const FusedConvSpec& s, int mid_index,
                                                         size_t most, double budget_sec, std::string* why,
                                                         const EngineChoice* only) {
  auto first_made = std::chrono::steady_clock::now();  // reset when the first plan is made
  const cudnnDataType_t mid = mid_index == 0 ? CUDNN_DATA_FLOAT : CUDNN_DATA_HALF;
  std::vector<std::shared_ptr<FusedConv>> out;
  try {
    const cudnnDataType_t half = CUDNN_DATA_HALF, f32 = CUDNN_DATA_FLOAT;
    const bool fwd = s.direction == FusedConvSpec::forward;
    const bool data = s.direction == FusedConvSpec::data_gradient;
    if (s.bias_relu && (!fwd || s.prologue || s.stats))
      throw Refusal{"an output bias and ReLU only on a forward convolution with nothing else fused"};
    if (data != s.relu_mask || (data && (s.prologue || s.stats || s.bias_relu)))
      throw Refusal{"a data gradient only with a ReLU's mask and nothing else"};
    auto x = tensor(uid_of(Role::x), half, s.n, s.c, s.h, s.w);
    auto w = tensor(uid_of(Role::w), half, s.k, s.c, s.r, s.s);
    auto y = tensor(uid_of(Role::y), half, s.n, s.k, s.p, s.q);
    std::vector<std::unique_ptr<BackendDesc>> keep, ops;
    // with bias_relu the convolution writes a virtual fp32 tensor that the epilogue reads
    if (s.bias_relu) keep.push_back(tensor(conv_out_uid, mid, s.n, s.k, s.p, s.q, true));
    const BackendDesc& conv_y = s.bias_relu ? *keep.back() : *y;
    // with relu_mask the data gradient writes a virtual fp32 tensor that the ReLU's backward reads
    if (s.relu_mask) keep.push_back(tensor(unmasked_uid, mid, s.n, s.c, s.h, s.w, true));
    const BackendDesc* conv_dx = s.relu_mask ? keep.back().get() : nullptr;
    const BackendDesc* conv_x = x.get();
    if (s.prologue) {  // relu(x * scale + bias): the chain cuDNN takes in a convolution's main loop, in this order
      keep.push_back(tensor(uid_of(Role::scale), half, 1, s.c, 1, 1));
      keep.push_back(tensor(uid_of(Role::bias), half, 1, s.c, 1, 1));
      keep.push_back(tensor(scaled_uid, mid, s.n, s.c, s.h, s.w, true));
      keep.push_back(tensor(biased_uid, mid, s.n, s.c, s.h, s.w, true));
      keep.push_back(tensor(activated_uid, mid, s.n, s.c, s.h, s.w, true));
      const size_t t = keep.size() - 5;
      const BackendDesc *scale = keep[t].get(), *bias = keep[t + 1].get(), *scaled = keep[t + 2].get(),
                        *biased = keep[t + 3].get(), *activated = keep[t + 4].get();
      ops.push_back(pointwise(CUDNN_POINTWISE_MUL, *x, scale, *scaled, keep));
      ops.push_back(pointwise(CUDNN_POINTWISE_ADD, *scaled, bias, *biased, keep));
      ops.push_back(pointwise(CUDNN_POINTWISE_RELU_FWD, *biased, nullptr, *activated, keep));
      conv_x = activated;
    }
    keep.push_back(convolution(s));
    const BackendDesc& conv_desc = *keep.back();
    const float alpha = 1.0f, beta = 0.0f;
    auto conv = std::make_unique<BackendDesc>(fwd    ? CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR
                                              : data ? CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
                                                     : CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
    // the forward's x, w, y; the weight gradient's x, dw, dy; the data gradient's dx, w, dy
    const cudnnBackendAttributeName_t forward_names[6] = {
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,         CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
        CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
    const cudnnBackendAttributeName_t filter_names[6] = {
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
    const cudnnBackendAttributeName_t data_names[6] = {
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,         CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
        CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
    const cudnnBackendAttributeName_t* names = fwd ? forward_names : data ? data_names : filter_names;
    set_desc(*conv, names[0], conv_dx ? *conv_dx : *conv_x, "convolution x");
    set_desc(*conv, names[1], *w, "convolution w");
    set_desc(*conv, names[2], conv_y, "convolution y");
    set_desc(*conv, names[3], conv_desc, "convolution descriptor");
    set(*conv, names[4], CUDNN_TYPE_FLOAT, 1, &alpha, "convolution alpha");
    set(*conv, names[5], CUDNN_TYPE_FLOAT, 1, &beta, "convolution beta");
    ok(cudnnBackendFinalize(conv->get()), "convolution op");
    ops.push_back(std::move(conv));
    if (s.relu_mask) {  // dx = the unmasked gradient where the ReLU's output is positive
      keep.push_back(tensor(uid_of(Role::relu_out), half, s.n, s.c, s.h, s.w));
      ops.push_back(pointwise_backward(CUDNN_POINTWISE_RELU_BWD, *keep.back(), *conv_dx, *x, keep));
    }
    if (s.bias_relu) {  // y = relu(conv + bias), in the epilogue
      keep.push_back(tensor(uid_of(Role::out_bias), half, 1, s.k, 1, 1));
      const BackendDesc* bias = keep.back().get();
      keep.push_back(tensor(out_biased_uid, mid, s.n, s.k, s.p, s.q, true));
      const BackendDesc* biased = keep.back().get();
      ops.push_back(pointwise(CUDNN_POINTWISE_ADD, conv_y, bias, *biased, keep));
      ops.push_back(pointwise(CUDNN_POINTWISE_RELU_FWD, *biased, nullptr, *y, keep));
    }
    if (fwd && s.stats) {  // the output's per-channel sum and sum of squares, in the epilogue
      keep.push_back(tensor(uid_of(Role::sum), f32, 1, s.k, 1, 1));
      const BackendDesc* sum = keep.back().get();
      keep.push_back(tensor(uid_of(Role::sqsum), f32, 1, s.k, 1, 1));
      auto stats = std::make_unique<BackendDesc>(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR);
      const cudnnGenStatsMode_t mode = CUDNN_GENSTATS_SUM_SQSUM;
      set(*stats, CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE, 1, &mode, "statistics mode");
      set(*stats, CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f32, "statistics precision");
      set_desc(*stats, CUDNN_ATTR_OPERATION_GENSTATS_XDESC, *y, "statistics x");
      set_desc(*stats, CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, *sum, "statistics sum");
      set_desc(*stats, CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, *keep.back(), "statistics sum of squares");
      ok(cudnnBackendFinalize(stats->get()), "statistics op");
      ops.push_back(std::move(stats));
    }
    // the operation graph
    auto graph_owner = std::make_unique<BackendDesc>(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    const BackendDesc& graph = *graph_owner;
    std::vector<cudnnBackendDescriptor_t> op_list;
    for (const auto& op : ops) op_list.push_back(op->get());
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle");
    set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(op_list.size()),
        op_list.data(), "graph ops");
    ok(cudnnBackendFinalize(graph.get()), "operation graph");

    // The engines cuDNN's heuristics rank for this graph (mode A, else B, else its fallback
    // list), those whose plans this device finalizes, in that order.
    std::string last = "no engine";
    const cudnnBackendHeurMode_t modes[3] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B, CUDNN_HEUR_MODE_FALLBACK};
    for (int mode_index = 0; mode_index < 3; ++mode_index) {
      const cudnnBackendHeurMode_t mode = modes[mode_index];
      if (!out.empty()) break;
      if (only && only->mode != mode_index) continue;
      BackendDesc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
      set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph, "heuristics graph");
      set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode, "heuristics mode");
      if (const cudnnStatus_t st = cudnnBackendFinalize(heur.get()); st != CUDNN_STATUS_SUCCESS) {
        last = "heuristics: " + status_text(st);
        continue;
      }
      // how many configurations it ranks (the count, asking for none), then that many
      int64_t got = 0;
      if (const cudnnStatus_t st = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &got, nullptr);
          st != CUDNN_STATUS_SUCCESS || got <= 0) {
        last = "heuristics results: " + (st != CUDNN_STATUS_SUCCESS ? status_text(st) : std::string("none"));
        continue;
      }
      std::vector<std::unique_ptr<BackendDesc>> configs;
      std::vector<cudnnBackendDescriptor_t> raw;
      for (int64_t i = 0; i < got; ++i) {
        configs.push_back(std::make_unique<BackendDesc>(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
        raw.push_back(configs.back()->get());
      }
      const int64_t asked = got;
      if (const cudnnStatus_t st = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, asked, &got, raw.data());
          st != CUDNN_STATUS_SUCCESS) {
        last = "heuristics results: " + status_text(st);
        continue;
      }
      got = std::min(got, asked);  // the attribute's count: only `asked` were written
      for (int64_t i = 0; i < got && out.size() < most; ++i) {
        if (only && only->position != i) continue;
        // the budget counts from the first plan made (building the graph and finalizing the
        // first, which compiles a runtime-fused engine's kernels, take their own time)
        const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - first_made).count();
        if (!out.empty() && spent > budget_sec) break;
        BackendDesc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        cudnnBackendDescriptor_t e = engine.get();
        int64_t n = 0, index = -1;
        const bool described = cudnnBackendGetAttribute(configs[i]->get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &e) == CUDNN_STATUS_SUCCESS;
        if (described) cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index);
        if (only && only->engine != index) {
          last = "the heuristics list another engine there now";
          continue;
        }
        if (s.deterministic) {  // an engine that may sum in another order each run is passed over
          cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
          int64_t count = 0;
          if (!described || cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                                     CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count,
                                                     notes) != CUDNN_STATUS_SUCCESS) {
            last = "engine notes unreadable";
            continue;
          }
          bool nondeterministic = false;
          for (int64_t j = 0; j < count; ++j) nondeterministic |= notes[j] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
          if (nondeterministic) {
            last = "no deterministic engine";
            continue;
          }
        }
        auto plan = std::make_unique<BackendDesc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        set(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "plan handle");
        set_desc(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, *configs[i], "plan engine");
        if (const cudnnStatus_t st = cudnnBackendFinalize(plan->get()); st != CUDNN_STATUS_SUCCESS) {
          last = "execution plan: " + status_text(st);
          continue;
        }
        std::shared_ptr<FusedConv> f(new FusedConv());
        f->spec_ = s;
        int64_t bytes = 0;
        if (const cudnnStatus_t st = cudnnBackendGetAttribute(plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                              CUDNN_TYPE_INT64, 1, &n, &bytes);
            st != CUDNN_STATUS_SUCCESS) {  // this engine only: the ones already made stay
          last = "plan workspace: " + status_text(st);
          continue;
        }
        f->workspace_ = static_cast<size_t>(bytes);
        f->engine_ = "engine " + std::to_string(index);
        f->choice_ = EngineChoice{mid_index, mode_index, i, index};
        f->plan_ = std::move(plan);
        f->config_ = std::move(configs[i]);
        out.push_back(std::move(f));
        if (out.size() == 1) first_made = std::chrono::steady_clock::now();
      }
    }
    if (out.empty()) {
      if (why) *why = last;
      return out;
    }
    // every descriptor stays alive as long as the plans made from them
    auto shared = std::make_shared<std::vector<std::unique_ptr<BackendDesc>>>();
    for (auto* group : {&keep, &ops})
      for (auto& d : *group) shared->push_back(std::move(d));
    for (auto* d : {&x, &w, &y, &graph_owner}) shared->push_back(std::move(*d));
    for (auto& f : out) f->graph_ = shared;
  } catch (const Refusal& r) {
    if (why) *why = r.what;
    out.clear();
  } catch (const std::exception& e) {  // a descriptor cuDNN would not create: the unfused way, not a failed run
    if (why) *why = e.what();
    out.clear();
  }
  return out;
}

void FusedConv::run(cudnnHandle_t handle, const Pointers& p, void* workspace, std::unique_ptr<BackendDesc>& pack,
                    Pointers& packed, void*& packed_workspace) const {
  if (!pack || p != packed || workspace != packed_workspace) {
    std::vector<int64_t> uids;
    std::vector<void*> pointers;
    for (int r = 0; r < roles; ++r)
      if (p[r]) {
        uids.push_back(uid_of(static_cast<Role>(r)));
        pointers.push_back(p[r]);
      }
    auto v = std::make_unique<BackendDesc>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    CUDA_CHECK(cudnnBackendSetAttribute(v->get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                        static_cast<int64_t>(uids.size()), uids.data()));
    CUDA_CHECK(cudnnBackendSetAttribute(v->get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                        static_cast<int64_t>(pointers.size()), pointers.data()));
    CUDA_CHECK(cudnnBackendSetAttribute(v->get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
    CUDA_CHECK(cudnnBackendFinalize(v->get()));
    pack = std::move(v);
    packed = p;
    packed_workspace = workspace;
  }
  CUDA_CHECK(cudnnBackendExecute(handle, plan_->get(), pack->get()));
}

}  // namespace cnnbench::cuda
