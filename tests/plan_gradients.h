// tests/plan_gradients.h — what the tests of the oneDNN plan's own kernels share: whether the CPU
// has a feature, and one training step of two plans (with and without the kernels) compared.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/plan.h"
#include "models/graph.h"
#include "test_util.h"

namespace cnnbench {

// Whether /proc/cpuinfo's flags name `flag` (a word of them).
inline bool cpu_flag(const std::string& flag) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

// `graph` compiled by the oneDNN backend in bf16 twice: with cnnbench's own kernels, and without.
struct OwnAndOnednn {
  std::unique_ptr<Plan> own, onednn;
};
inline OwnAndOnednn bf16_plans_with_and_without_own_kernels(const Graph& graph) {
  PlanOptions options;
  options.compute = DType::bf16;
  OwnAndOnednn plans;
  plans.own = compile_plan("onednn", graph, options);
  options.own_kernels = false;
  plans.onednn = compile_plan("onednn", graph, options);
  return plans;
}

// One training step of both plans from the same parameters, images and labels: every
// parameter's gradient within 1e-3 (relative L2) of the other plan's.
inline void expect_same_gradients(const Graph& graph, Plan& own, Plan& onednn, const std::vector<int32_t>& labels) {
  const auto params = testing::random_vector<float>(own.parameters().size(), 5, -0.2, 0.2);
  std::copy(params.begin(), params.end(), own.parameters().begin());
  std::copy(params.begin(), params.end(), onednn.parameters().begin());
  std::copy(own.buffers().begin(), own.buffers().end(), onednn.buffers().begin());
  const auto images = testing::random_vector<float>(graph.input().out.elements(), 6);
  for (Plan* plan : {&own, &onednn}) {
    plan->set_input(images.data());
    plan->forward(Mode::training);
    plan->loss(labels.data());
    plan->backward();
  }
  for (const ArenaEntry& e : own.layout().params) {
    const std::vector<float> a(own.gradients().begin() + e.offset, own.gradients().begin() + e.offset + e.elements);
    const std::vector<float> r(onednn.gradients().begin() + e.offset, onednn.gradients().begin() + e.offset + e.elements);
    EXPECT_TRUE(testing::close_l2(e.spec->name, a, r, 1e-3)) << "parameter " << e.spec->name;
  }
}

}  // namespace cnnbench
