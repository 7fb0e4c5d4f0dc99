// The bf16 1x1 weight-gradient kernel (kernels/onednn/bf16_weight_grad.h): against a
// double-precision sum over the same bf16 values, on shapes that reach every path (odd position
// count, stride 2, wide input or wide output side, threads splitting either side), and inside
// the oneDNN plan against the plan built without it.
#include <gtest/gtest.h>

#include <dnnl.hpp>
#include <omp.h>

#include "kernels/backend.h"
#include "kernels/dtype.h"
#include "kernels/onednn/bf16_weight_grad.h"
#include "models/graph_builder.h"
#include "plan_gradients.h"
#include "test_util.h"

#include <string>

namespace cnnbench {
namespace {

using tag = dnnl::memory::format_tag;

BlockedLayout blocked16(int64_t n, int64_t c, int64_t h, int64_t w) {
  return *BlockedLayout::of(dnnl::memory::desc({n, c, h, w}, dnnl::memory::data_type::bf16, tag::nChw16c));
}

struct Case {
  int64_t n, ic, oc, ih, stride;
  int threads;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << "n" << c.n << "_ic" << c.ic << "_oc" << c.oc << "_h" << c.ih << "_s" << c.stride << "_t" << c.threads;
}

class WeightGrad1x1Test : public ::testing::TestWithParam<Case> {};

TEST_P(WeightGrad1x1Test, MatchesDoubleSum) {
  const Case c = GetParam();
  const int64_t oh = (c.ih - 1) / c.stride + 1;
  const WeightGrad1x1 shape{c.n, c.ic, c.oc, oh, oh, c.stride, blocked16(c.n, c.ic, c.ih, c.ih),
                            blocked16(c.n, c.oc, oh, oh)};
  if (!weight_grad_1x1_supported(shape)) GTEST_SKIP() << "this CPU has no AVX-512 BF16";

  // bf16 tensors in nChw16c, and the same values as plain doubles
  auto fill = [](const BlockedLayout& l, int64_t n, int64_t ch, int64_t hw, uint64_t seed,
                 std::vector<uint16_t>& blocked, std::vector<double>& plain) {
    const auto values = testing::random_vector<float>(n * ch * hw * hw, seed);
    blocked.assign(n * ch * hw * hw, 0);
    plain.resize(values.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < ch; ++k)
        for (int64_t y = 0; y < hw; ++y)
          for (int64_t x = 0; x < hw; ++x) {
            const int64_t at = ((i * ch + k) * hw + y) * hw + x;
            const uint16_t v = f32_to_bf16(values[at]);
            blocked[l.offset(i, k, y, x)] = v;
            plain[at] = bf16_to_f32(v);
          }
  };
  std::vector<uint16_t> src, diff_dst;
  std::vector<double> x, dy;
  fill(shape.src, c.n, c.ic, c.ih, 11, src, x);
  fill(shape.diff_dst, c.n, c.oc, oh, 12, diff_dst, dy);

  std::vector<float> expected(c.oc * c.ic);
  for (int64_t o = 0; o < c.oc; ++o)
    for (int64_t i = 0; i < c.ic; ++i) {
      double sum = 0;
      for (int64_t n = 0; n < c.n; ++n)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t w = 0; w < oh; ++w)
            sum += dy[((n * c.oc + o) * oh + y) * oh + w] *
                   x[((n * c.ic + i) * c.ih + y * c.stride) * c.ih + w * c.stride];
      expected[o * c.ic + i] = static_cast<float>(sum);
    }

