#include "models/graph.h"

namespace cnnbench {

std::string conv_label(const ConvAttrs& c) {
  std::string label;
  auto pair = [&](char what, int64_t h, int64_t w) {
    label += what;
    label += std::to_string(h);
    if (h == w) return;
    label += 'x';
    label += std::to_string(w);
  };
  pair('k', c.kernel_h, c.kernel_w);
  pair('s', c.stride, c.stride);
  pair('p', c.pad_h, c.pad_w);
  if (c.groups > 1) {
    label += 'g';
    label += std::to_string(c.groups);
  }
  return label;
}

const char* op_name(OpKind kind) {
  switch (kind) {
    case OpKind::input: return "input";
    case OpKind::conv: return "conv";
    case OpKind::batch_norm: return "batch_norm";
    case OpKind::relu: return "relu";
    case OpKind::relu6: return "relu6";
    case OpKind::max_pool: return "max_pool";
    case OpKind::avg_pool: return "avg_pool";
    case OpKind::global_avg_pool: return "global_avg_pool";
    case OpKind::linear: return "linear";
    case OpKind::add: return "add";
    case OpKind::shortcut: return "shortcut";
    case OpKind::concat: return "concat";
    case OpKind::dropout: return "dropout";
    case OpKind::lrn: return "lrn";
  }
  return "unknown";
}

int64_t ParamSpec::elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t Graph::param_count() const {
  int64_t total = 0;
  for (const Node& node : nodes)
    for (const ParamSpec& p : node.params) total += p.elements();
  return total;
}

int64_t Graph::forward_macs_per_image() const {
  int64_t total = 0;
  for (const Node& node : nodes) total += node.forward_macs;
  return total / batch_size();
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> result(nodes.size());
  for (const Node& node : nodes)
    for (int in : node.inputs) result[in].push_back(node.id);
  return result;
}

}  // namespace cnnbench
