// kernels/conv_bn_relu.h — where a plan may fold a batch norm and the ReLU after it into the
// convolutions on either side (conv -> batch norm -> ReLU -> conv): the first convolution sums
// its output's per-channel statistics as it writes it, and the second applies the normalisation
// and the ReLU to its input as it reads it, so the batch norm's and the ReLU's outputs are never
// stored. That is the first two convolutions of every ResNet bottleneck and the first of every
// basic block. The cuda plan runs each such chain through cuDNN's graph API in fp16
// (kernels/cuda/); finding them is a question about the graph alone, so it is answered (and
// tested) here.
#pragma once

#include <vector>

#include "models/graph.h"

namespace cnnbench {

struct ConvBnRelu {
  int conv = -1, batch_norm = -1, relu = -1, next_conv = -1;
};

// Every batch norm whose input is an ungrouped convolution without bias that nothing else reads,
// read by nothing but a ReLU (max(0, x), not ReLU6) that nothing but another such convolution
// reads; none of the four is the graph's output. In graph order of the batch norms.
inline std::vector<ConvBnRelu> find_conv_bn_relu(const Graph& g) {
  const std::vector<std::vector<int>> consumers = g.consumers();
  const auto plain_conv = [&](int n) {
    const Node& c = g.nodes[n];
    return c.kind == OpKind::conv && c.conv.groups == 1 && !c.conv.bias && n != g.output;
  };
  const auto only_reader = [&](int n) { return n != g.output && consumers[n].size() == 1 ? consumers[n][0] : -1; };
  std::vector<ConvBnRelu> found;
  for (const Node& bn : g.nodes) {
    if (bn.kind != OpKind::batch_norm || !plain_conv(bn.inputs[0]) || only_reader(bn.inputs[0]) != bn.id) continue;
    const int relu = only_reader(bn.id);
    if (relu < 0 || g.nodes[relu].kind != OpKind::relu) continue;
    const int next = only_reader(relu);
    if (next < 0 || !plain_conv(next)) continue;
    found.push_back({bn.inputs[0], bn.id, relu, next});
  }
  return found;
}

}  // namespace cnnbench
