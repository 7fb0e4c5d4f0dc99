// kernels/device_tensors.h — what a device plan stores for a graph, decided on the host: which
// ops run in place or fused (a ReLU on its input's buffer; in fp16 batch norm + add + ReLU, and
// convolution -> batch norm -> ReLU -> convolution folded into the two convolutions), the
// RGB input's stored channels (4 in fp16/bf16, for tensor cores), and where every activation and
// its gradient sit in one arena by their lifetimes (kernels/memory_plan.h). The cuda plan
// allocates what this decides; tests and estimates run it without a GPU.
//
// Lifetimes come from the graph, one node a time unit, on the two timelines a plan runs (a
// training step: set_input, forward in node order, loss(), backward in reverse node order; an
// inference step: set_input, forward, loss()). Every forward step of a node writes its output and
// reads its inputs'; every backward step of a node reads its output, its inputs' outputs and its
// own gradient, and writes (or adds to) its inputs' gradients. That is more than most ops touch,
// never less, so the plan can only keep a tensor too long. A tensor in place shares its root's
// buffer (alias_of): their uses count as one tensor's. Outputs live from their forward step to
// their own backward step; gradients from their first consumer's backward step to their own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/conv_bn_relu.h"
#include "kernels/dtype.h"
#include "models/graph.h"

namespace cnnbench {

struct DeviceTensorOptions {
  DType compute = DType::f32;
  bool fuse = true;               // PlanOptions::fuse
  bool pad_input_channels = true;  // PlanOptions::pad_input_channels
  int64_t padded_channels = 4;     // then the channels an RGB input is stored with: 4 or 8
  bool share_memory = true;       // PlanOptions::share_memory
  bool input_grad = false;        // PlanOptions::input_grad
  // Whether the device runs a conv -> batch norm -> ReLU -> conv chain folded into its two
  // convolutions (asked in graph order; `has_prologue`: the chain's first convolution already
  // applies an earlier chain's batch norm to its input). Unset: every fp16 chain whose channel
  // counts are multiples of 8.
  std::function<bool(const ConvBnRelu& chain, bool has_prologue)> conv_bn_supported;
};

struct DeviceTensors {
  std::vector<int> alias_of;        // the node whose buffer (and gradient) a node's output is
  std::vector<int> fused_relu_of;   // node -> the ReLU running in place on it, or -1
  std::vector<int> fused_into_add;  // batch norm -> the add whose BN+add+ReLU runs it, or -1
  std::vector<int> fused_bn_of;     // add -> its batch norm in BN+add+ReLU, or -1
  // conv -> batch norm -> ReLU -> conv folded into the convolutions: the batch norm's (and its
  // ReLU's) output is never stored (out_offset -1), its gradient is
  std::vector<int> bn_into_conv;  // batch norm -> the convolution applying it and its ReLU to its input, or -1
  std::vector<int> prologue_bn;   // convolution -> the batch norm (and ReLU) it applies to its input, or -1
  std::vector<int> stats_bn;      // convolution -> the batch norm whose statistics it sums from its output, or -1
  int64_t input_channels = 0;       // the stored input's channels (the images', or 4 or 8)
  bool logits_f32 = false;          // a final linear layer's logits are fp32
  // byte offsets in the arena, per node (its root's), -1 where it has none (no gradient, or an
  // output never stored)
  std::vector<int64_t> out_offset, diff_offset;
  size_t arena_bytes = 0, unshared_bytes = 0;

  Shape stored_shape(const Graph& g, int node) const;  // the input with input_channels
  DType out_type(const Graph& g, int node, DType compute) const;
};

DeviceTensors plan_device_tensors(const Graph& g, const DeviceTensorOptions& options);

}  // namespace cnnbench
