// cnnbench's batch norm on bf16 channels-last activations (kernels/onednn/nhwc_batch_norm.h):
// against double-precision sums over the same bf16 values, on shapes that reach every path
// (row counts that are no multiple of the 4-row step or the 64-row block, fewer rows than
// threads, a mean far larger than the spread, with and without the ReLU), and inside the oneDNN
// plan against the plan built without it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "kernels/onednn/nhwc_batch_norm.h"
#include "models/graph_builder.h"
#include "plan_gradients.h"
#include "test_util.h"

namespace cnnbench {
namespace {

uint16_t to_bf16(float f) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

double from_bf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct Case {
  int64_t rows, channels;
  bool relu;
  float offset;  // added to every value: a mean far from zero
  int threads;
};

std::ostream& operator<<(std::ostream& os, const Case& c) {
  return os << "rows" << c.rows << "_c" << c.channels << (c.relu ? "_relu" : "") << "_offset"
            << static_cast<int>(c.offset) << "_t" << c.threads;
}

class NhwcBatchNormTest : public ::testing::TestWithParam<Case> {};

TEST_P(NhwcBatchNormTest, MatchesDoubleSums) {
  const Case k = GetParam();
  const NhwcBatchNorm shape{k.rows, k.channels, 1e-5f, k.relu};
  if (!nhwc_batch_norm_supported(shape)) GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  const int64_t n = k.rows * k.channels, C = k.channels;
  std::vector<uint16_t> x(n), dy(n), y(n), dx(n);
  const auto xs = testing::random_vector<float>(n, 11, -2, 2), gs = testing::random_vector<float>(n, 12, -1, 1);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = to_bf16(xs[i] * (1 + static_cast<float>(i % C) / C) + k.offset);
    dy[i] = to_bf16(gs[i]);
  }
  const auto scale = testing::random_vector<float>(C, 13, 0.5, 1.5), shift = testing::random_vector<float>(C, 14, -0.5, 0.5);
  std::vector<float> mean(C), variance(C), dscale(C), dshift(C);
  std::vector<char> scratch(nhwc_batch_norm_scratch_bytes(shape, k.threads));
  nhwc_batch_norm_forward(shape, x.data(), scale.data(), shift.data(), y.data(), mean.data(), variance.data(),
                          scratch.data(), k.threads);
  nhwc_batch_norm_backward(shape, x.data(), dy.data(), mean.data(), variance.data(), scale.data(), shift.data(),
                           dx.data(), dscale.data(), dshift.data(), scratch.data(), k.threads);

