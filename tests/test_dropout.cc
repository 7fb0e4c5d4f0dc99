// Dropout in a plan: the masks repeat under the same seed, change with the seed and from step to
// step, inference drops nothing, and every backend draws the reference's masks step after step
// (the cuda backend where a GPU is visible).
#include <gtest/gtest.h>

#ifdef CNNBENCH_WITH_CUDA
#include "gpu_skip.h"
#endif
#include "kernels/backend.h"
#include "kernels/device_plan.h"
#include "models/graph_builder.h"
#include "test_util.h"

namespace cnnbench {
namespace {

Graph classifier() {
  GraphBuilder b("dropout_classifier", {8, 64, 1, 1});
  const int x = b.dropout(b.relu(b.linear(b.input(), 256, "fc1"), "relu"), 0.5f, "drop");
  return b.finish(b.linear(x, 10, "fc2"));
}

struct Trial {
  std::unique_ptr<Plan> plan;
  std::vector<float> images;
};

Trial make(const std::string& backend, uint64_t seed) {
  const Graph g = classifier();
  PlanOptions options;
  options.allow_tf32 = false;
  Trial r{compile_plan(backend, g, options), testing::random_vector<float>(g.input().out.elements(), 5)};
  init_parameters(r.plan->layout(), r.plan->parameters().data(), r.plan->buffers().data(), 3);
  if (DevicePlan* device = r.plan->device()) device->upload_state();
  r.plan->set_dropout_seed(seed);
  return r;
}

std::vector<float> forward(Trial& r, Mode mode) {
  r.plan->set_input(r.images.data());
  r.plan->forward(mode);
  if (DevicePlan* device = r.plan->device()) device->synchronize(nullptr);
  std::vector<float> out(r.plan->graph().logits().out.elements());
  r.plan->read_output(r.plan->graph().output, out.data());
  return out;
}

class Dropout : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) != "cuda") return;
#ifdef CNNBENCH_WITH_CUDA
    SKIP_WITHOUT_GPU();
#else
    GTEST_SKIP() << "built without CUDA";
#endif
  }
};

TEST_P(Dropout, MasksFollowSeedAndStep) {
  Trial a = make(GetParam(), 5), b = make(GetParam(), 5), c = make(GetParam(), 6);
  const auto a1 = forward(a, Mode::training), a2 = forward(a, Mode::training);
  EXPECT_GT(testing::scaled_max_error(a1, a2), 1e-3) << "two steps drew the same mask";
  EXPECT_EQ(forward(b, Mode::training), a1) << "the same seed, another mask";
  EXPECT_EQ(forward(b, Mode::training), a2);
  EXPECT_GT(testing::scaled_max_error(forward(c, Mode::training), a1), 1e-3) << "another seed, the same mask";
  // inference drops nothing and leaves the step count alone
  const auto i1 = forward(a, Mode::inference), i2 = forward(a, Mode::inference);
  EXPECT_EQ(i1, i2);
  Trial fresh = make(GetParam(), 5);
  forward(fresh, Mode::training);
  forward(fresh, Mode::training);
  EXPECT_EQ(forward(a, Mode::training), forward(fresh, Mode::training)) << "the third step's masks";
  // a resumed plan: set_dropout_seed(seed, steps done) goes on with the masks
  Trial resumed = make(GetParam(), 5);
  resumed.plan->set_dropout_seed(5, 1);
  EXPECT_EQ(forward(resumed, Mode::training), a2);
}

TEST_P(Dropout, DrawsTheReferencesMasks) {
  if (std::string(GetParam()) == "ref") GTEST_SKIP() << "the reference itself";
  Trial ref = make("ref", 9), fast = make(GetParam(), 9);
  for (int step = 0; step < 3; ++step)
    EXPECT_TRUE(testing::close("logits at step " + std::to_string(step), forward(fast, Mode::training),
                               forward(ref, Mode::training), 1e-4));
  EXPECT_TRUE(testing::close("inference logits", forward(fast, Mode::inference), forward(ref, Mode::inference), 1e-4));
}

INSTANTIATE_TEST_SUITE_P(Backends, Dropout, ::testing::Values("ref", "onednn", "cuda"),
                         [](const auto& info) { return std::string(info.param); });

TEST(Dropout, FollowsFullyConnectedLayersOnly) {
  GraphBuilder b("bad", {2, 3, 8, 8});
  EXPECT_NE(testing::error_of([&] { b.dropout(b.input(), 0.5f, "drop"); }).find("follows a fully connected layer"),
            std::string::npos);
  GraphBuilder c("bad_rate", {2, 4, 1, 1});
  EXPECT_NE(testing::error_of([&] { c.dropout(c.input(), 1.0f, "drop"); }).find("dropout rate must be in [0, 1)"),
            std::string::npos);
}

}  // namespace
}  // namespace cnnbench
