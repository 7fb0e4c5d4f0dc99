// Loss scaling: the scale reacts to overflow as tf_cnn_benchmarks defines it, a static power
// of two changes nothing but the range, and an injected overflow is skipped and survived.
#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/run/step_loop.h"
#include "harness/run/loss_scaler.h"
#include "kernels/backend.h"
#include "models/graph_builder.h"
#include "test_util.h"

namespace cnnbench {
namespace {

TEST(LossScaler, DynamicHalvesOnOverflowAndGrowsAfterGoodSteps) {
  LossScaler s(1024, true, 3);
  std::vector<float> good(100, 1.0f), inf = good, nan = good;
  inf[57] = std::numeric_limits<float>::infinity();
  nan[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(s.accept(inf));
  EXPECT_EQ(s.scale(), 512);
  EXPECT_FALSE(s.accept(nan));
  EXPECT_EQ(s.scale(), 256);
  EXPECT_TRUE(s.accept(good));
  EXPECT_TRUE(s.accept(good));
  EXPECT_EQ(s.scale(), 256);
  EXPECT_TRUE(s.accept(good));  // third good step in a row
  EXPECT_EQ(s.scale(), 512);
  EXPECT_EQ(s.skipped_steps(), 2);
  // growth stops at 2^24: in bf16 no step overflows, and a scale grown to infinity stayed there
  LossScaler growing(4194304, true, 1);
  for (int i = 0; i < 200; ++i) EXPECT_TRUE(growing.accept(good));
  EXPECT_EQ(growing.scale(), 16777216);
  LossScaler fixed(128, false, 1);
  EXPECT_FALSE(fixed.accept(inf));
  EXPECT_TRUE(fixed.accept(good));
  EXPECT_EQ(fixed.scale(), 128);
}

Graph small_net() {
  GraphBuilder b("net", {16, 1, 8, 8});
  int x = b.relu(b.batch_norm(b.conv(b.input(), 8, 3, 1, 1, "conv"), "bn"), "relu");
  return b.finish(b.linear(b.global_avg_pool(x, "gap"), 4, "fc"));
}

// Trains `steps` steps; at the steps listed in `overflow_at` an inf is written into one
// gradient as backward produces it (an injected overflow).
std::vector<float> train(LossScaler* scaler, int steps, std::vector<double>* losses = nullptr,
                         std::vector<bool>* skipped = nullptr, std::vector<int> overflow_at = {}) {
  auto plan = compile_plan("onednn", small_net());
  init_parameters(plan->layout(), plan->parameters().data(), plan->buffers().data(), 3);
  int step = 0;
  plan->set_gradient_ready_hook([&](int index) {
    if (index == 0 && std::find(overflow_at.begin(), overflow_at.end(), step) != overflow_at.end())
      plan->gradients()[plan->layout().params[0].offset] = std::numeric_limits<float>::infinity();
  });
  const auto images = testing::random_vector<float>(16 * 64, 4);
  std::vector<int32_t> labels(16);
  for (int i = 0; i < 16; ++i) labels[i] = i % 4;
  plan->set_input(images.data());
  for (int s = 0; s < steps; ++s, ++step) {
    const StepRecord r = train_step(*plan, nullptr, {0.9f, 1e-4f, false}, 0.05f, labels.data(), true, scaler);
    if (losses) losses->push_back(r.loss);
    if (skipped) skipped->push_back(r.skipped);
  }
  return {plan->parameters().begin(), plan->parameters().end()};
}

TEST(LossScaling, StaticPowerOfTwoLeavesTrainingBitIdentical) {
  LossScaler scale128(128, false, 1);
  EXPECT_EQ(train(nullptr, 20), train(&scale128, 20));
}

TEST(LossScaling, InjectedOverflowIsSkippedAndTheScaleRecovers) {
  LossScaler dynamic(65536, true, 10);
  std::vector<double> losses;
  std::vector<bool> skipped;
  const auto weights = train(&dynamic, 40, &losses, &skipped, {5, 6});
  for (int s = 0; s < 40; ++s) EXPECT_EQ(skipped[s], s == 5 || s == 6) << "step " << s;
  EXPECT_EQ(dynamic.skipped_steps(), 2);
  // halved twice, then doubled after each 10 good steps in a row (steps 7-16, 17-26, 27-36)
  EXPECT_EQ(dynamic.scale(), 65536.0 / 4 * 8);
  EXPECT_EQ(losses[6], losses[5]) << "a skipped step leaves the weights as they were";
  for (float w : weights) ASSERT_TRUE(std::isfinite(w));
  // unscaled training moves this loss from 1.40 to 1.22 in 40 steps
  EXPECT_LT(losses.back(), losses.front() - 0.1) << "training goes on after the overflow";
}

}  // namespace
}  // namespace cnnbench
