// ResNet 18/34/50/101/152 for 224x224 ImageNet (He et al. 2015) in the v1.5 form that
// torchvision and NVIDIA's examples use: a bottleneck downsamples in its 3x3 conv, not its
// first 1x1; projection shortcuts (1x1 conv + batch norm) where the shape changes.
#include <stdexcept>
#include <string>

#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {
namespace {

int conv_bn(GraphBuilder& b, int x, int64_t channels, int64_t kernel, int64_t stride, const std::string& conv,
            const std::string& bn) {
  return b.batch_norm(b.conv(x, channels, kernel, stride, kernel / 2, conv), bn);
}

int basic_block(GraphBuilder& b, int x, int64_t width, int64_t stride, const std::string& name) {
  const int64_t in = b.shape(x).c;
  int y = b.relu(conv_bn(b, x, width, 3, stride, name + ".conv1", name + ".bn1"), name + ".relu1");
  y = conv_bn(b, y, width, 3, 1, name + ".conv2", name + ".bn2");
  const int shortcut = (stride != 1 || in != width)
                           ? conv_bn(b, x, width, 1, stride, name + ".downsample.0", name + ".downsample.1")
                           : x;
  return b.relu(b.add(y, shortcut, name + ".add"), name + ".relu");
}

int bottleneck(GraphBuilder& b, int x, int64_t width, int64_t stride, const std::string& name) {
  const int64_t in = b.shape(x).c, out = width * 4;
  int y = b.relu(conv_bn(b, x, width, 1, 1, name + ".conv1", name + ".bn1"), name + ".relu1");
  y = b.relu(conv_bn(b, y, width, 3, stride, name + ".conv2", name + ".bn2"), name + ".relu2");
  y = conv_bn(b, y, out, 1, 1, name + ".conv3", name + ".bn3");
  const int shortcut = (stride != 1 || in != out)
                           ? conv_bn(b, x, out, 1, stride, name + ".downsample.0", name + ".downsample.1")
                           : x;
  return b.relu(b.add(y, shortcut, name + ".add"), name + ".relu");
}

}  // namespace

Graph build_resnet(int depth, int64_t batch_size) {
  std::vector<int> blocks;
  bool use_bottleneck = true;
  switch (depth) {
    case 18: blocks = {2, 2, 2, 2}; use_bottleneck = false; break;
    case 34: blocks = {3, 4, 6, 3}; use_bottleneck = false; break;
    case 50: blocks = {3, 4, 6, 3}; break;
    case 101: blocks = {3, 4, 23, 3}; break;
    case 152: blocks = {3, 8, 36, 3}; break;
    default: throw std::invalid_argument("resnet depth must be 18, 34, 50, 101 or 152, not " + std::to_string(depth));
  }
  GraphBuilder b("resnet" + std::to_string(depth), {batch_size, 3, 224, 224});
  int x = b.relu(conv_bn(b, b.input(), 64, 7, 2, "conv1", "bn1"), "relu");
  x = b.max_pool(x, 3, 2, 1, "maxpool");
  for (int stage = 0; stage < 4; ++stage)
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      const int64_t width = int64_t{64} << stage;
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      x = use_bottleneck ? bottleneck(b, x, width, stride, name) : basic_block(b, x, width, stride, name);
    }
  x = b.global_avg_pool(x, "avgpool");
  return b.finish(b.linear(x, 1000, "fc"));
}

}  // namespace cnnbench
