// Small networks: `trivial` (as tf_cnn_benchmarks': three affine layers on the flattened image,
// to measure everything but the convolutions) and `small_cnn` for 28x28 grey images
// (Fashion-MNIST / MNIST): two conv-bn-relu-pool stages and a 128-unit hidden layer.
#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {

Graph build_trivial(int64_t batch_size) {
  GraphBuilder b("trivial", {batch_size, 3, 224, 224});
  int x = b.linear(b.input(), 1, "fc1");
  x = b.linear(x, 4096, "fc2");
  return b.finish(b.linear(x, 1000, "fc3"));
}

Graph build_small_cnn(int64_t batch_size) {
  GraphBuilder b("small_cnn", {batch_size, 1, 28, 28});
  int x = b.relu(b.batch_norm(b.conv(b.input(), 32, 3, 1, 1, "conv1"), "bn1"), "relu1");
  x = b.max_pool(x, 2, 2, 0, "pool1");
  x = b.relu(b.batch_norm(b.conv(x, 64, 3, 1, 1, "conv2"), "bn2"), "relu2");
  x = b.max_pool(x, 2, 2, 0, "pool2");
  x = b.relu(b.linear(x, 128, "fc1"), "relu3");
  return b.finish(b.linear(x, 10, "fc2"));
}

}  // namespace cnnbench
