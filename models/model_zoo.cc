#include "models/model_zoo.h"

#include <stdexcept>

namespace cnnbench {

const std::vector<ModelInfo>& model_zoo() {
  static const std::vector<ModelInfo> zoo = {
      {"vgg11", "imagenet", 3, 224, 1000, 64, [](int64_t n) { return build_vgg(11, n); }, 0.005, "VGG-A (Simonyan and Zisserman 2014), no batch norm"},
      {"vgg16", "imagenet", 3, 224, 1000, 64, [](int64_t n) { return build_vgg(16, n); }, 0.005, "VGG-D, no batch norm"},
      {"vgg19", "imagenet", 3, 224, 1000, 64, [](int64_t n) { return build_vgg(19, n); }, 0.005, "VGG-E, no batch norm"},
      {"resnet18", "imagenet", 3, 224, 1000, 64, [](int64_t n) { return build_resnet(18, n); }, 0, "basic blocks (He et al. 2015)"},
      {"resnet34", "imagenet", 3, 224, 1000, 64, [](int64_t n) { return build_resnet(34, n); }, 0, "basic blocks"},
      {"resnet50", "imagenet", 3, 224, 1000, 64, [](int64_t n) { return build_resnet(50, n); }, 0,
       "v1.5 (torchvision, MLPerf): the stride in each stage's first 3x3; tf_cnn_benchmarks' resnet50 is resnet50_v1"},
      {"resnet101", "imagenet", 3, 224, 1000, 32, [](int64_t n) { return build_resnet(101, n); }, 0, "v1.5"},
      {"resnet152", "imagenet", 3, 224, 1000, 32, [](int64_t n) { return build_resnet(152, n); }, 0, "v1.5"},
      {"resnet50_v1.5", "imagenet", 3, 224, 1000, 64,
       [](int64_t n) { return build_resnet(50, n, ResNetVersion::v1_5, "resnet50_v1.5"); }, 0,
       "resnet50 under tf_cnn_benchmarks' name for it"},
      {"resnet50_v1", "imagenet", 3, 224, 1000, 64,
       [](int64_t n) { return build_resnet(50, n, ResNetVersion::v1, "resnet50_v1"); }, 0,
       "v1 (He et al. 2015; tf_cnn_benchmarks' resnet50): the stride in each stage's first 1x1"},
      {"resnet101_v1", "imagenet", 3, 224, 1000, 32,
       [](int64_t n) { return build_resnet(101, n, ResNetVersion::v1, "resnet101_v1"); }, 0,
       "v1 (tf_cnn_benchmarks' resnet101)"},
      {"resnet152_v1", "imagenet", 3, 224, 1000, 32,
       [](int64_t n) { return build_resnet(152, n, ResNetVersion::v1, "resnet152_v1"); }, 0,
       "v1 (tf_cnn_benchmarks' resnet152)"},
      {"resnet50_v2", "imagenet", 3, 224, 1000, 64,
       [](int64_t n) { return build_resnet(50, n, ResNetVersion::v2, "resnet50_v2"); }, 0,
       "v2 (He et al. 2016, as tf_cnn_benchmarks builds it): pre-activation blocks"},
      {"resnet101_v2", "imagenet", 3, 224, 1000, 32,
       [](int64_t n) { return build_resnet(101, n, ResNetVersion::v2, "resnet101_v2"); }, 0, "v2, pre-activation"},
      {"resnet152_v2", "imagenet", 3, 224, 1000, 32,
       [](int64_t n) { return build_resnet(152, n, ResNetVersion::v2, "resnet152_v2"); }, 0, "v2, pre-activation"},
      {"googlenet", "imagenet", 3, 224, 1000, 32, build_googlenet, 0.005,
       "GoogLeNet (Szegedy et al. 2014) as tf_cnn_benchmarks builds it: no batch norm, no auxiliary heads"},
      {"inception3", "imagenet", 3, 299, 1000, 32, build_inception3, 0.005,
       "Inception v3 (Szegedy et al. 2015) as tf_cnn_benchmarks builds it: 299x299, batch norm, no auxiliary head"},
      {"inception4", "imagenet", 3, 299, 1000, 32, build_inception4, 0.005,
       "Inception v4 (Szegedy et al. 2016) as tf_cnn_benchmarks builds it: 299x299, batch norm, dropout before the classifier"},
      {"nasnet", "imagenet", 3, 224, 1000, 32, build_nasnet_mobile, 0.005,
       "NASNet-A Mobile (Zoph et al. 2018, 4 @ 1056) as slim defines it: separable convolutions in 12 normal and 4 reduction cells, no auxiliary head"},
      {"nasnetlarge", "imagenet", 3, 331, 1000, 16, build_nasnet_large, 0.005,
       "NASNet-A Large (6 @ 4032) as slim defines it: 331x331, 18 normal and 4 reduction cells, no auxiliary head, no drop path"},
      {"mobilenet", "imagenet", 3, 224, 1000, 32, build_mobilenet, 0.005,
       "MobileNet v2 (Sandler et al. 2018) as tf_cnn_benchmarks builds it: depthwise convolutions, ReLU6, its own fully connected layer after the logits"},
      {"alexnet", "imagenet", 3, 227, 1000, 512, build_alexnet, 0.005,
       "AlexNet (Krizhevsky et al. 2012) as tf_cnn_benchmarks builds it: 227x227, no LRN, dropout in the classifier"},
      {"overfeat", "imagenet", 3, 231, 1000, 32, build_overfeat, 0.005,
       "OverFeat (Sermanet et al. 2014, fast model) as tf_cnn_benchmarks builds it: 231x231, no batch norm, dropout in the classifier"},
      {"lenet", "imagenet", 3, 28, 1000, 32, build_lenet, 0.005,
       "LeNet-5 as tf_cnn_benchmarks builds it (TensorFlow's MNIST tutorial network): ImageNet's classes at 28x28"},
      {"alexnet", "cifar10", 3, 32, 10, 128, build_alexnet_cifar10, 0,
       "tf_cnn_benchmarks' CIFAR-10 AlexNet (--data_name=cifar10): two 5x5 convolutions with LRN, 384 and 192 fully connected"},
      {"resnet20", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet(20, n); }, 0, "CIFAR-10 ResNet (He et al. 2015), option A shortcuts"},
      {"resnet32", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet(32, n); }, 0, "CIFAR-10 ResNet, option A"},
      {"resnet44", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet(44, n); }, 0, "CIFAR-10 ResNet, option A"},
      {"resnet56", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet(56, n); }, 0, "CIFAR-10 ResNet, option A"},
      {"resnet110", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet(110, n); }, 0, "CIFAR-10 ResNet, option A"},
      {"resnet20_v2", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet_v2(20, n); }, 0,
       "pre-activation CIFAR-10 ResNet (He et al. 2016) as tf_cnn_benchmarks builds it, option A"},
      {"resnet32_v2", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet_v2(32, n); }, 0, "pre-activation CIFAR-10 ResNet"},
      {"resnet44_v2", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet_v2(44, n); }, 0, "pre-activation CIFAR-10 ResNet"},
      {"resnet56_v2", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet_v2(56, n); }, 0, "pre-activation CIFAR-10 ResNet"},
      {"resnet110_v2", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet_v2(110, n); }, 0, "pre-activation CIFAR-10 ResNet"},
      {"densenet40_k12", "cifar10", 3, 32, 10, 64,
       [](int64_t n) { return build_cifar_densenet(40, 12, n, "densenet40_k12"); }, 0,
       "DenseNet (Huang et al. 2017), the paper's: 3 blocks of 12 layers, growth 12, no bottleneck"},
      {"densenet100_k12", "cifar10", 3, 32, 10, 64,
       [](int64_t n) { return build_cifar_densenet(100, 12, n, "densenet100_k12"); }, 0, "DenseNet, 3 blocks of 32 layers, growth 12"},
      {"densenet100_k24", "cifar10", 3, 32, 10, 64,
       [](int64_t n) { return build_cifar_densenet(100, 24, n, "densenet100_k24"); }, 0, "DenseNet, 3 blocks of 32 layers, growth 24"},
      {"nasnet", "cifar10", 3, 32, 10, 32, build_nasnet_cifar, 0.025,
       "CIFAR-10 NASNet-A (6 @ 768, --data_name=cifar10) as slim defines it: 18 normal and 2 reduction cells, no auxiliary head, no drop path"},
      {"trivial", "imagenet", 3, 227, 1000, 32, build_trivial, 0.005,
       "tf_cnn_benchmarks' trivial: three fully connected layers (1, 4096, 1000 outputs) on 227x227"},
      {"trivial", "cifar10", 3, 32, 10, 32, build_trivial_cifar10, 0.005,
       "tf_cnn_benchmarks' CIFAR-10 trivial (--data_name=cifar10): fully connected 1, 4096, 10 outputs"},
      {"small_cnn", "fashion_mnist", 1, 28, 10, 128, build_small_cnn, 0, "two convolutions with batch norm, two fully connected"},
      {"resnet20_fmnist", "fashion_mnist", 1, 28, 10, 128,
       [](int64_t n) { return build_cifar_resnet(20, n, 1, 28, "resnet20_fmnist"); }, 0,
       "resnet20 with a 1-channel stem, stages at 28, 14 and 7"},
  };
  return zoo;
}

