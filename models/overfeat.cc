// OverFeat (Sermanet et al. 2014, the "fast" model) as tf_cnn_benchmarks defines it
// (models/overfeat_model.py): 231 x 231 input, convolutions of 96 (11x11, stride 4), 256 (5x5),
// 512, 1024 and 1024 (3x3, padded) channels with bias and ReLU, 2x2 stride-2 max pools after the
// first, second and fifth, and fully connected layers of 3072 and 4096 with ReLU and dropout
// (rate 0.5) before the classes. No batch norm; weights start as alexnet's.
#include <string>

#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {

Graph build_overfeat(int64_t batch_size) {
  GraphBuilder b("overfeat", {batch_size, 3, 231, 231});
  auto conv = [&](int x, int64_t c, int64_t k, int64_t s, int64_t p, const std::string& name) {
    return b.relu(b.conv(x, c, k, s, p, name, true, Init::he_normal_fan_in), name + "_relu");
  };
  int x = conv(b.input(), 96, 11, 4, 0, "conv1");  // 56
  x = b.max_pool(x, 2, 2, 0, "pool1");              // 28
  x = conv(x, 256, 5, 1, 0, "conv2");               // 24
  x = b.max_pool(x, 2, 2, 0, "pool2");              // 12
  x = conv(x, 512, 3, 1, 1, "conv3");
  x = conv(x, 1024, 3, 1, 1, "conv4");
  x = conv(x, 1024, 3, 1, 1, "conv5");
  x = b.max_pool(x, 2, 2, 0, "pool5");              // 6 x 6 x 1024
  x = b.dropout(b.relu(b.linear(x, 3072, "fc6", true, Init::normal_0_01), "fc6_relu"), 0.5f, "fc6_dropout");
  x = b.dropout(b.relu(b.linear(x, 4096, "fc7", true, Init::normal_0_01), "fc7_relu"), 0.5f, "fc7_dropout");
  return b.finish(b.linear(x, 1000, "fc8", true, Init::normal_0_01));
}

}  // namespace cnnbench
