// Statistics as tf_cnn_benchmarks computes them, on samples whose answers are known.
#include "harness/report/run_summary.h"
#include "harness/report/stats.h"
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

// --repeats reports the median run (of an even count, the slower middle one) in run order.
TEST(Stats, RepeatSpeedsPickTheMedianRun) {
  RepeatSpeeds r = repeat_speeds({13.5, 12.2, 13.1, 7.6, 12.9});
  EXPECT_EQ(r.median_index, 4u);
  EXPECT_DOUBLE_EQ(r.median(), 12.9);
  EXPECT_DOUBLE_EQ(r.min(), 7.6);
  EXPECT_DOUBLE_EQ(r.max(), 13.5);
  EXPECT_DOUBLE_EQ(r.spread(), (13.5 - 7.6) / 12.9);
  r = repeat_speeds({10, 40, 30, 20});
  EXPECT_EQ(r.median_index, 3u);  // 20, the slower of 20 and 30
  r = repeat_speeds({5});
  EXPECT_EQ(r.median_index, 0u);
  EXPECT_DOUBLE_EQ(r.spread(), 0.0);
  r = repeat_speeds({2, 2, 2});
  EXPECT_EQ(r.median_index, 1u);  // ties keep run order
}

}  // namespace
}  // namespace cnnbench
