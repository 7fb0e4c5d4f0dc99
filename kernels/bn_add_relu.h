// kernels/bn_add_relu.h — where a plan may run a batch norm, the residual add after it and the
// ReLU after that as one op (y = relu(bn(x) + residual)): the end of every ResNet v1 block.
// The cuda plan hands each such triple to cuDNN's BN+add+activation in fp16 (kernels/cuda/);
// finding them is a question about the graph alone, so it is answered (and tested) here.
#pragma once

#include <algorithm>
#include <vector>

#include "models/graph.h"

namespace cnnbench {

struct BnAddRelu {
  int batch_norm = -1, add = -1, relu = -1;
  int residual = -1;  // the add's other input
};

// Every batch norm read only by an add, whose sum only a ReLU reads, where the add's other input
// is neither the batch norm nor its input, and the add is the residual's last reader in graph
// order (so that a fused backward, run at the add's place, writes the residual's gradient
// rather than adding to one another reader wrote first). The batch norm must be its input's only
// reader: its backward moves to the add's place, and its input's gradient is then written there
// (no reader between the two could add to it in the right order). Neither the batch norm nor the
// add may be the graph's output. In graph order of the adds.
inline std::vector<BnAddRelu> find_bn_add_relu(const Graph& g) {
  const std::vector<std::vector<int>> consumers = g.consumers();
  const auto only_reader = [&](int n, OpKind kind) {
    return n != g.output && consumers[n].size() == 1 && g.nodes[consumers[n][0]].kind == kind ? consumers[n][0] : -1;
  };
  std::vector<BnAddRelu> found;
  for (const Node& add : g.nodes) {
    if (add.kind != OpKind::add || add.inputs.size() != 2) continue;
    const int relu = only_reader(add.id, OpKind::relu);
    if (relu < 0) continue;
    for (int k = 0; k < 2; ++k) {
      const Node& bn = g.nodes[add.inputs[k]];
      const int residual = add.inputs[1 - k];
      if (bn.kind != OpKind::batch_norm || only_reader(bn.id, OpKind::add) != add.id) continue;
      if (residual == bn.id || residual == bn.inputs[0] || consumers[bn.inputs[0]].size() != 1) continue;
      const std::vector<int>& readers = consumers[residual];
      if (*std::max_element(readers.begin(), readers.end()) != add.id) continue;
      found.push_back({bn.id, add.id, relu, residual});
      break;
    }
  }
  return found;
}

}  // namespace cnnbench