std::string tf_cnn_benchmarks_network(const std::string& name) {
  // tf_cnn_benchmarks' resnet50/101/152 are v1 (the stride in each stage's first 1x1); cnnbench's
  // are v1.5, as torchvision and MLPerf train them: about 6% more multiply-accumulates
  for (const char* depth : {"50", "101", "152"})
    if (name == std::string("resnet") + depth)
      return "v1.5; tf_cnn_benchmarks' " + name + " is --model=" + name + "_v1";
  // tf_cnn_benchmarks' densenet code sizes each transition from its builder's channel count,
  // which a dense layer sets to 2k, not to the block's output: 24 or 48 channels leave each
  // transition, not 160 or more (and its current version cannot build them at all)
  struct Narrowed {
    const char *name, *params, *work;
  };
  for (const auto& [densenet, params, work] : {Narrowed{"densenet40_k12", "357,322", "0.57"},
                                               Narrowed{"densenet100_k12", "2,217,002", "0.54"},
                                               Narrowed{"densenet100_k24", "8,659,178", "0.54"}})
    if (name == densenet)
      return std::string("the paper's; tf_cnn_benchmarks' code narrows each transition to 2 x growth channels: ") +
             params + " parameters, " + work + "x the multiply-adds";
  return "";
}

std::optional<ModelInfo> find_model(const std::string& name) {
  for (const ModelInfo& info : model_zoo())
    if (info.name == name) return info;
  return std::nullopt;
}

