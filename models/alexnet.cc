// AlexNet (Krizhevsky et al. 2012, one-GPU form) as tf_cnn_benchmarks defines it: 227 x 227
// input (224 + 3, so that the first 11x11 stride-4 convolution without padding gives 55 x 55),
// convolutions of 64, 192, 384, 384 and 256 channels with bias and ReLU, 3x3 stride-2 max pools
// after the first, second and fifth, and two fully connected layers of 4096 with ReLU and dropout
// (rate 0.5) before the 1000-way one. No local response normalisation (tf_cnn_benchmarks' ImageNet
// AlexNet has none). torchvision's alexnet differs (384 -> 256 -> 256 channels, dropout before
// each fully connected layer).
#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {

Graph build_alexnet(int64_t batch_size) {
  GraphBuilder b("alexnet", {batch_size, 3, 227, 227});
  auto conv = [&](int x, int64_t c, int64_t k, int64_t s, int64_t p, const std::string& name) {
    return b.relu(b.conv(x, c, k, s, p, name, true, Init::he_normal_fan_in), name + "_relu");
  };
  int x = conv(b.input(), 64, 11, 4, 0, "conv1");
  x = b.max_pool(x, 3, 2, 0, "pool1");
  x = conv(x, 192, 5, 1, 2, "conv2");
  x = b.max_pool(x, 3, 2, 0, "pool2");
  x = conv(x, 384, 3, 1, 1, "conv3");
  x = conv(x, 384, 3, 1, 1, "conv4");
  x = conv(x, 256, 3, 1, 1, "conv5");
  x = b.max_pool(x, 3, 2, 0, "pool5");
  for (const char* fc : {"fc6", "fc7"}) {
    x = b.relu(b.linear(x, 4096, fc, true, Init::normal_0_01), std::string(fc) + "_relu");
    x = b.dropout(x, 0.5f, std::string(fc) + "_dropout");
  }
  return b.finish(b.linear(x, 1000, "fc8", true, Init::normal_0_01));
}

}  // namespace cnnbench

namespace cnnbench {

// tf_cnn_benchmarks' AlexnetCifar10Model (cuda-convnet's layers-18pct): 5x5 convolutions of 64
// channels with bias and ReLU, each followed by local response normalisation (tf.nn.lrn with
// depth radius 4, bias 1, alpha 0.001 / 9, beta 0.75; the first after a 3x3 stride-2 max pool,
// the second before one), then fully connected 4096 -> 384 -> 192 with ReLU and the 10-way layer.
// tf_cnn_benchmarks pads the pools 'SAME'; here symmetrically, with the same 16 and 8 outputs.
Graph build_alexnet_cifar10(int64_t batch_size) {
  GraphBuilder b("alexnet", {batch_size, 3, 32, 32});
  auto lrn = [&](int x, const std::string& name) { return b.lrn(x, 4, 1.0f, 0.001f / 9.0f, 0.75f, name); };
  int x = b.relu(b.conv(b.input(), 64, 5, 1, 2, "conv1", true, Init::he_normal_fan_in), "conv1_relu");
  x = lrn(b.max_pool(x, 3, 2, 1, "pool1"), "norm1");
  x = b.relu(b.conv(x, 64, 5, 1, 2, "conv2", true, Init::he_normal_fan_in), "conv2_relu");
  x = b.max_pool(lrn(x, "norm2"), 3, 2, 1, "pool2");
  x = b.relu(b.linear(x, 384, "fc3"), "fc3_relu");
  x = b.relu(b.linear(x, 192, "fc4"), "fc4_relu");
  return b.finish(b.linear(x, 10, "fc5"));
}

}  // namespace cnnbench
