#include "harness/report/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace cnnbench {

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  // the lo-th and next smallest values, in linear time (a sort was n log n: the step log asks
  // for the median of every step so far each --display_every steps)
  const auto at_lo = values.begin() + static_cast<std::ptrdiff_t>(lo);
  std::nth_element(values.begin(), at_lo, values.end());
  const double low = *at_lo;
  const double high = lo + 1 < values.size() ? *std::min_element(at_lo + 1, values.end()) : low;
  return low + (rank - static_cast<double>(lo)) * (high - low);
}

double median(std::vector<double> values) { return percentile(std::move(values), 50.0); }

SpeedStats speed_stats(const std::vector<double>& speeds) {
  SpeedStats s;
  if (speeds.empty()) return s;
  s.mean = mean(speeds);
  double sq = 0;
  for (double v : speeds) sq += (v - s.mean) * (v - s.mean);
  s.stderr_ = std::sqrt(sq / static_cast<double>(speeds.size())) / std::sqrt(static_cast<double>(speeds.size()));
  const double mid = median(speeds);
  std::vector<double> deviations;
  for (double v : speeds) deviations.push_back(std::fabs(v - mid));
  s.jitter = 1.4826 * median(deviations);
  return s;
}

}  // namespace cnnbench
