#include "bench/kernel_cases.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench::bench {

const char* direction_name(Direction d) {
  switch (d) {
    case Direction::forward: return "forward";
    case Direction::backward_data: return "backward_data";
    case Direction::backward_weights: return "backward_weights";
    case Direction::backward: return "backward";
  }
  return "?";
}

int64_t KernelCase::elements(Direction d) const {
  switch (d) {
    case Direction::forward: return forward_elements;
    case Direction::backward_data:
    case Direction::backward: return backward_data_elements;
    case Direction::backward_weights: return backward_weights_elements;
  }
  return 0;
}

namespace {

std::string dims(const Shape& s) { return fmt::format("{}x{}x{}", s.c, s.h, s.w); }

// The layer on an input of its shape, its fused ReLU (or ReLU6) after it where the model has one. A layer
// that reads another layer's output in the model reads one here too: a 1x1 convolution (not
// timed) feeds it, so that it gets its input in the layout a convolution leaves (a CPU plan's
// blocked channels, not the images' plain NCHW) and computes its data gradient. The model's
// first layer reads the images, as there, and has no data gradient. Below, another 1x1
// convolution reads the layer's output for the same reason.
// A concatenation reads one feeder per input, each with that input's channels; `in` is then
// its first input's shape and `input_channels` every input's channels.
KernelCase one_layer(const std::string& model, const Node& node, const Shape& in, const Node* fused, bool first,
                     const std::vector<int64_t>& input_channels = {}) {
  KernelCase k;
  k.model = model;
  k.kind = node.kind;
  GraphBuilder b(model + "_layer", in);
  const bool concat = node.kind == OpKind::concat;
  const int x = concat ? -1 : first ? b.input() : b.conv(b.input(), in.c, 1, 1, 0, "feeder");
  int y = -1;
  const int64_t in_elems = in.elements(), out_elems = node.out.elements();
  int64_t weights = 0;
  for (const ParamSpec& p : node.params) weights += p.elements();
  switch (node.kind) {
    case OpKind::conv: {
      const ConvAttrs& c = node.conv;
      y = b.grouped_conv(x, c.out_channels, c.kernel_h, c.kernel_w, c.stride, c.pad_h, c.pad_w, c.groups, "op", c.bias);
      k.name = fmt::format("conv_{}_{}_to{}", dims(in), conv_label(c), c.out_channels);
      break;
    }
    case OpKind::linear:
      y = b.linear(x, node.linear.out_features, "op", node.linear.bias);
      k.name = fmt::format("linear_{}_to{}", in.c * in.h * in.w, node.linear.out_features);
      break;
    case OpKind::batch_norm:
      y = b.batch_norm(x, "op");
      k.name = fmt::format("batch_norm_{}", dims(in));
      break;
    case OpKind::max_pool:
    case OpKind::avg_pool: {
      const PoolAttrs& p = node.pool;
      y = node.kind == OpKind::max_pool ? b.max_pool(x, p.kernel, p.stride, p.pad, "op")
                                        : b.avg_pool(x, p.kernel, p.stride, p.pad, "op", p.count_include_pad);
      k.name = fmt::format("{}_{}_k{}s{}p{}", op_name(node.kind), dims(in), p.kernel, p.stride, p.pad);
      break;
    }
    case OpKind::global_avg_pool:
      y = b.global_avg_pool(x, "op");
      k.name = fmt::format("global_avg_pool_{}", dims(in));
      break;
    case OpKind::add:  // the residual sum of the input and its ReLU (the ReLU is not timed)
      y = b.add(x, b.relu(x, "second_input"), "op");
      k.name = fmt::format("add_{}", dims(in));
      break;
    case OpKind::relu:
    case OpKind::relu6:
      y = node.kind == OpKind::relu6 ? b.relu6(x, "op") : b.relu(x, "op");
      k.name = fmt::format("{}_{}", op_name(node.kind), dims(in));
      k.fuse = false;
      break;
    case OpKind::shortcut:
      y = b.shortcut(x, node.shortcut.out_channels, node.shortcut.stride, "op", node.shortcut.offset);
      k.name = fmt::format("shortcut_{}_s{}_to{}{}", dims(in), node.shortcut.stride, node.shortcut.out_channels,
                           node.shortcut.offset ? fmt::format("_from{}", node.shortcut.offset) : "");
      break;
    case OpKind::concat: {
      std::vector<int> xs;
      for (size_t i = 0; i < input_channels.size(); ++i)
        xs.push_back(b.conv(b.input(), input_channels[i], 1, 1, 0, fmt::format("feeder{}", i)));
      y = b.concat(xs, "op");
      k.name = fmt::format("concat_{}x{}_{}", in.h, in.w, fmt::join(input_channels, "+"));
      break;
    }
    case OpKind::dropout:
      y = b.dropout(x, node.dropout.rate, "op");
      k.name = fmt::format("dropout_{}_p{}", dims(in), node.dropout.rate);
      break;
    case OpKind::lrn:
      y = b.lrn(x, node.lrn.radius, node.lrn.bias, node.lrn.alpha, node.lrn.beta, "op");
      k.name = fmt::format("lrn_{}_r{}", dims(in), node.lrn.radius);
      break;
    default:
      throw std::logic_error("no kernel case for " + node.name);
  }
  if (fused) {
    y = fused->kind == OpKind::relu6 ? b.relu6(y, "relu") : b.relu(y, "relu");
    k.name += std::string("_") + op_name(fused->kind);
  }
  // and a 1x1 convolution (not timed) reads its output: a graph's last output is plain NCHW,
  // which inside a model only the logits are
  if (node.kind != OpKind::linear) y = b.conv(y, b.shape(y).c, 1, 1, 0, "sink");
  k.graph = b.finish(y);
  const bool weighted = node.kind == OpKind::conv || node.kind == OpKind::linear;
  if (weighted) {
    k.directions = {Direction::forward, Direction::backward_data, Direction::backward_weights};
    if (first) k.directions = {Direction::forward, Direction::backward_weights};
    k.forward_flop = 2 * node.forward_macs;
    k.forward_elements = in_elems + weights + out_elems;
    k.backward_data_elements = out_elems + weights + in_elems;
    k.backward_weights_elements = in_elems + out_elems + weights;
  } else {
    k.directions = {Direction::forward, Direction::backward};
    // a concatenation reads as many elements as it writes
    const int64_t inputs = node.kind == OpKind::add ? 2 * in_elems : concat ? out_elems : in_elems;
    k.forward_elements = inputs + out_elems;
    // batch norm and ReLU read their input again for the gradient; the others need only the output's
    const bool rereads = node.kind == OpKind::batch_norm || node.kind == OpKind::relu || node.kind == OpKind::relu6;
    k.backward_data_elements = out_elems + inputs + (rereads ? in_elems : 0);
  }
  return k;
}

}  // namespace

