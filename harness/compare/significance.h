// harness/compare/significance.h — is a change in speed real or noise? Per-step speeds are skewed
// (a few slow steps: page faults, a busy neighbour), so the tests make no normality assumption
// when the samples are there: Mann-Whitney U (ranks, ties averaged) and a seeded bootstrap of
// the ratio of medians. When only a run's summary is known (mean, standard error, n), Welch's
// t-test is the best that is left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cnnbench {

struct MannWhitney {
  double u = 0;        // U of the first sample: pairs (a, b) with a > b, ties counting 1/2
  double z = 0;        // normal approximation, tie-corrected, with continuity correction
  double p_value = 1;  // two-sided
};
// As scipy.stats.mannwhitneyu(a, b, method="asymptotic"). Empty input gives p = 1.
MannWhitney mann_whitney(const std::vector<double>& a, const std::vector<double>& b);

// Whether samples of these sizes could give p < `level` at all: complete separation (every value
// of one side above every value of the other, no ties) is the strongest evidence they can hold.
// 1 + anything, 2 + 2 ... 3 + 3 cannot (3 + 3 at best p = 0.081); 4 + 4 can.
bool separation_could_be_significant(size_t a, size_t b, double level);

struct Interval {
  double low = 0, high = 0;
};
// Percentile-bootstrap interval of median(next) / median(base): both samples resampled with
// replacement `resamples` times from a generator seeded with `seed` (the same answer every run).
Interval bootstrap_median_ratio(const std::vector<double>& base, const std::vector<double>& next,
                                double confidence = 0.95, int resamples = 2000, uint64_t seed = 1);

// Welch's two-sided t-test from summary statistics: means, sample standard deviations (n - 1
// in the denominator) and sample sizes. With fewer than 2 samples a side p is 1 (no spread is
// known); with no spread at all p is 1 for equal means and 0 otherwise.
double welch_p_value(double mean_a, double sd_a, double n_a, double mean_b, double sd_b, double n_b);

// Distribution functions used above, exposed for their tests.
double normal_cdf(double z);
double student_t_cdf(double t, double degrees_of_freedom);

}  // namespace cnnbench
