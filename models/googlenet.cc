// GoogLeNet (Szegedy et al. 2014, "Going deeper with convolutions") as tf_cnn_benchmarks
// defines it: convolutions with bias and ReLU and no batch norm, nine inception modules (1x1,
// 1x1 -> 3x3, 1x1 -> 5x5 and 3x3 max-pool -> 1x1 branches joined along channels), no auxiliary
// heads, no dropout; a 7x7 average pool and the 1024 -> classes linear layer.
// tf_cnn_benchmarks pads 'SAME'; here the padding is symmetric with the same output sizes
// (TensorFlow puts the odd pixel of a stride-2 window's padding at the bottom and right).
#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {

namespace {

// Convolution + bias + ReLU: tf_cnn_benchmarks' conv() with its defaults.
int conv_relu(GraphBuilder& b, int x, int64_t channels, int64_t kernel, int64_t stride, const std::string& name) {
  return b.relu(b.conv(x, channels, kernel, stride, kernel / 2, name, true, Init::he_normal_fan_in), name + "_relu");
}

// inception_v1(cnn, k, l, m, n, p, q) of tf_cnn_benchmarks.
int inception(GraphBuilder& b, int x, int64_t k, int64_t l, int64_t m, int64_t n, int64_t p, int64_t q,
              const std::string& name) {
  const int one = conv_relu(b, x, k, 1, 1, name + ".1x1");
  const int three = conv_relu(b, conv_relu(b, x, l, 1, 1, name + ".3x3_reduce"), m, 3, 1, name + ".3x3");
  const int five = conv_relu(b, conv_relu(b, x, n, 1, 1, name + ".5x5_reduce"), p, 5, 1, name + ".5x5");
  const int pool = conv_relu(b, b.max_pool(x, 3, 1, 1, name + ".pool"), q, 1, 1, name + ".pool_proj");
  return b.concat({one, three, five, pool}, name);
}

}  // namespace

Graph build_googlenet(int64_t batch_size) {
  GraphBuilder b("googlenet", {batch_size, 3, 224, 224});
  int x = conv_relu(b, b.input(), 64, 7, 2, "conv1");
  x = b.max_pool(x, 3, 2, 1, "pool1");
  x = conv_relu(b, x, 64, 1, 1, "conv2_reduce");
  x = conv_relu(b, x, 192, 3, 1, "conv2");
  x = b.max_pool(x, 3, 2, 1, "pool2");
  x = inception(b, x, 64, 96, 128, 16, 32, 32, "inception3a");
  x = inception(b, x, 128, 128, 192, 32, 96, 64, "inception3b");
  x = b.max_pool(x, 3, 2, 1, "pool3");
  x = inception(b, x, 192, 96, 208, 16, 48, 64, "inception4a");
  x = inception(b, x, 160, 112, 224, 24, 64, 64, "inception4b");
  x = inception(b, x, 128, 128, 256, 24, 64, 64, "inception4c");
  x = inception(b, x, 112, 144, 288, 32, 64, 64, "inception4d");
  x = inception(b, x, 256, 160, 320, 32, 128, 128, "inception4e");
  x = b.max_pool(x, 3, 2, 1, "pool4");
  x = inception(b, x, 256, 160, 320, 32, 128, 128, "inception5a");
  x = inception(b, x, 384, 192, 384, 48, 128, 128, "inception5b");
  x = b.global_avg_pool(x, "pool5");  // tf_cnn_benchmarks' 7x7 average pool over the 7x7 map
  return b.finish(b.linear(x, 1000, "fc"));
}

}  // namespace cnnbench