std::vector<KernelCase> distinct_layers(const std::string& model, int64_t batch) {
  const Graph g = build_model(model, batch);
  const auto consumers = g.consumers();
  std::vector<KernelCase> out;
  std::set<std::string> seen;
  // a convolution, batch norm or residual add whose only consumer is a ReLU or ReLU6: the plan
  // fuses them; that consumer, else null
  auto fused_relu = [&](const Node& node) -> const Node* {
    if (node.kind != OpKind::conv && node.kind != OpKind::batch_norm && node.kind != OpKind::add) return nullptr;
    if (consumers[node.id].size() != 1) return nullptr;
    const Node& next = g.nodes[consumers[node.id][0]];
    return next.kind == OpKind::relu || next.kind == OpKind::relu6 ? &next : nullptr;
  };
  for (const Node& node : g.nodes) {
    if (node.kind == OpKind::input) continue;
    const Node& from = g.nodes[node.inputs.at(0)];
    if ((node.kind == OpKind::relu || node.kind == OpKind::relu6) && fused_relu(from)) continue;  // measured with what it follows
    // a model's ReLU right after a convolution, batch norm or a residual add is fused into it
    std::vector<int64_t> input_channels;
    for (int u : node.inputs) input_channels.push_back(g.nodes[u].out.c);
    KernelCase k = one_layer(model, node, from.out, fused_relu(node), from.kind == OpKind::input, input_channels);
    if (seen.insert(k.name).second) out.push_back(std::move(k));
  }
  return out;
}

}  // namespace cnnbench::bench
