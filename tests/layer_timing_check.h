// tests/layer_timing_check.h — --layer_timing's split of backward, shared by the CPU and GPU
// tests: weight gradients are timed for convolutions and linear layers only, as a part of
// their backward time that leaves the data gradient out when there is one.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/device_plan.h"
#include "kernels/param_layout.h"
#include "models/graph_builder.h"
#include "test_util.h"

namespace cnnbench::testing {

// 64-channel 1x1 convolutions, so a bf16 oneDNN plan takes its own weight-gradient kernel.
inline Graph layer_timing_graph() {
  GraphBuilder b("timed", {4, 16, 8, 8});
  int x = b.relu(b.batch_norm(b.conv(b.input(), 64, 1, 1, 0, "conv0"), "bn0"), "relu0");
  x = b.relu(b.batch_norm(b.conv(x, 64, 3, 1, 1, "conv1"), "bn1"), "relu1");
  x = b.conv(x, 128, 1, 2, 0, "conv2");
  return b.finish(b.linear(b.relu(b.linear(b.global_avg_pool(x, "gap"), 32, "fc1"), "relu2"), 10, "fc2"));
}

inline void check_weight_grad_split(Plan& plan) {
  const Graph& g = plan.graph();
  init_parameters(plan.layout(), plan.parameters().data(), plan.buffers().data(), 5);
  if (DevicePlan* device = plan.device()) device->upload_state();
  const auto images = random_vector<float>(g.input().out.elements(), 6);
  const std::vector<int32_t> labels = {1, 4, 7, 9};
  plan.set_layer_timing(true);
  for (int step = 0; step < 2; ++step) {
    plan.set_input(images.data());
    plan.forward(Mode::training);
    LossResult loss = plan.loss(labels.data());
    plan.backward();
    if (DevicePlan* device = plan.device()) device->synchronize(&loss);
  }
  for (const Node& node : g.nodes) {
    const LayerTime& t = plan.layer_times()[node.id];
    SCOPED_TRACE(node.name);
    const bool weighted = node.kind == OpKind::conv || node.kind == OpKind::linear;
    if (!weighted) {
      EXPECT_EQ(t.weight_grad_sec, 0.0);
      continue;
    }
    EXPECT_GT(t.weight_grad_sec, 0.0);
    if (node.inputs[0] == 0) {
      EXPECT_LE(t.weight_grad_sec, t.backward_sec);  // no data gradient for the images
    } else {
      EXPECT_LT(t.weight_grad_sec, t.backward_sec);  // the data gradient is the rest
    }
  }
}

}  // namespace cnnbench::testing
