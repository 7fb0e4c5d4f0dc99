// models/graph.h — the graph IR: a CNN as plain data.
//   OpKind, op attributes (ConvAttrs, PoolAttrs, BatchNormAttrs, LinearAttrs, ShortcutAttrs, DropoutAttrs, LrnAttrs),
//   Init and ParamSpec (a learnable tensor or a running-statistics buffer), Node, Graph.
// Nodes are stored in topological order; node 0 is the image input. The graph ends at the
// logits; the loss belongs to the plan that runs the graph.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/shape.h"

namespace cnnbench {

enum class OpKind {
  input,
  conv,             // 2-D convolution, kernel_h x kernel_w (1x7, 7x1 in inception3), grouped (depthwise), optional bias
  batch_norm,       // per-channel, learnable scale and shift, running mean/variance
  relu,
  max_pool,
  avg_pool,
  global_avg_pool,  // N x C x H x W -> N x C x 1 x 1
  linear,           // fully connected over the flattened C*H*W of its input
  add,              // elementwise sum of two inputs of the same shape (residuals)
  shortcut,         // CIFAR ResNet option A: subsample by stride, zero-pad channels (NASNet: from an offset)
  concat,           // its inputs' channels one after another (inception modules, densenet)
  dropout,          // training: each element zeroed with probability rate, the rest scaled by 1 / (1 - rate)
  lrn,              // local response normalisation across channels (tf.nn.lrn)
  relu6,            // min(max(x, 0), 6) (MobileNet v2)
};

const char* op_name(OpKind kind);

// groups > 1: the input's and output's channels split into that many groups, each output group
// computed from its input group alone (weights out_channels x in_channels / groups x kh x kw);
// groups = in_channels = out_channels is MobileNet's depthwise convolution.
struct ConvAttrs {
  int64_t out_channels = 0, kernel_h = 1, kernel_w = 1, stride = 1, pad_h = 0, pad_w = 0;
  bool bias = false;
  int64_t groups = 1;
  bool square() const { return kernel_h == kernel_w && pad_h == pad_w; }
};

// "k3s2p1" for a square convolution, "k1x7s1p0x3" (height x width) for a rectangular one, and
// "g32" appended for 32 groups: the name part of kernel-suite cases and algorithm caches.
std::string conv_label(const ConvAttrs& c);

struct PoolAttrs {
  int64_t kernel = 1, stride = 1, pad = 0;
  bool count_include_pad = true;  // average pooling only: divide by the full window
};

struct BatchNormAttrs {
  float epsilon = 1e-5f;
  float momentum = 0.1f;  // running = (1 - momentum) * running + momentum * batch
};

struct LinearAttrs {
  int64_t out_features = 0;
  bool bias = true;
};

// The mask of a step is a function of the plan's dropout seed, the node, the step and the
// element's index (kernels/dropout_mask.h): every backend draws the same one.
struct DropoutAttrs {
  float rate = 0.5f;
};

// tf.nn.lrn's parameters: s = bias + alpha * (sum of squares over the 2 * radius + 1 nearest
// channels), y = x / s^beta (alpha per term of the sum, not divided by the window as cuDNN's and
// oneDNN's is: the backends convert).
struct LrnAttrs {
  int64_t radius = 5;
  float bias = 1.0f, alpha = 1.0f, beta = 0.5f;
};

// y[n, pad_front + c, i, j] = x[n, c, i * stride + offset, j * stride + offset], 0 where that is
// outside x. offset 1 is NASNet's second path of a factorized reduction (TensorFlow pads the
// bottom and right by one, drops the first row and column, then subsamples).
struct ShortcutAttrs {
  int64_t out_channels = 0, stride = 1;  // input channels land at [pad_front, pad_front + C)
  int64_t pad_front = 0;
  int64_t offset = 0;  // the first row and column read
};

// How a tensor is filled before training starts (seeded, reproducible).
enum class Init {
  zeros,
  ones,
  he_normal_fan_out,  // N(0, 2 / (out_channels * k * k)): torchvision's ResNet/VGG convs
  he_normal_fan_in,   // N(0, 2 / (in_channels * k * k)): He et al. 2015
  normal_0_01,        // N(0, 0.01^2): VGG's classifier
  uniform_fan_in,     // U(-1/sqrt(fan_in), 1/sqrt(fan_in)): the common linear default
};

struct ParamSpec {
  std::string name;            // e.g. "layer1.0.conv1.weight"
  std::vector<int64_t> dims;   // plain layout: OIHW for conv weights, OI for linear
  Init init = Init::zeros;
  int64_t fan_in = 1, fan_out = 1;
  int64_t elements() const;
};

struct Node {
  int id = -1;
  std::string name;
  OpKind kind = OpKind::input;
  std::vector<int> inputs;
  Shape out;
  ConvAttrs conv;
  PoolAttrs pool;
  BatchNormAttrs batch_norm;
  LinearAttrs linear;
  ShortcutAttrs shortcut;
  DropoutAttrs dropout;
  LrnAttrs lrn;
  std::vector<ParamSpec> params;   // learnable: weight [, bias] or scale, shift
  std::vector<ParamSpec> buffers;  // not learned: running mean, running variance
  int64_t forward_macs = 0;        // multiply-accumulates of conv and linear, whole batch
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  int output = -1;  // the logits

  const Node& input() const { return nodes.front(); }
  const Node& logits() const { return nodes[output]; }
  int64_t batch_size() const { return input().out.n; }
  int64_t num_classes() const { return logits().out.c; }
  int64_t param_count() const;
  // Forward multiply-accumulates per image (conv + linear, as published figures count).
  int64_t forward_macs_per_image() const;
  // consumers()[i] lists the nodes that read node i's output.
  std::vector<std::vector<int>> consumers() const;
};

}  // namespace cnnbench
