// models/graph_builder.h — GraphBuilder: appends nodes with shape inference and checks.
// Each call returns the new node's id; bad shapes throw std::invalid_argument naming the node.
#pragma once

#include <string>

#include "models/graph.h"

namespace cnnbench {

class GraphBuilder {
 public:
  GraphBuilder(std::string graph_name, Shape input);

  int input() const { return 0; }
  const Shape& shape(int node) const { return graph_.nodes.at(node).out; }

  int conv(int x, int64_t out_channels, int64_t kernel, int64_t stride, int64_t pad,
           const std::string& name, bool bias = false, Init init = Init::he_normal_fan_out);
  // A kernel_h x kernel_w convolution padded by pad_h rows and pad_w columns on each side.
  int conv_rect(int x, int64_t out_channels, int64_t kernel_h, int64_t kernel_w, int64_t stride, int64_t pad_h,
                int64_t pad_w, const std::string& name, bool bias = false, Init init = Init::he_normal_fan_out);
  // The general one: `groups` (dividing both channel counts) groups of channels, each output group
  // from its input group alone (models/graph.h, ConvAttrs).
  int grouped_conv(int x, int64_t out_channels, int64_t kernel_h, int64_t kernel_w, int64_t stride, int64_t pad_h,
                   int64_t pad_w, int64_t groups, const std::string& name, bool bias = false,
                   Init init = Init::he_normal_fan_out);
  // A depthwise convolution: one kernel x kernel filter per channel (groups = channels).
  int depthwise_conv(int x, int64_t kernel, int64_t stride, int64_t pad, const std::string& name);
  int batch_norm(int x, const std::string& name, float epsilon = 1e-5f, bool zero_scale = false);
  int relu(int x, const std::string& name);
  int relu6(int x, const std::string& name);
  int max_pool(int x, int64_t kernel, int64_t stride, int64_t pad, const std::string& name);
  int avg_pool(int x, int64_t kernel, int64_t stride, int64_t pad, const std::string& name,
               bool count_include_pad = true);
  int global_avg_pool(int x, const std::string& name);
  int linear(int x, int64_t out_features, const std::string& name, bool bias = true,
             Init init = Init::uniform_fan_in);
  int add(int a, int b, const std::string& name);
  // offset > 0 reads from that row and column on (ShortcutAttrs); 0 <= offset < stride
  int shortcut(int x, int64_t out_channels, int64_t stride, const std::string& name, int64_t offset = 0);
  // Channel concatenation of 4-D tensors of one batch, height and width, in the order given.
  int concat(const std::vector<int>& xs, const std::string& name);

  // Local response normalisation across channels with tf.nn.lrn's parameters (models/graph.h).
  int lrn(int x, int64_t radius, float bias, float alpha, float beta, const std::string& name);
  // Dropout after a fully connected layer (an N x C x 1 x 1 input), 0 <= rate < 1.
  int dropout(int x, float rate, const std::string& name);

  // Ends the graph at `output` (the logits) and returns it.
  Graph finish(int output);

 private:
  Node& append(OpKind kind, std::vector<int> inputs, const std::string& name);
  Graph graph_;
};

}  // namespace cnnbench