  std::vector<char> scratch(weight_grad_1x1_scratch_bytes(shape, c.threads));
  std::vector<float> actual(c.oc * c.ic, -7.0f);  // overwritten, not accumulated into
  weight_grad_1x1(shape, src.data(), diff_dst.data(), actual.data(), scratch.data(), c.threads);
  // fp32 accumulation of exact bf16 products: error grows with the sum's length only
  EXPECT_TRUE(testing::close("dW", actual, expected, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, WeightGrad1x1Test,
    ::testing::Values(Case{3, 32, 64, 5, 1, 2},    // 75 positions (odd), one wide group: threads split ic
                      Case{3, 32, 64, 5, 1, 1},    // the same on one thread
                      Case{2, 128, 48, 7, 1, 2},   // wide side is the input; 98 positions
                      Case{2, 64, 256, 9, 2, 2},   // stride 2 (5 x 5 out), wide side is the output
                      Case{2, 64, 256, 9, 2, 3},   // three threads over two wide groups... of four
                      Case{2, 512, 128, 28, 1, 2},   // 1568 positions: two chunks
                      Case{2, 128, 512, 28, 1, 2},   // two chunks, wide side is the output
                      Case{4, 256, 1024, 14, 2, 2}),  // stride 2 at ResNet50's layer-3 shape
    [](const ::testing::TestParamInfo<Case>& info) {
      std::ostringstream name;
      name << info.param;
      return name.str();
    });

// A bottleneck-like net of 1x1 convolutions in bf16: gradients with the kernel match the plan
// built with oneDNN's backward-weights primitive instead (same bf16 inputs, another sum order).
TEST(WeightGrad1x1Plan, MatchesOnednnPrimitive) {
  GraphBuilder b("one_by_one", {4, 32, 14, 14});
  int x = b.relu(b.batch_norm(b.conv(b.input(), 64, 1, 1, 0, "conv_a"), "bn_a"), "relu_a");
  x = b.relu(b.batch_norm(b.conv(x, 256, 1, 1, 0, "conv_b"), "bn_b"), "relu_b");
  x = b.relu(b.batch_norm(b.conv(x, 64, 1, 2, 0, "conv_c"), "bn_c"), "relu_c");
  const Graph graph = b.finish(b.linear(b.global_avg_pool(x, "gap"), 10, "fc"));

  const WeightGrad1x1 probe{4, 32, 64, 14, 14, 1, blocked16(4, 32, 14, 14), blocked16(4, 64, 14, 14)};
  if (!weight_grad_1x1_supported(probe)) GTEST_SKIP() << "this CPU has no AVX-512 BF16";

  auto [own, onednn] = bf16_plans_with_and_without_own_kernels(graph);
  // With AMX, oneDNN runs bf16 convolutions on channels-last activations, not the 16-channel
  // blocks the kernel reads: there the plan takes the weight gradients as AMX matmuls instead
  // (matmul_weight_grad.cc), the strided conv_c through its gathered rows.
  // (its batch norms on those activations are cnnbench's too: test_nhwc_batch_norm.cc)
  if (cpu_flag("amx_bf16") && own->kernel_notes().find("AMX") != std::string::npos)
    EXPECT_EQ(own->kernel_notes(),
              "1x1 weight gradients as AMX matmuls on 3 convolutions; 1x1 data gradients as AMX matmuls on 1 "
              "convolution; cnnbench's channels-last bf16 batch norm on 3 layers");
  else
    EXPECT_EQ(own->kernel_notes(), "cnnbench's bf16 1x1 weight-gradient kernel on 3 convolutions");
  EXPECT_EQ(onednn->kernel_notes(), "");
  expect_same_gradients(graph, *own, *onednn, {1, 7, 3, 9});
}

// Where the weight gradients run as AMX matmuls: channel counts that are no multiple of 16, a
// stride-2 layer on an odd image (the gathered rows stop short of the last pixel) and a 3x3
// layer beside them, which stays with oneDNN's convolution. Gradients match the plan without.
TEST(WeightGrad1x1Plan, AmxMatmulsMatchOnednnOnOddShapes) {
  if (!cpu_flag("amx_bf16")) GTEST_SKIP() << "this CPU has no AMX";
  GraphBuilder b("odd_one_by_one", {3, 24, 15, 15});
  int x = b.relu(b.batch_norm(b.conv(b.input(), 40, 1, 2, 0, "conv_s2"), "bn_s2"), "relu_s2");
  x = b.relu(b.batch_norm(b.conv(x, 48, 3, 1, 1, "conv_3x3"), "bn_3x3"), "relu_3x3");
  x = b.relu(b.batch_norm(b.conv(x, 72, 1, 1, 0, "conv_s1"), "bn_s1"), "relu_s1");
  const Graph graph = b.finish(b.linear(b.global_avg_pool(x, "gap"), 10, "fc"));

  auto [own, onednn] = bf16_plans_with_and_without_own_kernels(graph);
  if (own->kernel_notes().empty()) GTEST_SKIP() << "oneDNN chose no channels-last layout for these shapes here";
  EXPECT_EQ(own->kernel_notes().find("1x1 weight gradients as AMX matmuls on 2 convolutions; 1x1 data gradients as "
                                      "AMX matmuls on 1 convolution"),
            0u)
      << own->kernel_notes();
  expect_same_gradients(graph, *own, *onednn, {2, 5, 9});
}

// The data gradient of a stride-1 1x1 layer as an AMX matmul (matmul_data_grad.cc) where the
// layer's input has other readers: a bottleneck block whose input feeds its first 1x1 and its
// projection shortcut (the two gradients summed into one buffer, whichever lands first) and whose
// output, after the add and its ReLU, feeds another 1x1 and the next block's identity shortcut.
// Every parameter's gradient is as close to the fp32 plan's as the bf16 plan's without cnnbench's
// kernels is (the two bf16 plans differ by up to 5% here, and oneDNN's is up to 12% from fp32: a
// deep net's ReLU masks flip where they round apart), the stem's too (reached only through those sums); with one of the
// sums left out, the stem's and the first block's gradients fail it.
TEST(WeightGrad1x1Plan, AmxDataGradientsSumIntoSharedInputs) {
  if (!cpu_flag("amx_bf16")) GTEST_SKIP() << "this CPU has no AMX";
  GraphBuilder b("bottlenecks", {2, 16, 14, 14});
  const int stem = b.relu(b.batch_norm(b.conv(b.input(), 64, 3, 1, 1, "stem"), "bn_stem"), "relu_stem");
  auto block = [&](int x, int64_t width, int64_t out, bool project, const std::string& n) {
    int y = b.relu(b.batch_norm(b.conv(x, width, 1, 1, 0, n + "_a"), n + "_bn_a"), n + "_relu_a");
    y = b.relu(b.batch_norm(b.conv(y, width, 3, 1, 1, n + "_b"), n + "_bn_b"), n + "_relu_b");
    y = b.batch_norm(b.conv(y, out, 1, 1, 0, n + "_c"), n + "_bn_c");
    const int shortcut = project ? b.batch_norm(b.conv(x, out, 1, 1, 0, n + "_proj"), n + "_bn_proj") : x;
    return b.relu(b.add(y, shortcut, n + "_add"), n + "_relu");
  };
  int x = block(stem, 32, 128, true, "one");
  x = block(x, 32, 128, false, "two");
  const Graph graph = b.finish(b.linear(b.global_avg_pool(x, "gap"), 10, "fc"));

  auto [own, onednn] = bf16_plans_with_and_without_own_kernels(graph);
  if (own->kernel_notes().find("data gradients") == std::string::npos)
    GTEST_SKIP() << "oneDNN chose no channels-last layout here: " << own->kernel_notes();
  // one_a, one_c, one_proj, two_a, two_c: every 1x1 layer (all stride 1)
  // one_a, one_c, one_proj, two_a, two_c: every 1x1 layer (all stride 1)
  EXPECT_NE(own->kernel_notes().find("1x1 data gradients as AMX matmuls on 5 convolutions"), std::string::npos)
      << own->kernel_notes();
  expect_as_close_to_fp32(graph, *own, *onednn, {1, 4});
}

}  // namespace
}  // namespace cnnbench
