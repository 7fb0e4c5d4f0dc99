#include "models/graph_builder.h"

#include <stdexcept>

namespace cnnbench {
namespace {

[[noreturn]] void refuse(const std::string& node, const std::string& why) {
  throw std::invalid_argument("node '" + node + "': " + why);
}

int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad,
                   const std::string& node) {
  if (kernel < 1 || stride < 1 || pad < 0) refuse(node, "kernel and stride must be >= 1, pad >= 0");
  if (in + 2 * pad < kernel)
    refuse(node, "window " + std::to_string(kernel) + " does not fit input extent " +
                     std::to_string(in) + " with pad " + std::to_string(pad));
  return (in + 2 * pad - kernel) / stride + 1;
}

}  // namespace

GraphBuilder::GraphBuilder(std::string graph_name, Shape input) {
  graph_.name = std::move(graph_name);
  if (input.n < 1 || input.c < 1 || input.h < 1 || input.w < 1)
    refuse("input", "shape " + input.str() + " has an empty dimension");
  Node node;
  node.id = 0;
  node.name = "input";
  node.kind = OpKind::input;
  node.out = input;
  graph_.nodes.push_back(node);
}

Node& GraphBuilder::append(OpKind kind, std::vector<int> inputs, const std::string& name) {
  for (int in : inputs)
    if (in < 0 || in >= static_cast<int>(graph_.nodes.size()))
      refuse(name, "input node " + std::to_string(in) + " does not exist");
  Node node;
  node.id = static_cast<int>(graph_.nodes.size());
  node.name = name;
  node.kind = kind;
  node.inputs = std::move(inputs);
  node.out = graph_.nodes[node.inputs.front()].out;
  graph_.nodes.push_back(std::move(node));
  return graph_.nodes.back();
}

int GraphBuilder::conv(int x, int64_t out_channels, int64_t kernel, int64_t stride, int64_t pad,
                       const std::string& name, bool bias, Init init) {
  return conv_rect(x, out_channels, kernel, kernel, stride, pad, pad, name, bias, init);
}

int GraphBuilder::conv_rect(int x, int64_t out_channels, int64_t kernel_h, int64_t kernel_w, int64_t stride,
                            int64_t pad_h, int64_t pad_w, const std::string& name, bool bias, Init init) {
  return grouped_conv(x, out_channels, kernel_h, kernel_w, stride, pad_h, pad_w, 1, name, bias, init);
}

int GraphBuilder::depthwise_conv(int x, int64_t kernel, int64_t stride, int64_t pad, const std::string& name) {
  const int64_t channels = shape(x).c;
  return grouped_conv(x, channels, kernel, kernel, stride, pad, pad, channels, name, false, Init::he_normal_fan_out);
}

int GraphBuilder::grouped_conv(int x, int64_t out_channels, int64_t kernel_h, int64_t kernel_w, int64_t stride,
                               int64_t pad_h, int64_t pad_w, int64_t groups, const std::string& name, bool bias,
                               Init init) {
  Node& node = append(OpKind::conv, {x}, name);
  const Shape in = node.out;
  if (out_channels < 1) refuse(name, "out_channels must be >= 1");
  if (groups < 1 || in.c % groups != 0 || out_channels % groups != 0)
    refuse(name, "groups must divide the input's " + std::to_string(in.c) + " and the output's " +
                     std::to_string(out_channels) + " channels");
  node.conv = {out_channels, kernel_h, kernel_w, stride, pad_h, pad_w, bias, groups};
  node.out = {in.n, out_channels, window_out(in.h, kernel_h, stride, pad_h, name),
              window_out(in.w, kernel_w, stride, pad_w, name)};
  // fans as torch.nn.init counts them from the weight's dims (out x in/groups x kh x kw)
  const int64_t fan_in = in.c / groups * kernel_h * kernel_w, fan_out = out_channels * kernel_h * kernel_w;
  node.params.push_back({name + ".weight", {out_channels, in.c / groups, kernel_h, kernel_w}, init, fan_in, fan_out});
  if (bias) node.params.push_back({name + ".bias", {out_channels}, Init::zeros, fan_in, fan_out});
  node.forward_macs = node.out.elements() * fan_in;
  return node.id;
}

int GraphBuilder::batch_norm(int x, const std::string& name, float epsilon, bool zero_scale) {
  Node& node = append(OpKind::batch_norm, {x}, name);
  const int64_t c = node.out.c;
  node.batch_norm.epsilon = epsilon;
  node.params.push_back({name + ".weight", {c}, zero_scale ? Init::zeros : Init::ones});
  node.params.push_back({name + ".bias", {c}, Init::zeros});
  node.buffers.push_back({name + ".running_mean", {c}, Init::zeros});
  node.buffers.push_back({name + ".running_var", {c}, Init::ones});
  return node.id;
}

int GraphBuilder::relu(int x, const std::string& name) {
  return append(OpKind::relu, {x}, name).id;
}

int GraphBuilder::relu6(int x, const std::string& name) {
  return append(OpKind::relu6, {x}, name).id;
}

