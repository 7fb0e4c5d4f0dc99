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

// One training step of each plan from the same parameters (and batch-norm buffers), images and labels.
inline void train_one_step_alike(const Graph& graph, const std::vector<Plan*>& plans, const std::vector<int32_t>& labels) {
  const auto params = testing::random_vector<float>(plans[0]->parameters().size(), 5, -0.2, 0.2);
  const auto images = testing::random_vector<float>(graph.input().out.elements(), 6);
  for (Plan* plan : plans) {  // all alike before any runs (a step updates the running statistics)
    std::copy(params.begin(), params.end(), plan->parameters().begin());
    if (plan != plans[0]) std::copy(plans[0]->buffers().begin(), plans[0]->buffers().end(), plan->buffers().begin());
  }
  for (Plan* plan : plans) {
    plan->set_input(images.data());
    plan->forward(Mode::training);
    plan->loss(labels.data());
    plan->backward();
  }
}

inline std::vector<float> gradient_of(Plan& plan, const ArenaEntry& e) {
  return std::vector<float>(plan.gradients().begin() + e.offset, plan.gradients().begin() + e.offset + e.elements);
}

// One training step of both plans alike: every parameter's gradient within 1e-3 (relative L2) of
// the other plan's.
inline void expect_same_gradients(const Graph& graph, Plan& own, Plan& onednn, const std::vector<int32_t>& labels) {
  train_one_step_alike(graph, {&own, &onednn}, labels);
  for (const ArenaEntry& e : own.layout().params)
    EXPECT_TRUE(testing::close_l2(e.spec->name, gradient_of(own, e), gradient_of(onednn, e), 1e-3))
        << "parameter " << e.spec->name;
}

// Where bf16's rounding alone moves a deep net's gradients by more than 1e-3 (a ReLU's mask flips
// where the two plans round a value near 0 apart, and every layer before it sees that): one
// training step of both bf16 plans and of the fp32 plan, and each parameter's gradient of the
// plan with cnnbench's kernels as close to fp32's as the plan without them is, within 25% (and
// 2e-3) of its distance.
inline void expect_as_close_to_fp32(const Graph& graph, Plan& own, Plan& onednn, const std::vector<int32_t>& labels) {
  const std::unique_ptr<Plan> fp32 = compile_plan("onednn", graph, PlanOptions{});
  train_one_step_alike(graph, {&own, &onednn, fp32.get()}, labels);
  for (const ArenaEntry& e : own.layout().params) {
    const std::vector<float> reference = gradient_of(*fp32, e);
    const double own_error = testing::relative_l2(gradient_of(own, e), reference);
    const double onednn_error = testing::relative_l2(gradient_of(onednn, e), reference);
    EXPECT_LE(own_error, 1.25 * onednn_error + 2e-3)
        << "parameter " << e.spec->name << ": oneDNN's bf16 plan is " << onednn_error << " from fp32";
  }
}

}  // namespace cnnbench