std::optional<ModelInfo> find_model(const std::string& name, const std::string& dataset) {
  for (const ModelInfo& info : model_zoo())
    if (info.name == name && info.dataset == dataset) return info;
  return find_model(name);
}

Graph build_model(const std::string& name, int64_t batch_size, int64_t classes) {
  const auto info = find_model(name);
  if (!info) {
    std::string known;
    for (const ModelInfo& m : model_zoo()) known += (known.empty() ? "" : ", ") + m.name;
    throw std::invalid_argument("unknown model '" + name + "' (known: " + known + ")");
  }
  return build_model(*info, batch_size, classes);
}

Graph build_model(const ModelInfo& model, int64_t batch_size, int64_t classes) {
  Graph graph = model.build(batch_size);
  return classes > 0 && classes != graph.num_classes() ? with_classes(std::move(graph), classes) : graph;
}

Graph with_classes(Graph graph, int64_t classes) {
  if (classes < 1) throw std::invalid_argument("a model needs at least 1 class, not " + std::to_string(classes));
  Node& head = graph.nodes.at(graph.output);
  if (head.kind != OpKind::linear || graph.consumers()[head.id].size() != 0)
    throw std::invalid_argument(graph.name + ": its logits are not a linear layer's output");
  const int64_t in_features = head.params.at(0).dims.at(1);
  head.linear.out_features = classes;
  head.out.c = classes;
  for (ParamSpec& p : head.params) {
    p.dims.front() = classes;
    p.fan_out = classes;
  }
  head.forward_macs = head.out.n * in_features * classes;
  return graph;
}

}  // namespace cnnbench
