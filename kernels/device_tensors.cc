#include "kernels/device_tensors.h"

#include "kernels/bn_add_relu.h"
#include "kernels/memory_plan.h"

namespace cnnbench {

namespace {

enum Timeline { training = 0, inference = 1 };

// A ReLU whose input feeds nothing else runs in place on that input's buffer (and gradient).
// In fp16 a batch norm + add + ReLU (kernels/bn_add_relu.h) where that ReLU runs in place and
// cuDNN takes the channel count (a multiple of 4) is one op: the batch norm's output shares the
// add's buffer, since nothing but the fused call would have read it.
void find_fusions(const Graph& g, const std::vector<std::vector<int>>& consumers, const DeviceTensorOptions& o,
                  DeviceTensors& t) {
  const size_t count = g.nodes.size();
  t.alias_of.resize(count);
  for (size_t i = 0; i < count; ++i) t.alias_of[i] = static_cast<int>(i);
  t.fused_relu_of.assign(count, -1);
  t.fused_into_add.assign(count, -1);
  t.fused_bn_of.assign(count, -1);
  if (!o.fuse) return;
  for (const Node& node : g.nodes) {
    if (node.kind != OpKind::relu) continue;
    const int p = node.inputs[0];
    if (p == 0 || consumers[p].size() != 1 || p == g.output) continue;
    t.alias_of[node.id] = t.alias_of[p];
    t.fused_relu_of[p] = node.id;
  }
  if (o.compute != DType::f16) return;  // cuDNN's BN+add+activation is NHWC half only
  for (const BnAddRelu& f : find_bn_add_relu(g)) {
    const Node& bn = g.nodes[f.batch_norm];
    if (bn.out.c % 4 != 0 || t.fused_relu_of[f.add] != f.relu) continue;
    if (t.alias_of[f.residual] == t.alias_of[bn.inputs[0]]) continue;  // one buffer as x and the residual
    t.fused_into_add[f.batch_norm] = f.add;
    t.fused_bn_of[f.add] = f.batch_norm;
    t.alias_of[f.batch_norm] = t.alias_of[f.add];
  }
}

// 16-bit tensor-core kernels want channel counts that are multiples of 4 or 8: an RGB input read
// only by (ungrouped) convolutions is stored with zero channels up to 4 or 8.
int64_t input_channels(const Graph& g, const std::vector<std::vector<int>>& consumers, const DeviceTensorOptions& o) {
  const int64_t c = g.input().out.c;
  if (!o.pad_input_channels || o.compute == DType::f32 || c != 3) return c;
  for (const int u : consumers[0])
    if (g.nodes[u].kind != OpKind::conv || g.nodes[u].conv.groups != 1) return c;
  return o.padded_channels;
}

// conv -> batch norm -> ReLU -> conv in fp16 (kernels/conv_bn_relu.h), where the ReLU runs in
// place, the channel counts suit tensor cores (multiples of 8; the batch norm's at most 2048) and
// the device takes the chain.
void find_conv_bn_chains(const Graph& g, const DeviceTensorOptions& o, DeviceTensors& t) {
  const size_t count = g.nodes.size();
  t.bn_into_conv.assign(count, -1);
  t.prologue_bn.assign(count, -1);
  t.stats_bn.assign(count, -1);
  if (!o.fuse || o.compute != DType::f16) return;
  for (const ConvBnRelu& f : find_conv_bn_relu(g)) {
    const Node &a = g.nodes[f.conv], &b = g.nodes[f.next_conv];
    if (t.fused_relu_of[f.batch_norm] != f.relu) continue;
    // the folded graphs read the graph's channels, not a padded input's (8 pass the test below)
    if (a.inputs[0] == 0 && t.input_channels != g.input().out.c) continue;
    if (t.stored_shape(g, a.inputs[0]).c % 8 != 0 || a.out.c % 8 != 0 || b.out.c % 8 != 0) continue;
    if (a.out.c > 2048) continue;  // the batch norm's backward reads 8 channels a thread, one block a row range
    if (o.conv_bn_supported && !o.conv_bn_supported(f, t.prologue_bn[f.conv] >= 0)) continue;
    t.bn_into_conv[f.batch_norm] = f.next_conv;
    t.prologue_bn[f.next_conv] = f.batch_norm;
    t.stats_bn[f.conv] = f.batch_norm;
  }
}

}  // namespace

Shape DeviceTensors::stored_shape(const Graph& g, int node) const {
  Shape s = g.nodes[node].out;
  if (node == 0) s.c = input_channels;
  return s;
}

DType DeviceTensors::out_type(const Graph& g, int node, DType compute) const {
  return logits_f32 && node == g.output ? DType::f32 : compute;
}

DeviceTensors plan_device_tensors(const Graph& g, const DeviceTensorOptions& o) {
  DeviceTensors t;
  const std::vector<std::vector<int>> consumers = g.consumers();
  find_fusions(g, consumers, o, t);
  t.input_channels = input_channels(g, consumers, o);
  find_conv_bn_chains(g, o, t);
  t.logits_f32 = g.logits().kind == OpKind::linear;
  const auto wants_grad = [&](int n) { return n != 0 || o.input_grad; };

  const int count = static_cast<int>(g.nodes.size());
  const int loss_time = count + 1, end_time = 2 * count + 2;
  const auto fwd = [](int n) { return n + 1; };
  const auto bwd = [&](int n) { return loss_time + count - n; };  // the last node first
  std::vector<PlannedBuffer> buffers;
  std::vector<int> out_index(count, -1), diff_index(count, -1);
  for (const Node& node : g.nodes) {
    if (t.alias_of[node.id] != node.id) continue;
    PlannedBuffer b;
    b.lives.resize(2);
    b.shared = o.share_memory;
    b.bytes = t.stored_shape(g, node.id).elements() * dtype_size(t.out_type(g, node.id, o.compute));
    if (t.bn_into_conv[node.id] < 0) {  // a batch norm folded into its convolutions is never stored
      out_index[node.id] = static_cast<int>(buffers.size());
      buffers.push_back(b);
    }
    if (!wants_grad(node.id)) continue;
    b.bytes = t.stored_shape(g, node.id).elements() * dtype_size(o.compute);
    diff_index[node.id] = static_cast<int>(buffers.size());
    buffers.push_back(b);
  }
  const auto out_use = [&](int n, Timeline l, int time) {
    if (const int i = out_index[t.alias_of[n]]; i >= 0) buffers[i].lives[l].use(time);
  };
  const auto diff_use = [&](int n, int time) {
    if (const int i = diff_index[t.alias_of[n]]; i >= 0) buffers[i].lives[training].use(time);
  };
  for (const Node& node : g.nodes) {
    for (const Timeline l : {training, inference}) out_use(node.id, l, fwd(node.id));
    out_use(node.id, training, bwd(node.id));
    diff_use(node.id, bwd(node.id));
    for (const int u : node.inputs) {
      for (const Timeline l : {training, inference}) out_use(u, l, fwd(node.id));
      out_use(u, training, bwd(node.id));
      diff_use(u, bwd(node.id));
    }
  }
  // BN+add+ReLU runs the batch norm at the add's place both ways: its input is read there in
  // forward and backward, and its input's gradient written there
  for (const Node& node : g.nodes)
    if (const int add = t.fused_into_add[node.id]; add >= 0) {
      for (const Timeline l : {training, inference}) out_use(node.inputs[0], l, fwd(add));
      out_use(node.inputs[0], training, bwd(add));
      diff_use(node.inputs[0], bwd(add));
    }
  // A convolution applying a batch norm to its input reads that batch norm's input instead (and
  // its backward reads it again for the weight gradient and the ReLU's mask).
  for (const Node& node : g.nodes)
    if (const int bn = t.prologue_bn[node.id]; bn >= 0) {
      const int x = g.nodes[bn].inputs[0];
      for (const Timeline l : {training, inference}) out_use(x, l, fwd(node.id));
      out_use(x, training, bwd(node.id));
    }
  // loss() reads the logits and writes their gradient on both timelines (set_output_grad() the
  // output's); read_output() reads the logits even after backward, read_input_grad() the images'
  for (const int n : {g.logits().id, g.output}) {
    for (const Timeline l : {training, inference}) out_use(n, l, loss_time);
    out_use(n, training, end_time);
    if (const int i = diff_index[t.alias_of[n]]; i >= 0)
      for (const Timeline l : {training, inference}) buffers[i].lives[l].use(loss_time);
  }
  diff_use(0, end_time);
  // The images stay from one set_input() to the next, across steps (synthetic data sets them once).
  buffers[out_index[0]].shared = false;
  // The gradient of a node nothing reads is never written, only read by its own backward steps:
  // it keeps bytes of its own (the plan zeroes the arena once).
  for (int n = 0; n < count; ++n)
    if (diff_index[n] >= 0 && n != g.output && consumers[n].empty()) buffers[diff_index[n]].shared = false;

  const MemoryPlan plan = plan_memory(buffers, 256);
  t.arena_bytes = plan.total_bytes;
  t.unshared_bytes = plan.unshared_bytes;
  t.out_offset.assign(count, -1);
  t.diff_offset.assign(count, -1);
  for (const Node& node : g.nodes) {
    const int root = t.alias_of[node.id];
    if (out_index[root] >= 0) t.out_offset[node.id] = static_cast<int64_t>(plan.offsets[out_index[root]]);
    if (diff_index[root] >= 0) t.diff_offset[node.id] = static_cast<int64_t>(plan.offsets[diff_index[root]]);
  }
  return t;
}

}  // namespace cnnbench
