// DenseNets for CIFAR-10 (Huang et al. 2017), the paper's network under tf_cnn_benchmarks' names
// (densenet40_k12, densenet100_k12, densenet100_k24): a 3x3 convolution to 16 channels, three
// dense blocks of (depth - 4) / 3 layers, each layer batch norm -> ReLU -> 3x3 convolution to k
// (the growth rate) channels concatenated onto its input, transitions of batch norm -> ReLU ->
// 1x1 convolution (same channels) -> ReLU -> 2x2 average pool between the blocks, and batch norm
// -> ReLU -> global average pool -> linear at the end. No bottlenecks, no compression (the paper's
// basic DenseNet). As tf_cnn_benchmarks: every convolution has a bias, the transition's has a ReLU
// after it (its conv() default), and the blocks' convolutions have none. Its transitions output
// 2 x growth channels (a slip in its channel count), 0.54-0.57x this work: model_zoo.cc's
// tf_cnn_benchmarks_network() says so in the log header.
#include <string>

#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {

Graph build_cifar_densenet(int depth, int64_t growth, int64_t batch_size, const std::string& name) {
  const int layers = (depth - 4) / 3;
  GraphBuilder b(name, {batch_size, 3, 32, 32});
  auto bn_relu = [&](int x, const std::string& at) { return b.relu(b.batch_norm(x, at + ".bn"), at + ".relu"); };
  int x = b.conv(b.input(), 16, 3, 1, 1, "conv1", true);
  for (int block = 1; block <= 3; ++block) {
    for (int i = 0; i < layers; ++i) {
      const std::string at = "block" + std::to_string(block) + "." + std::to_string(i);
      const int grown = b.conv(bn_relu(x, at), growth, 3, 1, 1, at + ".conv", true);
      x = b.concat({x, grown}, at + ".concat");
    }
    if (block == 3) break;
    const std::string at = "transition" + std::to_string(block);
    x = b.relu(b.conv(bn_relu(x, at), b.shape(x).c, 1, 1, 0, at + ".conv", true), at + ".conv_relu");
    x = b.avg_pool(x, 2, 2, 0, at + ".pool");
  }
  x = b.global_avg_pool(bn_relu(x, "final"), "avgpool");
  return b.finish(b.linear(x, 10, "fc"));
}

}  // namespace cnnbench
