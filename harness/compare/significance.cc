#include "harness/compare/significance.h"

#include <algorithm>
#include <cmath>

#include "harness/report/stats.h"

namespace cnnbench {
namespace {

// Continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes 6.4).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300, epsilon = 1e-15;
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 500; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < epsilon) break;
  }
  return h;
}

// The regularized incomplete beta function I_x(a, b).
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                                b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

}  // namespace

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double student_t_cdf(double t, double df) {
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? 1 - tail : tail;
}

bool separation_could_be_significant(size_t a, size_t b, double level) {
  // mann_whitney() of a + b values every one of one side above the other's, in closed form: U is
  // a * b, no ties. Building those samples cost O((a + b) log(a + b)) time and 16 bytes a step:
  // a results.csv of summaries pools timed_steps over its rows (up to 10 million each), and
  // two such rows took seconds and hundreds of MB before a comparison could print a line.
  if (a == 0 || b == 0) return false;  // p = 1, as mann_whitney() gives for an empty side
  const double n1 = static_cast<double>(a), n2 = static_cast<double>(b), n = n1 + n2;
  const double sigma = std::sqrt(n1 * n2 / 12 * (n + 1));
  const double distance = std::max(0.0, n1 * n2 / 2 - 0.5);
  return std::min(1.0, std::erfc(distance / sigma / std::sqrt(2.0))) < level;
}

MannWhitney mann_whitney(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitney r;
  if (a.empty() || b.empty()) return r;
  // rank the pooled samples, ties sharing their average rank
  std::vector<std::pair<double, bool>> pooled;  // value, from a
  for (double v : a) pooled.emplace_back(v, true);
  for (double v : b) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size()), n = n1 + n2;
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double ties = static_cast<double>(j - i), average_rank = (static_cast<double>(i + j) + 1) / 2;
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second) rank_sum_a += average_rank;
    tie_term += ties * ties * ties - ties;
    i = j;
  }
  r.u = rank_sum_a - n1 * (n1 + 1) / 2;
  const double mu = n1 * n2 / 2;
  const double sigma = std::sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))));
  if (sigma <= 0) return r;  // every value equal: no evidence of any difference
  const double distance = std::max(0.0, std::fabs(r.u - mu) - 0.5);
  r.z = std::copysign(distance / sigma, r.u - mu);
  r.p_value = std::min(1.0, std::erfc(distance / sigma / std::sqrt(2.0)));
  return r;
}

double student_t_quantile(double probability, double df) {
  // bisection on the CDF, which rises from 0 to 1: 200 halvings of [-1e9, 1e9] reach a double's precision
  double low = -1e9, high = 1e9;
  for (int i = 0; i < 200 && high - low > 1e-12 * std::max(1.0, std::fabs(low)); ++i) {
    const double mid = 0.5 * (low + high);
    (student_t_cdf(mid, df) < probability ? low : high) = mid;
  }
  return 0.5 * (low + high);
}

namespace {

struct LogSample {
  double mean = 0, variance = 0;  // of the logs; variance with n - 1 (0 for one run)
  double n = 0;
};
LogSample log_sample(const std::vector<double>& speeds) {
  LogSample s;
  s.n = static_cast<double>(speeds.size());
  for (double v : speeds) s.mean += std::log(v);
  s.mean /= s.n;
  for (double v : speeds) s.variance += (std::log(v) - s.mean) * (std::log(v) - s.mean);
  s.variance = s.n > 1 ? s.variance / (s.n - 1) : 0;
  return s;
}

}  // namespace

RunTest test_run_speeds(const std::vector<double>& base, const std::vector<double>& next, double confidence) {
  RunTest r;
  if (base.empty() || next.empty()) return r;
  const LogSample a = log_sample(base), b = log_sample(next);
  const double difference = b.mean - a.mean;
  r.base_mean = std::exp(a.mean);
  r.new_mean = std::exp(b.mean);
  r.ratio = std::exp(difference);
  r.ratio_ci = {r.ratio, r.ratio};
  if (a.n < 2 && b.n < 2) return r;  // nothing measures the run-to-run noise
  double standard_error_squared = 0;
  if (a.n >= 2 && b.n >= 2) {
    r.kind = RunTest::welch;
    const double va = a.variance / a.n, vb = b.variance / b.n;
    standard_error_squared = va + vb;
    const double denominator = va * va / (a.n - 1) + vb * vb / (b.n - 1);  // Welch-Satterthwaite
    r.degrees_of_freedom = denominator > 0 ? standard_error_squared * standard_error_squared / denominator : a.n + b.n - 2;
  } else {
    r.kind = RunTest::one_side_spread;
    const LogSample& several = a.n >= 2 ? a : b;
    standard_error_squared = several.variance * (1 / a.n + 1 / b.n);
    r.degrees_of_freedom = several.n - 1;
  }
  if (standard_error_squared <= 0) {  // runs of identical speeds: any difference is beyond their noise
    r.p_value = difference == 0 ? 1 : 0;
    return r;
  }
  const double se = std::sqrt(standard_error_squared);
  r.p_value = std::min(1.0, 2 * student_t_cdf(-std::fabs(difference) / se, r.degrees_of_freedom));
  const double t = student_t_quantile(0.5 + confidence / 2, r.degrees_of_freedom);
  // in logs, within what a double holds (speeds 1e-9 to 1.7e16 apart over 1 degree of freedom: e^600)
  const auto ratio_at = [](double log_ratio) { return std::exp(std::clamp(log_ratio, -700.0, 700.0)); };
  r.ratio_ci = {ratio_at(difference - t * se), ratio_at(difference + t * se)};
  return r;
}

}  // namespace cnnbench
