// ResNet 18/34/50/101/152 for 224x224 ImageNet. v1.5 (He et al. 2015 as torchvision, MLPerf
// and NVIDIA's examples build it): a bottleneck downsamples in its 3x3 conv; projection
// shortcuts (1x1 conv + batch norm) where the shape changes. v1 (the paper, tf_cnn_benchmarks'
// resnet50): the stride in the bottleneck's first 1x1 instead. v2 (He et al. 2016,
// tf_cnn_benchmarks' resnet50_v2): pre-activation, each block starting with batch norm and ReLU,
// its last conv and projection without batch norm, the sum without ReLU, one batch norm and ReLU
// after the last block; the stride in the first 1x1 as in tf_cnn_benchmarks' v2.
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

int bottleneck(GraphBuilder& b, int x, int64_t width, int64_t stride, ResNetVersion version, const std::string& name) {
  const int64_t in = b.shape(x).c, out = width * 4;
  const int64_t stride_1x1 = version == ResNetVersion::v1 ? stride : 1, stride_3x3 = stride / stride_1x1;
  int y = b.relu(conv_bn(b, x, width, 1, stride_1x1, name + ".conv1", name + ".bn1"), name + ".relu1");
  y = b.relu(conv_bn(b, y, width, 3, stride_3x3, name + ".conv2", name + ".bn2"), name + ".relu2");
  y = conv_bn(b, y, out, 1, 1, name + ".conv3", name + ".bn3");
  const int shortcut = (stride != 1 || in != out)
                           ? conv_bn(b, x, out, 1, stride, name + ".downsample.0", name + ".downsample.1")
                           : x;
  return b.relu(b.add(y, shortcut, name + ".add"), name + ".relu");
}

int bottleneck_v2(GraphBuilder& b, int x, int64_t width, int64_t stride, const std::string& name) {
  const int64_t in = b.shape(x).c, out = width * 4;
  const int preact = b.relu(b.batch_norm(x, name + ".preact_bn"), name + ".preact_relu");
  int y = b.relu(conv_bn(b, preact, width, 1, stride, name + ".conv1", name + ".bn1"), name + ".relu1");
  y = b.relu(conv_bn(b, y, width, 3, 1, name + ".conv2", name + ".bn2"), name + ".relu2");
  y = b.conv(y, out, 1, 1, 0, name + ".conv3");
  // tf_cnn_benchmarks' shortcut: the block's input itself, or a 1x1 projection of its pre-activation
  const int shortcut = (stride != 1 || in != out) ? b.conv(preact, out, 1, stride, 0, name + ".shortcut") : x;
  return b.add(y, shortcut, name + ".add");
}

}  // namespace

Graph build_resnet(int depth, int64_t batch_size, ResNetVersion version, const std::string& graph_name) {
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
  if (!use_bottleneck && version != ResNetVersion::v1_5)
    throw std::invalid_argument("resnet" + std::to_string(depth) + ": basic blocks come in one version");
  GraphBuilder b(graph_name.empty() ? "resnet" + std::to_string(depth) : graph_name, {batch_size, 3, 224, 224});
  int x = b.relu(conv_bn(b, b.input(), 64, 7, 2, "conv1", "bn1"), "relu");
  x = b.max_pool(x, 3, 2, 1, "maxpool");
  for (int stage = 0; stage < 4; ++stage)
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(i);
      const int64_t width = int64_t{64} << stage;
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      x = !use_bottleneck                     ? basic_block(b, x, width, stride, name)
          : version == ResNetVersion::v2 ? bottleneck_v2(b, x, width, stride, name)
                                              : bottleneck(b, x, width, stride, version, name);
    }
  if (version == ResNetVersion::v2) x = b.relu(b.batch_norm(x, "postact_bn"), "postact_relu");
  x = b.global_avg_pool(x, "avgpool");
  return b.finish(b.linear(x, 1000, "fc"));
}

}  // namespace cnnbench
