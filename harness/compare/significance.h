// harness/compare/significance.h — is a change real or noise? Speeds: a t-test over runs
// (test_run_speeds). Times to accuracy, where a run may miss the target: Mann-Whitney U over runs.
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

// Two sides' runs compared on their speeds, the run being the unit: a run's steps share its
// machine state (the neighbours, the page placement, the clock), so run-to-run spread is several
// times what its steps' spread suggests, and only more runs measure it. On the logs of the speeds,
// so that the change and its interval are ratios: Welch's t-test where both sides have 2 runs or
// more; where one side has a single run, Student's t with the other side's spread taken for both;
// with one run a side, no test (nothing measures the noise).
struct RunTest {
  enum Kind { none, welch, one_side_spread } kind = none;
  double base_mean = 0, new_mean = 0;  // geometric means of each side's speeds
  double ratio = 1;    // new_mean / base_mean
  double p_value = 1;  // two-sided; 1 without a test
  Interval ratio_ci;   // 95% interval of the ratio; {ratio, ratio} without a test
  double degrees_of_freedom = 0;
};
// `base`, `next`: each run's images/sec, all > 0.
RunTest test_run_speeds(const std::vector<double>& base, const std::vector<double>& next, double confidence = 0.95);

// Distribution functions used above, exposed for their tests.
double normal_cdf(double z);
double student_t_cdf(double t, double degrees_of_freedom);
double student_t_quantile(double probability, double degrees_of_freedom);  // inverse of student_t_cdf

}  // namespace cnnbench
