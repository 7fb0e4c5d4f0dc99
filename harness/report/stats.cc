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
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (rank - static_cast<double>(lo)) * (values[hi] - values[lo]);
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
