// CIFAR-10 ResNets (He et al. 2015, section 4.2): depth 6n+2, three stages of n basic blocks
// with 16, 32 and 64 channels on 32x32, 16x16 and 8x8 maps, and option A shortcuts: identity,
// subsampled by 2 and zero-padded with (out - in) / 2 channels on each side where the shape
// changes, so shortcuts add no parameters. On Fashion-MNIST's 1 x 28 x 28 images the stages run
// at 28, 14 and 7 (resnet20_fmnist).
// The v2 names (resnet20_v2 ... resnet110_v2) are tf_cnn_benchmarks' pre-activation CIFAR-10
// ResNets (He et al. 2016; models/resnet_model.py there, residual_block with version 'v2'): the
// stem convolution with batch norm and ReLU; each block batch norm and ReLU of its input, a 3x3
// convolution with batch norm and ReLU, a 3x3 convolution, and the sum with the option A shortcut
// of the block's input, without ReLU; batch norm and ReLU after the last block.
#include <stdexcept>
#include <string>

#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {

Graph build_cifar_resnet(int depth, int64_t batch_size) {
  return build_cifar_resnet(depth, batch_size, 3, 32, "resnet" + std::to_string(depth));
}

namespace {

// Both versions: the stem, 3 stages of n blocks, the head; `pre_activation` picks v2's blocks.
Graph cifar_resnet(int depth, int64_t batch_size, int64_t channels, int64_t size, const std::string& graph_name,
                   bool pre_activation) {
  if (depth < 8 || (depth - 2) % 6 != 0)
    throw std::invalid_argument("cifar resnet depth must be 6n+2 (20, 32, 44, 56, 110), not " + std::to_string(depth));
  const int n = (depth - 2) / 6;
  GraphBuilder b(graph_name, {batch_size, channels, size, size});
  auto conv = [&](int x, int64_t c, int64_t stride, const std::string& name) {
    return b.conv(x, c, 3, stride, 1, name, false, Init::he_normal_fan_in);
  };
  int x = b.relu(b.batch_norm(conv(b.input(), 16, 1, "conv1"), "bn1"), "relu");
  for (int stage = 0; stage < 3; ++stage)
    for (int i = 0; i < n; ++i) {
      const std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      const int64_t width = int64_t{16} << stage;
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      const int in = pre_activation ? b.relu(b.batch_norm(x, name + ".preact_bn"), name + ".preact_relu") : x;
      int y = b.relu(b.batch_norm(conv(in, width, stride, name + ".conv1"), name + ".bn1"), name + ".relu1");
      y = conv(y, width, 1, name + ".conv2");
      if (!pre_activation) y = b.batch_norm(y, name + ".bn2");
      const int shortcut = stride != 1 || b.shape(x).c != width ? b.shortcut(x, width, stride, name + ".shortcut") : x;
      x = b.add(y, shortcut, name + ".add");
      if (!pre_activation) x = b.relu(x, name + ".relu");
    }
  if (pre_activation) x = b.relu(b.batch_norm(x, "postact_bn"), "postact_relu");
  x = b.global_avg_pool(x, "avgpool");
  return b.finish(b.linear(x, 10, "fc"));
}

}  // namespace

Graph build_cifar_resnet(int depth, int64_t batch_size, int64_t channels, int64_t size, const std::string& name) {
  return cifar_resnet(depth, batch_size, channels, size, name, false);
}

Graph build_cifar_resnet_v2(int depth, int64_t batch_size) {
  return cifar_resnet(depth, batch_size, 3, 32, "resnet" + std::to_string(depth) + "_v2", true);
}

}  // namespace cnnbench