  const double m = static_cast<double>(k.rows);
  double worst_y = 0, worst_dx = 0, largest_dx = 0, largest_term = 0;
  int64_t unmasked = 0;
  for (int64_t c = 0; c < C; ++c) {
    double sum = 0, squares = 0;
    for (int64_t r = 0; r < k.rows; ++r) sum += from_bf16(x[r * C + c]);
    const double mu = sum / m;
    for (int64_t r = 0; r < k.rows; ++r) squares += (from_bf16(x[r * C + c]) - mu) * (from_bf16(x[r * C + c]) - mu);
    const double var = squares / m, inv_std = 1 / std::sqrt(var + 1e-5);
    EXPECT_NEAR(mean[c], mu, 1e-6 * (std::fabs(k.offset) + 1)) << "channel " << c;
    EXPECT_NEAR(variance[c], var, 2e-5 * var) << "channel " << c;
    // the ReLU's mask as the kernel applied it: where it wrote y > 0 (bn(x) within a rounding
    // of 0 may fall on either side of it here)
    double g_sum = 0, gx_sum = 0;
    std::vector<double> g(k.rows), xhat(k.rows);
    for (int64_t r = 0; r < k.rows; ++r) {
      xhat[r] = (from_bf16(x[r * C + c]) - mu) * inv_std;
      const double expected_y = xhat[r] * scale[c] + shift[c];
      const double want = k.relu ? std::max(0.0, expected_y) : expected_y;
      worst_y = std::max(worst_y, std::fabs(from_bf16(y[r * C + c]) - want) / (std::fabs(want) + 1));
      const bool passed = !k.relu || from_bf16(y[r * C + c]) > 0;
      unmasked += k.relu && expected_y > 0;
      g[r] = passed ? from_bf16(dy[r * C + c]) : 0;
      g_sum += g[r];
      gx_sum += g[r] * xhat[r];
    }
    EXPECT_NEAR(dshift[c], g_sum, 1e-4 * (std::fabs(g_sum) + std::sqrt(m))) << "channel " << c;
    EXPECT_NEAR(dscale[c], gx_sum, 1e-4 * (std::fabs(gx_sum) + std::sqrt(m))) << "channel " << c;
    for (int64_t r = 0; r < k.rows; ++r) {
      const double want = scale[c] * inv_std * (g[r] - g_sum / m - xhat[r] * gx_sum / m);
      worst_dx = std::max(worst_dx, std::fabs(from_bf16(dx[r * C + c]) - want));
      largest_dx = std::max(largest_dx, std::fabs(want));
      largest_term = std::max(largest_term, std::fabs(scale[c] * inv_std * g[r]));
    }
  }
  EXPECT_LT(worst_y, 1.0 / 128) << "a bf16 rounding, relative";
  // a bf16 rounding of the largest, and fp32's of the terms that cancel (one row: all of dx)
  EXPECT_LE(worst_dx, largest_dx / 128 + 1e-6 * largest_term);
  if (k.relu) {
    EXPECT_GT(unmasked, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, NhwcBatchNormTest,
    ::testing::Values(Case{1, 16, false, 0, 1}, Case{1, 16, true, 0, 3},   // fewer rows than threads
                      Case{7, 48, true, 0, 2}, Case{67, 32, false, 0, 2},  // past the 4-row step, the 64-row block
                      Case{300, 64, true, 0, 3}, Case{513, 16, false, 100, 2},  // a mean 100 times the spread
                      Case{130, 256, true, -40, 1}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::ostringstream name;
      name << info.param;
      std::string s = name.str();
      for (char& ch : s)
        if (ch == '-') ch = 'm';
      return s;
    });

// Threads add their sums in a fixed order: two runs give the same bits.
TEST(NhwcBatchNorm, RunsRepeatBitForBit) {
  const NhwcBatchNorm shape{1000, 64, 1e-5f, true};
  if (!nhwc_batch_norm_supported(shape)) GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  const auto xs = testing::random_vector<float>(1000 * 64, 3, -3, 3);
  std::vector<uint16_t> x(xs.size()), y1(xs.size()), y2(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) x[i] = to_bf16(xs[i]);
  const std::vector<float> scale(64, 1.0f), shift(64, 0.1f);
  std::vector<float> mean1(64), var1(64), mean2(64), var2(64);
  std::vector<char> scratch(nhwc_batch_norm_scratch_bytes(shape, 2));
  nhwc_batch_norm_forward(shape, x.data(), scale.data(), shift.data(), y1.data(), mean1.data(), var1.data(),
                          scratch.data(), 2);
  nhwc_batch_norm_forward(shape, x.data(), scale.data(), shift.data(), y2.data(), mean2.data(), var2.data(),
                          scratch.data(), 2);
  EXPECT_EQ(y1, y2);
  EXPECT_EQ(mean1, mean2);
  EXPECT_EQ(var1, var2);
}

// Inside the plan: where oneDNN keeps bf16 activations channels-last (CPUs with AMX), the
// training batch norms are cnnbench's, and one step's gradients match the plan without them;
// a ReLU6 folded into a batch norm is still applied after it (the kernel folds a plain ReLU).
TEST(NhwcBatchNormPlan, MatchesOnednnPrimitive) {
  SKIP_WITHOUT_CPU_BF16();
  GraphBuilder b("norms", {4, 24, 15, 15});
  int x = b.relu(b.batch_norm(b.conv(b.input(), 32, 3, 1, 1, "conv_a"), "bn_a"), "relu_a");
  x = b.relu6(b.batch_norm(b.conv(x, 48, 1, 1, 0, "conv_b"), "bn_b"), "relu6_b");
  x = b.batch_norm(b.conv(x, 64, 3, 2, 1, "conv_c"), "bn_c");
  const Graph graph = b.finish(b.linear(b.global_avg_pool(x, "gap"), 10, "fc"));

  auto [own, onednn] = bf16_plans_with_and_without_own_kernels(graph);
  if (own->kernel_notes().find("batch norm") == std::string::npos)
    GTEST_SKIP() << "oneDNN keeps bf16 activations in 16-channel blocks here (no AMX): its batch norm runs";
  EXPECT_NE(own->kernel_notes().find("cnnbench's channels-last bf16 batch norm on 3 layers"), std::string::npos)
      << own->kernel_notes();
  EXPECT_EQ(onednn->kernel_notes(), "");
  expect_same_gradients(graph, *own, *onednn, {2, 5, 9, 0});
  // the running statistics the forward passes updated agree too
  const std::vector<float> a(own->buffers().begin(), own->buffers().end()),
      r(onednn->buffers().begin(), onednn->buffers().end());
  EXPECT_TRUE(testing::close_l2("running statistics", a, r, 1e-4));
}

}  // namespace
}  // namespace cnnbench
