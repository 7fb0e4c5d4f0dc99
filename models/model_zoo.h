// models/model_zoo.h — the model registry: name -> ModelInfo (input, classes, defaults) and a
// builder. An explicit table (no static registration), so no model is ever dropped by the linker.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/graph.h"

namespace cnnbench {

struct ModelInfo {
  std::string name;
  std::string dataset;  // the data the model is shaped for: imagenet, cifar10, fashion_mnist
  int64_t channels, image_size, classes;
  int64_t default_batch_size;
  Graph (*build)(int64_t batch_size);
  // > 0: the learning rate when none is given, in place of the data set's rule. trivial's one
  // output unit after 150528 inputs diverges at the ImageNet rule's 0.0125 (loss NaN by the 8th
  // step at batch 32); 0.0005 trains at batch 32 to 128 on 1 and 2 ranks, 0.002 does not.
  double default_learning_rate = 0;
  // which network the name is, where the name alone does not say ("ResNet-50 v1: ...")
  std::string network = "";
};

const std::vector<ModelInfo>& model_zoo();
// Where tf_cnn_benchmarks builds another network under this name, what the name is here and
// which model is tf_cnn_benchmarks' ("v1.5; tf_cnn_benchmarks' resnet50 is --model=resnet50_v1");
// empty for the others.
std::string tf_cnn_benchmarks_network(const std::string& name);
std::optional<ModelInfo> find_model(const std::string& name);
// The model of that name for that data set where the name has one per data set (alexnet: the
// ImageNet one, and a CIFAR-10 one as tf_cnn_benchmarks picks with --data_name=cifar10), else
// find_model(name).
std::optional<ModelInfo> find_model(const std::string& name, const std::string& dataset);
// Throws std::invalid_argument naming the known models if `name` is not one of them. classes > 0
// gives the head (the last linear layer) that many outputs instead of the model's own.
Graph build_model(const std::string& name, int64_t batch_size, int64_t classes = 0);
Graph build_model(const ModelInfo& model, int64_t batch_size, int64_t classes = 0);
// The graph with its logits layer (a linear layer nothing reads) resized to `classes` outputs:
// weight, bias and multiply-accumulates follow; everything before it is unchanged.
Graph with_classes(Graph graph, int64_t classes);

// The builders, one family per file.
Graph build_vgg(int depth, int64_t batch_size);          // 11, 16, 19 (torchvision layout)
enum class ResNetVersion { v1, v1_5, v2 };  // see models/resnet.cc
Graph build_resnet(int depth, int64_t batch_size, ResNetVersion version = ResNetVersion::v1_5,
                   const std::string& graph_name = "");  // 18, 34, 50, 101, 152; named resnetN unless given
Graph build_cifar_resnet(int depth, int64_t batch_size); // 20, 32, 44, 56, 110 (option A)
// The same layout on channels x size x size images (Fashion-MNIST: 1 x 28 x 28), named `name`.
Graph build_cifar_resnet(int depth, int64_t batch_size, int64_t channels, int64_t size, const std::string& name);
// tf_cnn_benchmarks' pre-activation CIFAR-10 ResNet of that depth (resnet20_v2 ...)
Graph build_cifar_resnet_v2(int depth, int64_t batch_size);
Graph build_googlenet(int64_t batch_size);               // tf_cnn_benchmarks' (no batch norm)
Graph build_inception3(int64_t batch_size);              // tf_cnn_benchmarks' Inception v3 (299 x 299)
Graph build_inception4(int64_t batch_size);              // tf_cnn_benchmarks' Inception v4 (299 x 299)
Graph build_mobilenet(int64_t batch_size);               // tf_cnn_benchmarks' MobileNet v2
Graph build_alexnet(int64_t batch_size);                 // tf_cnn_benchmarks' ImageNet AlexNet (227 x 227)
Graph build_alexnet_cifar10(int64_t batch_size);         // tf_cnn_benchmarks' CIFAR-10 AlexNet (LRN)
Graph build_overfeat(int64_t batch_size);                // tf_cnn_benchmarks' OverFeat (231 x 231)
Graph build_lenet(int64_t batch_size);                   // tf_cnn_benchmarks' LeNet-5 (28 x 28 colour)
// CIFAR-10 DenseNet of `depth` (3n + 4) layers growing by `growth` channels a layer (tf_cnn_benchmarks')
Graph build_cifar_densenet(int depth, int64_t growth, int64_t batch_size, const std::string& name);
// NASNet-A as tf_cnn_benchmarks builds it (models/nasnet.cc): nasnet_model.py's hyperparameters.
struct NasnetConfig {
  std::string name;
  int64_t image_size;
  bool imagenet_stem;  // a stride-2 convolution and two reduction cells; else one 3x3 convolution
  double stem_multiplier;
  int num_cells;       // normal cells; two reduction cells among them
  int64_t filters;     // of the first normal cells, doubled at each reduction
  bool skip_reduction_layer_input;
  float bn_epsilon;
  int64_t classes;
};
Graph build_nasnet(const NasnetConfig& config, int64_t batch_size);
Graph build_nasnet_mobile(int64_t batch_size);           // tf_cnn_benchmarks' nasnet (224 x 224)
Graph build_nasnet_large(int64_t batch_size);            // tf_cnn_benchmarks' nasnetlarge (331 x 331)
Graph build_nasnet_cifar(int64_t batch_size);            // tf_cnn_benchmarks' CIFAR-10 nasnet
Graph build_trivial(int64_t batch_size);                 // tf_cnn_benchmarks' (227 x 227)
Graph build_trivial_cifar10(int64_t batch_size);         // tf_cnn_benchmarks' CIFAR-10 one (32 x 32)
Graph build_small_cnn(int64_t batch_size);               // 28x28 grey, 10 classes

}  // namespace cnnbench
