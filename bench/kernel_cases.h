// bench/kernel_cases.h — the kernels cnnbench_kernels_bench measures: every distinct layer of
// the models it is given (--cnnbench_models, resnet50, vgg16 and resnet20 unless named):
// convolutions (grouped and rectangular ones too), linear layers, batch norm with its fused ReLU
// or ReLU6, pooling, residual adds with their fused ReLU, lone ReLUs, CIFAR shortcuts, concats,
// each as a small graph that a backend compiles as it would the layer inside the model, with the
// work of each direction (FLOP, and bytes counting each tensor read or written once: a lower
// bound on the traffic).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/graph.h"

namespace cnnbench::bench {

enum class Direction { forward, backward_data, backward_weights, backward };
const char* direction_name(Direction d);

struct KernelCase {
  std::string model, name;  // "resnet50", "conv_256x56x56_k1s2p0_to512"
  OpKind kind = OpKind::conv;
  // input (-> feeder) -> the layer "op" (-> its fused ReLU "relu") (-> sink); feeder and sink
  // are 1x1 convolutions that give the layer the layouts it has inside the model
  Graph graph;
  // false for a ReLU or ReLU6 on its own (after a linear layer): the plan would otherwise fold
  // it into the feeder convolution, leaving it no time of its own
  bool fuse = true;
  std::vector<Direction> directions;
  int64_t forward_flop = 0;  // conv and linear: 2 x multiply-accumulates (each direction does as many)
  // tensor elements each direction reads or writes once (activations, weights and gradients)
  int64_t forward_elements = 0, backward_data_elements = 0, backward_weights_elements = 0;
  int64_t flop(Direction d) const { return d == Direction::backward ? 0 : forward_flop; }
  int64_t elements(Direction d) const;
};

// Every distinct layer of `model` at `batch` images (the same layer shape counted once).
std::vector<KernelCase> distinct_layers(const std::string& model, int64_t batch);

}  // namespace cnnbench::bench
