// Statistics as tf_cnn_benchmarks computes them, on samples whose answers are known.
#include "harness/stats.h"
#include "test_util.h"

namespace cnnbench {
namespace {

TEST(Stats, SpeedStatsMatchNumpy) {
  // numpy: mean 3.0, std (ddof=0) sqrt(2), stderr sqrt(2)/sqrt(5); median 3, MAD 1 -> jitter 1.4826
  const SpeedStats s = speed_stats({1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_NEAR(s.stderr_, std::sqrt(2.0) / std::sqrt(5.0), 1e-12);
  EXPECT_NEAR(s.jitter, 1.4826, 1e-12);
  const SpeedStats one = speed_stats({7});
  EXPECT_EQ(one.stderr_, 0.0);
  EXPECT_EQ(one.jitter, 0.0);
}

TEST(Stats, PercentilesInterpolateLinearly) {
  const std::vector<double> v = {10, 1, 4, 3, 2};  // sorted 1 2 3 4 10
  EXPECT_DOUBLE_EQ(percentile(v, 50), 3.0);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 4 + 0.6 * 6);  // rank 3.6
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 10.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
}

}  // namespace
}  // namespace cnnbench
