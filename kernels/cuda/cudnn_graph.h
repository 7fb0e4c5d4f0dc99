// kernels/cuda/cudnn_graph.h — convolutions with fused prologue and epilogue through cuDNN's
// graph (backend) API, for the conv -> batch norm -> ReLU -> conv chains of kernels/conv_bn_relu.h:
// a forward convolution that applies relu(x * scale + bias) per channel to its input as it reads
// it and/or sums its output's per-channel statistics (sum and sum of squares, fp32) as it writes
// it, and a weight gradient that applies the same prologue to its input; and, for a convolution
// with a bias that a ReLU follows (VGG's), one that adds the bias and applies the ReLU as it
// writes its output, instead of a second pass over it, and a data gradient that applies the
// backward of the ReLU whose output the convolution read. All fp16 NHWC; cuDNN
// supports these fusions from compute capability 8.0 through its runtime-compiled engines.
// Which graphs a device takes is only known when cuDNN is asked: build() says why not.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cnnbench::cuda {

struct FusedConvSpec {
  enum Direction { forward, weight_gradient, data_gradient } direction = forward;
  int64_t n = 0, c = 0, h = 0, w = 0;  // the input x (NHWC in memory)
  int64_t k = 0, r = 0, s = 0;         // the filter, k x r x s x c in memory
  int64_t p = 0, q = 0;                // the output's height and width
  int64_t pad_h = 0, pad_w = 0, stride = 1;
  bool prologue = false;  // the convolution reads relu(x * scale + bias), scale and bias fp16 per channel of x
  bool stats = false;     // forward only: sum and sum of squares of y per channel, fp32
  bool bias_relu = false;  // forward only, alone: y = relu(conv + bias), bias fp16 per channel of y
  bool relu_mask = false;  // data gradient only: dx masked where the ReLU output x was came out zero
  bool deterministic = false;  // only an engine without cuDNN's "nondeterministic" note

  std::string key() const;
};

// Where a plan's engine configuration stood among cuDNN's heuristics for its graph: enough to
// build that one alone again (the timed search's choices kept between runs, search_recall.cc).
struct EngineChoice {
  int mid = 0;           // the graph's intermediate type: 0 fp32, 1 fp16
  int mode = 0;          // the heuristics' mode: 0 A, 1 B, 2 fallback
  int64_t position = 0;  // in that mode's list
  int64_t engine = -1;   // cuDNN's global engine index there, checked when built again
};

// A cuDNN backend descriptor, destroyed with its owner.
class BackendDesc {
 public:
  explicit BackendDesc(cudnnBackendDescriptorType_t type);
  ~BackendDesc();
  BackendDesc(const BackendDesc&) = delete;
  BackendDesc& operator=(const BackendDesc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// One finalized execution plan for a FusedConvSpec, shared by every convolution of that shape.
class FusedConv {
 public:
  // The tensors a launch binds, by role: forward x, w, y; weight gradient x, dw, dy; data
  // gradient dx, w, dy; then scale and bias (with a prologue), sum and sum of squares (with
  // statistics), the output's bias (with bias_relu), the ReLU's output (with relu_mask). Unused
  // roles are null.
  enum Role { x = 0, w, y, scale, bias, sum, sqsum, out_bias, relu_out, roles };
  using Pointers = std::array<void*, roles>;

  // nullptr, with cuDNN's reason in *why, where no engine of this device takes the graph.
  static std::shared_ptr<FusedConv> build(cudnnHandle_t handle, const FusedConvSpec& spec, std::string* why);
  // Up to `most` plans of the graph, in cuDNN's heuristics' order, each of an engine
  // configuration this device finalizes (the first is build()'s); empty, with the reason in
  // *why, where none. Past the first, finalizing stops once `budget_sec` is spent (runtime-fused
  // engines compile their kernels then). With `only`, that engine configuration alone.
  static std::vector<std::shared_ptr<FusedConv>> build_all(cudnnHandle_t handle, const FusedConvSpec& spec,
                                                           size_t most, double budget_sec, std::string* why,
                                                           const EngineChoice* only = nullptr);
  ~FusedConv();

  size_t workspace_bytes() const { return workspace_; }
  const std::string& engine() const { return engine_; }  // "engine 12" (cuDNN's global index)
  const EngineChoice& choice() const { return choice_; }
  const FusedConvSpec& spec() const { return spec_; }
  // Runs on the handle's stream; `pack` caches the variant pack of one call site's pointers.
  void run(cudnnHandle_t handle, const Pointers& pointers, void* workspace, std::unique_ptr<BackendDesc>& pack,
           Pointers& packed, void*& packed_workspace) const;

 private:
  FusedConv() = default;
  static std::vector<std::shared_ptr<FusedConv>> build(cudnnHandle_t handle, const FusedConvSpec& spec,
                                                       int mid, size_t most, double budget_sec, std::string* why,
                                                       const EngineChoice* only);
  FusedConvSpec spec_;
  // the graph, its ops and tensors, shared by the plans of its engine configurations (declared
  // first: destroyed after the plan and configuration made from it)
  std::shared_ptr<std::vector<std::unique_ptr<BackendDesc>>> graph_;
  std::unique_ptr<BackendDesc> plan_, config_;
  size_t workspace_ = 0;
  std::string engine_;
  EngineChoice choice_;
};

// One call site of a FusedConv: its variant pack is built on the first launch and rebuilt only
// if the pointers change (a plan's never do).
struct FusedConvCall {
  std::shared_ptr<FusedConv> conv;
  std::unique_ptr<BackendDesc> pack;
  FusedConv::Pointers packed{};
  void* packed_workspace = nullptr;
  void run(cudnnHandle_t handle, const FusedConv::Pointers& p, void* workspace) {
    conv->run(handle, p, workspace, pack, packed, packed_workspace);
  }
};

}  // namespace cnnbench::cuda
