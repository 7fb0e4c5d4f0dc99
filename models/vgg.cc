// VGG 11/16/19 for 224x224 ImageNet (Simonyan & Zisserman 2014), laid out as torchvision:
// 3x3 convs with bias and ReLU, 2x2 max pools, classifier 25088-4096-4096-1000.
// Dropout in the classifier is not modelled (it has no parameters and ~0 FLOPs).
#include <stdexcept>
#include <string>

#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {

Graph build_vgg(int depth, int64_t batch_size) {
  std::vector<int> convs_per_stage;
  switch (depth) {
    case 11: convs_per_stage = {1, 1, 2, 2, 2}; break;
    case 16: convs_per_stage = {2, 2, 3, 3, 3}; break;
    case 19: convs_per_stage = {2, 2, 4, 4, 4}; break;
    default: throw std::invalid_argument("vgg depth must be 11, 16 or 19, not " + std::to_string(depth));
  }
  GraphBuilder b("vgg" + std::to_string(depth), {batch_size, 3, 224, 224});
  int x = b.input();
  int64_t channels = 64;
  int conv_index = 0;
  for (size_t stage = 0; stage < convs_per_stage.size(); ++stage) {
    for (int i = 0; i < convs_per_stage[stage]; ++i) {
      const std::string name = "features.conv" + std::to_string(++conv_index);
      x = b.relu(b.conv(x, channels, 3, 1, 1, name, /*bias=*/true), name + ".relu");
    }
    x = b.max_pool(x, 2, 2, 0, "features.pool" + std::to_string(stage + 1));
    channels = std::min<int64_t>(channels * 2, 512);
  }
  x = b.relu(b.linear(x, 4096, "classifier.fc1", true, Init::normal_0_01), "classifier.relu1");
  x = b.relu(b.linear(x, 4096, "classifier.fc2", true, Init::normal_0_01), "classifier.relu2");
  return b.finish(b.linear(x, 1000, "classifier.fc3", true, Init::normal_0_01));
}

}  // namespace cnnbench