int GraphBuilder::lrn(int x, int64_t radius, float bias, float alpha, float beta, const std::string& name) {
  Node& node = append(OpKind::lrn, {x}, name);
  if (radius < 0 || radius > 7) refuse(name, "lrn radius must be 0 to 7 (a window of at most 15 channels), not " + std::to_string(radius));
  if (!(bias > 0.0f) || !(alpha >= 0.0f) || !(beta >= 0.0f)) refuse(name, "lrn needs bias > 0, alpha >= 0 and beta >= 0");
  node.lrn = {radius, bias, alpha, beta};
  return node.id;
}

int GraphBuilder::dropout(int x, float rate, const std::string& name) {
  Node& node = append(OpKind::dropout, {x}, name);
  if (!(rate >= 0.0f && rate < 1.0f)) refuse(name, "dropout rate must be in [0, 1), not " + std::to_string(rate));
  if (node.out.h != 1 || node.out.w != 1)
    refuse(name, "dropout follows a fully connected layer here (an N x C x 1 x 1 input), not " + node.out.str());
  node.dropout.rate = rate;
  return node.id;
}

int GraphBuilder::max_pool(int x, int64_t kernel, int64_t stride, int64_t pad,
                           const std::string& name) {
  Node& node = append(OpKind::max_pool, {x}, name);
  if (pad * 2 > kernel) refuse(name, "pad must be at most half the kernel");
  node.pool = {kernel, stride, pad, true};
  node.out.h = window_out(node.out.h, kernel, stride, pad, name);
  node.out.w = window_out(node.out.w, kernel, stride, pad, name);
  return node.id;
}

int GraphBuilder::avg_pool(int x, int64_t kernel, int64_t stride, int64_t pad,
                           const std::string& name, bool count_include_pad) {
  Node& node = append(OpKind::avg_pool, {x}, name);
  if (pad * 2 > kernel) refuse(name, "pad must be at most half the kernel");
  node.pool = {kernel, stride, pad, count_include_pad};
  node.out.h = window_out(node.out.h, kernel, stride, pad, name);
  node.out.w = window_out(node.out.w, kernel, stride, pad, name);
  return node.id;
}

int GraphBuilder::global_avg_pool(int x, const std::string& name) {
  Node& node = append(OpKind::global_avg_pool, {x}, name);
  node.out.h = node.out.w = 1;
  return node.id;
}

int GraphBuilder::linear(int x, int64_t out_features, const std::string& name, bool bias,
                         Init init) {
  Node& node = append(OpKind::linear, {x}, name);
  if (out_features < 1) refuse(name, "out_features must be >= 1");
  const int64_t in_features = node.out.per_sample();
  node.linear = {out_features, bias};
  node.out = {node.out.n, out_features, 1, 1};
  node.params.push_back({name + ".weight", {out_features, in_features}, init, in_features, out_features});
  if (bias)
    node.params.push_back({name + ".bias", {out_features},
                           init == Init::uniform_fan_in ? Init::uniform_fan_in : Init::zeros,
                           in_features, out_features});
  node.forward_macs = node.out.n * in_features * out_features;
  return node.id;
}

int GraphBuilder::add(int a, int b, const std::string& name) {
  Node& node = append(OpKind::add, {a, b}, name);
  if (!(graph_.nodes[a].out == graph_.nodes[b].out))
    refuse(name, "adds shapes " + graph_.nodes[a].out.str() + " and " + graph_.nodes[b].out.str());
  return node.id;
}

int GraphBuilder::concat(const std::vector<int>& xs, const std::string& name) {
  if (xs.size() < 2) refuse(name, "concat needs at least two inputs");
  for (size_t i = 0; i < xs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (xs[i] == xs[j]) refuse(name, "concat takes each input once");
  Node& node = append(OpKind::concat, xs, name);
  int64_t channels = 0;
  for (int x : xs) {
    const Shape& s = graph_.nodes[x].out;
    if (s.n != node.out.n || s.h != node.out.h || s.w != node.out.w)
      refuse(name, "concatenates shapes " + node.out.str() + " and " + s.str() + " (batch, height and width must agree)");
    channels += s.c;
  }
  node.out.c = channels;
  return node.id;
}

int GraphBuilder::shortcut(int x, int64_t out_channels, int64_t stride, const std::string& name, int64_t offset) {
  Node& node = append(OpKind::shortcut, {x}, name);
  const Shape in = node.out;
  if (out_channels < in.c) refuse(name, "shortcut cannot drop channels");
  if (stride < 1) refuse(name, "stride must be >= 1");
  if (offset < 0 || offset >= stride) refuse(name, "offset must be >= 0 and below the stride");
  node.shortcut = {out_channels, stride, (out_channels - in.c) / 2, offset};
  node.out = {in.n, out_channels, (in.h - 1) / stride + 1, (in.w - 1) / stride + 1};
  return node.id;
}

Graph GraphBuilder::finish(int output) {
  if (output < 0 || output >= static_cast<int>(graph_.nodes.size()))
    refuse(graph_.name, "output node does not exist");
  if (output != static_cast<int>(graph_.nodes.size()) - 1)
    refuse(graph_.nodes[output].name, "the output (logits) must be the last node");
  graph_.output = output;
  return std::move(graph_);
}

}  // namespace cnnbench
