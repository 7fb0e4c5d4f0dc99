// The graph IR: shape inference, parameter and MAC counts, backward-order layout, bad shapes.
#include "kernels/param_layout.h"
#include "models/graph_builder.h"
#include "test_util.h"

namespace cnnbench {
namespace {

TEST(Graph, ShapesCountsAndConsumers) {
  GraphBuilder b("t", {2, 3, 32, 32});
  int x = b.conv(b.input(), 16, 3, 2, 1, "conv", /*bias=*/true);
  EXPECT_EQ(b.shape(x), (Shape{2, 16, 16, 16}));
  x = b.batch_norm(x, "bn");
  int r = b.relu(x, "relu");
  int p = b.max_pool(r, 3, 2, 1, "pool");
  EXPECT_EQ(b.shape(p), (Shape{2, 16, 8, 8}));
  int a = b.add(p, b.avg_pool(p, 3, 1, 1, "avg"), "add");
  int s = b.shortcut(a, 32, 2, "short");
  EXPECT_EQ(b.shape(s), (Shape{2, 32, 4, 4}));
  int g = b.global_avg_pool(s, "gap");
  const Graph graph = b.finish(b.linear(g, 10, "fc"));
  EXPECT_EQ(graph.logits().out, (Shape{2, 10, 1, 1}));
  // conv 16*3*9 + 16, bn 2*16, fc 32*10 + 10
  EXPECT_EQ(graph.param_count(), 16 * 27 + 16 + 32 + 330);
  EXPECT_EQ(graph.forward_macs_per_image(), 16 * 16 * 16 * 27 + 32 * 10);
  const auto consumers = graph.consumers();
  EXPECT_EQ(consumers[p].size(), 2u);  // avg pool and add
  EXPECT_EQ(graph.nodes[s].shortcut.pad_front, 8);
}

TEST(Graph, LayoutIsInBackwardOrder) {
  GraphBuilder b("t", {1, 3, 8, 8});
  int x = b.conv(b.input(), 4, 3, 1, 1, "first");
  x = b.batch_norm(x, "bn");
  const Graph graph = b.finish(b.linear(b.global_avg_pool(x, "gap"), 5, "last"));
  const ParamLayout layout = ParamLayout::of(graph);
  ASSERT_EQ(layout.params.size(), 5u);
  EXPECT_EQ(layout.params.front().spec->name, "last.weight");
  EXPECT_EQ(layout.params.front().offset, 0);
  EXPECT_EQ(layout.params.back().spec->name, "first.weight");
  EXPECT_EQ(layout.param_elements, graph.param_count());
  EXPECT_EQ(layout.param(1, 0).spec->name, "first.weight");
  EXPECT_EQ(layout.buffers.size(), 2u);
}

TEST(Graph, InitIsSeededAndScaled) {
  GraphBuilder b("t", {1, 64, 8, 8});
  const Graph graph = b.finish(b.conv(b.input(), 128, 3, 1, 1, "conv"));
  const ParamLayout layout = ParamLayout::of(graph);
  std::vector<float> p1(layout.param_elements), p2(layout.param_elements), p3(layout.param_elements);
  init_parameters(layout, p1.data(), nullptr, 7);
  init_parameters(layout, p2.data(), nullptr, 7);
  init_parameters(layout, p3.data(), nullptr, 8);
  EXPECT_EQ(p1, p2);
  EXPECT_NE(p1, p3);
  double sq = 0;
  for (float v : p1) sq += v * v;
  const double expected_var = 2.0 / (128 * 9);  // He normal, fan out
  EXPECT_NEAR(sq / p1.size(), expected_var, 0.05 * expected_var);
}

TEST(Graph, BadShapesAreRefusedNamingTheNode) {
  GraphBuilder b("t", {1, 3, 4, 4});
  try {
    b.conv(b.input(), 8, 7, 1, 0, "too_big");
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("too_big"), std::string::npos) << e.what();
  }
  int x = b.conv(b.input(), 8, 3, 1, 1, "c");
  EXPECT_THROW(b.add(x, b.input(), "mismatch"), std::invalid_argument);
  EXPECT_THROW(b.shortcut(x, 4, 2, "drop"), std::invalid_argument);
  EXPECT_THROW(b.shortcut(x, 8, 2, "offset_past_stride", 2), std::invalid_argument);
  EXPECT_THROW(b.shortcut(x, 8, 2, "negative_offset", -1), std::invalid_argument);
  const int pooled = b.max_pool(x, 2, 2, 0, "pool");
  EXPECT_THROW(b.concat({x, pooled}, "sizes"), std::invalid_argument);  // 4x4 and 2x2
  EXPECT_THROW(b.concat({x}, "one"), std::invalid_argument);
  EXPECT_THROW(b.concat({x, x}, "twice"), std::invalid_argument);
  const int joined = b.concat({x, b.input()}, "joined");
  EXPECT_EQ(b.shape(joined), (Shape{1, 11, 4, 4}));  // 8 + 3 channels
  EXPECT_THROW(b.finish(0), std::invalid_argument);  // output must be the last node
  EXPECT_THROW(GraphBuilder("e", {0, 3, 4, 4}), std::invalid_argument);
}

}  // namespace
}  // namespace cnnbench
