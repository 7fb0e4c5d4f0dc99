// Small networks: `trivial` (as tf_cnn_benchmarks': three affine layers on the flattened image,
// to measure everything but the convolutions), `lenet` (tf_cnn_benchmarks' LeNet-5, the
// TensorFlow MNIST tutorial's network, on 28 x 28 colour ImageNet images) and `small_cnn` for
// 28x28 grey images (Fashion-MNIST / MNIST): two conv-bn-relu-pool stages and a 128-unit hidden layer.
#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {

namespace {

// models/trivial_model.py there: the image flattened, fully connected to 1 and then 4096 units,
// each with ReLU (its affine()'s default; before 2026-11-29 they had none here), then the classes.
Graph trivial(int64_t batch_size, int64_t size, int64_t classes) {
  GraphBuilder b("trivial", {batch_size, 3, size, size});
  int x = b.relu(b.linear(b.input(), 1, "fc1"), "fc1.relu");
  x = b.relu(b.linear(x, 4096, "fc2"), "fc2.relu");
  return b.finish(b.linear(x, classes, "fc3"));
}

}  // namespace

Graph build_trivial(int64_t batch_size) { return trivial(batch_size, 227, 1000); }  // TrivialModel: 224 + 3
Graph build_trivial_cifar10(int64_t batch_size) { return trivial(batch_size, 32, 10); }

// models/lenet_model.py there: 5x5 convolutions of 32 and 64 channels ('SAME', bias, ReLU), each
// followed by a 2x2 stride-2 max pool, a fully connected layer of 512 with ReLU, then the classes.
Graph build_lenet(int64_t batch_size) {
  GraphBuilder b("lenet", {batch_size, 3, 28, 28});
  int x = b.relu(b.conv(b.input(), 32, 5, 1, 2, "conv1", true, Init::he_normal_fan_in), "relu1");
  x = b.max_pool(x, 2, 2, 0, "pool1");
  x = b.relu(b.conv(x, 64, 5, 1, 2, "conv2", true, Init::he_normal_fan_in), "relu2");
  x = b.max_pool(x, 2, 2, 0, "pool2");
  x = b.relu(b.linear(x, 512, "fc3"), "relu3");
  return b.finish(b.linear(x, 1000, "fc4"));
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
