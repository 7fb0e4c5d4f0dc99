// kernels/param_layout.h — ParamLayout: where each learnable tensor and each running-statistics
// buffer of a graph lives in its arena. Parameters are laid out in backward order (the last
// layer first), so the gradients that backward produces first form a contiguous prefix: a
// fusion bucket is then a slice of the gradient arena.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/graph.h"

namespace cnnbench {

struct ArenaEntry {
  int node = -1;   // graph node that owns the tensor
  int index = 0;   // position in node.params (or node.buffers)
  const ParamSpec* spec = nullptr;
  int64_t offset = 0, elements = 0;
};

struct ParamLayout {
  std::vector<ArenaEntry> params;   // backward order
  std::vector<ArenaEntry> buffers;  // running mean/variance, same order
  int64_t param_elements = 0, buffer_elements = 0;
  // params_of_node[node] lists the indices into `params` of that node's tensors, in
  // node.params order; likewise buffers_of_node.
  std::vector<std::vector<int>> params_of_node, buffers_of_node;

  static ParamLayout of(const Graph& graph);
  const ArenaEntry& param(int node, int index) const { return params[params_of_node[node][index]]; }
  const ArenaEntry& buffer(int node, int index) const {
    return buffers[buffers_of_node[node][index]];
  }
};

// Fills parameters and buffers as their ParamSpec::init says. Each tensor draws from its own
// stream derived from `seed` and its name, so the result does not depend on the layout order.
void init_parameters(const ParamLayout& layout, float* params, float* buffers, uint64_t seed);

}  // namespace cnnbench
