// Statistics as tf_cnn_benchmarks computes them, on samples whose answers are known.
#include <cmath>

#include "harness/report/convergence_record.h"
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

// The input pipeline's verdict: waiting above 5% of the time is input-bound; the line names the
// workers that would keep up only where more are needed than ran (the workers' rate counts their
// busy time, so a wait with enough of them is the files or a short run's first batches).
TEST(Stats, InputVerdictNamesTheWorkersNeededOnlyWhereMoreAre) {
  // 4 workers making 100 images/s in all, compute at 400 images/s of its 8 s not waiting: 16 needed
  InputVerdict v = input_verdict(100, 4, 3200, 10, 2);
  EXPECT_TRUE(v.input_bound);
  EXPECT_EQ(v.workers_needed, 16);
  EXPECT_EQ(v.cause, InputCause::workers);
  EXPECT_NE(v.line().find("input-bound (about 16 workers would keep up)"), std::string::npos) << v.line();
  // the same wait with workers that make 1000 images/s: not a lack of workers
  v = input_verdict(1000, 4, 3200, 10, 2);
  EXPECT_TRUE(v.input_bound);
  EXPECT_EQ(v.workers_needed, 2);
  EXPECT_EQ(v.cause, InputCause::start_or_reading);
  EXPECT_NE(v.line().find("input-bound, though its 4 workers decode fast enough"), std::string::npos) << v.line();
  EXPECT_EQ(v.line().find("would keep up"), std::string::npos) << v.line();
  EXPECT_EQ(v.to_json()["cause"], "start_or_reading");
  // workers beside the compute threads on the same CPUs (a CPU backend) and too slow: no count of
  // workers would keep up, and the JSON names none either
  v = input_verdict(100, 4, 3200, 10, 2, RankCores{2, 4, 2});
  EXPECT_NE(v.line().find("input-bound: each rank's 4 workers decode beside its 2 compute threads on 2 CPUs, taking "
                          "turns on the cores"),
            std::string::npos)
      << v.line();
  EXPECT_EQ(v.line().find("would keep up)"), std::string::npos) << v.line();
  EXPECT_EQ(v.to_json()["cause"], "cores");
  EXPECT_EQ(v.to_json()["workers_needed"], 0);
  EXPECT_NE(input_verdict(100, 4, 3200, 10, 2, RankCores{2, 4, 32}).line().find("about 16 workers"), std::string::npos)
      << "enough CPUs for both";
  EXPECT_NE(input_verdict(100, 4, 3200, 10, 2, RankCores{2, 4, 0}).line().find("about 16 workers"), std::string::npos)
      << "compute on a GPU";
  v = input_verdict(100, 4, 3200, 10, 0.4);
  EXPECT_FALSE(v.input_bound);
  EXPECT_EQ(v.cause, InputCause::none);
  EXPECT_NE(v.line().find("of the time: not input-bound"), std::string::npos) << v.line();
}

// Workers sharing the cores with the compute but making enough (a compute-bound run whose wait was
// its start): the wait is the start, not the cores, and no one is told to buy CPUs.
TEST(Stats, InputVerdictOnSharedCoresWithEnoughWorkersBlamesTheStart) {
  // 2 workers making 26.1 images/s in all, compute 10.2 images/s, 6.7% waiting (a measured run)
  const InputVerdict v = input_verdict(26.1, 2, 306, 32.2, 2.2, RankCores{2, 2, 2});
  EXPECT_TRUE(v.input_bound);
  EXPECT_EQ(v.cause, InputCause::start_or_reading);
  EXPECT_EQ(v.line().find("taking turns"), std::string::npos) << v.line();
  EXPECT_NE(v.line().find("decode fast enough"), std::string::npos) << v.line();
}

// More workers than fit beside the compute threads on the rank's CPUs: no count is named even
// where the workers do not yet share the cores.
TEST(Stats, InputVerdictNamesNoCountOfWorkersThatWouldNotFit) {
  // 1 worker at 26 images/s, compute 1806 images/s, 1 compute thread on 2 CPUs: 70 would be needed
  const InputVerdict v = input_verdict(26, 1, 64, 2.59, 2.555, RankCores{1, 1, 2});
  EXPECT_TRUE(v.input_bound);
  EXPECT_EQ(v.cause, InputCause::cores);
  EXPECT_EQ(v.workers_needed, 0);
  EXPECT_EQ(v.line().find("workers would keep up"), std::string::npos) << v.line();
  EXPECT_NE(v.line().find("more than its 2 CPUs hold"), std::string::npos) << v.line();
  EXPECT_EQ(v.line().find("GPU"), std::string::npos) << "71 workers do not fit on 2 CPUs even without the compute";
  EXPECT_NE(input_verdict(26, 1, 64, 2.59, 2.555, RankCores{8, 1, 72}).line().find("or a GPU for the compute"),
            std::string::npos)
      << "71 workers fit on 72 CPUs where the 8 compute threads go";
}

// Ranks whose workers differ: the count needed is at the slowest rank's rate, which the line names.
TEST(Stats, InputVerdictCountsAtTheSlowestRanksRate) {
  // 2 ranks x 2 workers, 100 images/s in all (25 each on average), the slowest rank's 10 each;
  // compute 400 images/s: each rank needs 200 / 10 = 20 workers, 40 in all (16 at the average)
  const InputVerdict v = input_verdict(100, 4, 3200, 10, 2, RankCores{2, 2, 0}, 10);
  EXPECT_EQ(v.cause, InputCause::workers);
  EXPECT_EQ(v.workers_needed, 40);
  EXPECT_DOUBLE_EQ(v.slowest_worker_images_per_sec, 10);
  EXPECT_NE(v.line().find("(4 workers, 25.0 each, the slowest rank's 10.0)"), std::string::npos) << v.line();
  // --num_data_workers is per rank: so is the count the line names
  EXPECT_NE(v.line().find("about 20 workers a rank would keep up"), std::string::npos) << v.line();
  // a rank that made no batch sends an infinite rate: the average stands
  EXPECT_DOUBLE_EQ(input_verdict(100, 4, 3200, 10, 2, RankCores{2, 2, 0}, HUGE_VAL).slowest_worker_images_per_sec, 25);
  // level ranks: no slowest rank named
  EXPECT_EQ(input_verdict(100, 4, 3200, 10, 2, RankCores{2, 2, 0}, 24).line().find("slowest"), std::string::npos);
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
