// harness/report/stats.h — statistics over per-step samples, computed as tf_cnn_benchmarks does
// (speed mean, standard error = population std / sqrt(n), jitter = 1.4826 x median absolute
// deviation) plus percentiles with linear interpolation (numpy's default).
#pragma once

#include <vector>

namespace cnnbench {

struct SpeedStats {
  double mean = 0, stderr_ = 0, jitter = 0;
};

SpeedStats speed_stats(const std::vector<double>& speeds);
double median(std::vector<double> values);
double percentile(std::vector<double> values, double p);  // p in [0, 100]
double mean(const std::vector<double>& values);

}  // namespace cnnbench
