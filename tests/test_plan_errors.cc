// Bad input to the plan compiler and to a compiled plan gets a clear error, never a crash.
#include "kernels/backend.h"
#include "models/graph_builder.h"
#include "test_util.h"

namespace cnnbench {
namespace {

Graph small_graph() {
  GraphBuilder b("small", {2, 3, 8, 8});
  return b.finish(b.linear(b.global_avg_pool(b.conv(b.input(), 4, 3, 1, 1, "conv"), "gap"), 10, "fc"));
}

TEST(PlanErrors, UnknownBackendNamesTheKnownOnes) {
  const std::string m = testing::error_of([] { compile_plan("tpu", small_graph()); });
  EXPECT_NE(m.find("unknown backend 'tpu'"), std::string::npos) << m;
  EXPECT_NE(m.find("onednn"), std::string::npos) << m;
}

TEST(PlanErrors, UnsupportedComputeTypeIsRefused) {
  for (const std::string backend : {"ref", "onednn"}) {
    PlanOptions options;
    options.compute = DType::f16;
    const std::string m = testing::error_of([&] { compile_plan(backend, small_graph(), options); });
    EXPECT_NE(m.find("fp16"), std::string::npos) << m;
    EXPECT_NE(m.find(backend), std::string::npos) << m;
  }
  PlanOptions bf16;
  bf16.compute = DType::bf16;
  EXPECT_NE(testing::error_of([&] { compile_plan("ref", small_graph(), bf16); }).find("fp32 only"), std::string::npos);
  if (cpu_computes_bf16())
    EXPECT_NO_THROW(compile_plan("onednn", small_graph(), bf16));
  else  // one line saying why, not oneDNN's "could not create a primitive descriptor iterator"
    EXPECT_NE(testing::error_of([&] { compile_plan("onednn", small_graph(), bf16); }).find("bf16 compute needs AVX-512"),
              std::string::npos);
}

TEST(PlanErrors, LabelOutOfRangeIsRefused) {
  for (const std::string backend : {"ref", "onednn"}) {
    auto plan = compile_plan(backend, small_graph());
    std::vector<float> images(2 * 3 * 8 * 8, 0.5f);
    plan->set_input(images.data());
    plan->forward(Mode::training);
    const int32_t labels[2] = {3, 10};
    const std::string m = testing::error_of([&] { plan->loss(labels); });
    EXPECT_NE(m.find("label 10"), std::string::npos) << m;
  }
}

TEST(PlanErrors, ReadingAFusedNodeIsRefused) {
  GraphBuilder b("fused", {2, 3, 8, 8});
  const int conv = b.conv(b.input(), 4, 3, 1, 1, "conv");
  const Graph g = b.finish(b.relu(conv, "relu"));
  auto plan = compile_plan("onednn", g);
  std::vector<float> out(2 * 4 * 64);
  const std::string m = testing::error_of([&] { plan->read_output(conv, out.data()); });
  EXPECT_NE(m.find("fused"), std::string::npos) << m;
  PlanOptions unfused;
  unfused.fuse = false;
  auto plain = compile_plan("onednn", g, unfused);
  EXPECT_NO_THROW(plain->read_output(conv, out.data()));
}

// A batch norm read only by the add after it: backward does not need its output, so its bytes
// go to a later tensor and reading it is refused, unless every tensor keeps its own.
TEST(PlanErrors, ReadingANodeWhoseBytesAreSharedIsRefused) {
  GraphBuilder b("shared", {2, 16, 8, 8});
  const int conv = b.conv(b.input(), 16, 3, 1, 1, "conv");
  const int bn = b.batch_norm(conv, "bn");
  const Graph g = b.finish(b.relu(b.add(bn, conv, "add"), "relu"));
  std::vector<float> out(2 * 16 * 64);
  for (const Mode mode : {Mode::training, Mode::inference}) {
    auto plan = compile_plan("onednn", g);
    plan->forward(mode);
    const std::string m = testing::error_of([&] { plan->read_output(bn, out.data()); });
    EXPECT_NE(m.find("node 'bn' is not kept after forward"), std::string::npos) << m;
    EXPECT_NO_THROW(plan->read_output(g.output, out.data()));
    PlanOptions own;
    own.share_memory = false;
    auto plain = compile_plan("onednn", g, own);
    plain->forward(mode);
    EXPECT_NO_THROW(plain->read_output(bn, out.data()));
  }
  // after backward: the logits are still the forward's; the convolution's output, last read by
  // batch norm's backward, is refused
  auto plan = compile_plan("onednn", g);
  const auto x = testing::random_vector<float>(2 * 16 * 64, 3), dy = testing::random_vector<float>(2 * 16 * 64, 4);
  plan->set_input(x.data());
  plan->forward(Mode::training);
  std::vector<float> before(out.size()), after(out.size());
  plan->read_output(g.output, before.data());
  EXPECT_NO_THROW(plan->read_output(conv, out.data()));
  plan->set_output_grad(dy.data());
  plan->backward();
  plan->read_output(g.output, after.data());
  EXPECT_EQ(before, after);
  const std::string m = testing::error_of([&] { plan->read_output(conv, out.data()); });
  EXPECT_NE(m.find("node 'conv' is not kept after backward"), std::string::npos) << m;
}

}  // namespace
}  // namespace cnnbench
