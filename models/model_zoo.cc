#include "models/model_zoo.h"

#include <stdexcept>

namespace cnnbench {

const std::vector<ModelInfo>& model_zoo() {
  static const std::vector<ModelInfo> zoo = {
      {"vgg11", "imagenet", 3, 224, 1000, 32, [](int64_t n) { return build_vgg(11, n); }},
      {"vgg16", "imagenet", 3, 224, 1000, 32, [](int64_t n) { return build_vgg(16, n); }},
      {"vgg19", "imagenet", 3, 224, 1000, 32, [](int64_t n) { return build_vgg(19, n); }},
      {"resnet18", "imagenet", 3, 224, 1000, 64, [](int64_t n) { return build_resnet(18, n); }},
      {"resnet34", "imagenet", 3, 224, 1000, 64, [](int64_t n) { return build_resnet(34, n); }},
      {"resnet50", "imagenet", 3, 224, 1000, 64, [](int64_t n) { return build_resnet(50, n); }},
      {"resnet101", "imagenet", 3, 224, 1000, 64, [](int64_t n) { return build_resnet(101, n); }},
      {"resnet152", "imagenet", 3, 224, 1000, 64, [](int64_t n) { return build_resnet(152, n); }},
      {"resnet20", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet(20, n); }},
      {"resnet32", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet(32, n); }},
      {"resnet44", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet(44, n); }},
      {"resnet56", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet(56, n); }},
      {"resnet110", "cifar10", 3, 32, 10, 128, [](int64_t n) { return build_cifar_resnet(110, n); }},
      {"trivial", "imagenet", 3, 224, 1000, 32, build_trivial, 0.0005},
      {"small_cnn", "fashion_mnist", 1, 28, 10, 128, build_small_cnn},
      {"resnet20_fmnist", "fashion_mnist", 1, 28, 10, 128,
       [](int64_t n) { return build_cifar_resnet(20, n, 1, 28, "resnet20_fmnist"); }},
  };
  return zoo;
}

std::optional<ModelInfo> find_model(const std::string& name) {
  for (const ModelInfo& info : model_zoo())
    if (info.name == name) return info;
  return std::nullopt;
}

Graph build_model(const std::string& name, int64_t batch_size, int64_t classes) {
  const auto info = find_model(name);
  if (!info) {
    std::string known;
    for (const ModelInfo& m : model_zoo()) known += (known.empty() ? "" : ", ") + m.name;
    throw std::invalid_argument("unknown model '" + name + "' (known: " + known + ")");
  }
  Graph graph = info->build(batch_size);
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
