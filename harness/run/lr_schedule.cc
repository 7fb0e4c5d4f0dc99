#include "harness/run/lr_schedule.h"

#include <cmath>
#include <sstream>

#include "harness/cli/config.h"
#include "harness/cli/run_settings.h"

namespace cnnbench {

double LrSchedule::at(double epoch) const {
  double rate = base;
  if (!rates.empty()) {
    size_t i = 0;
    while (i < boundaries.size() && epoch >= boundaries[i]) ++i;
    rate = rates[i] * (base / rates[0]);  // scaling applies to the whole schedule
  } else if (cosine) {
    rate = base * 0.5 * (1.0 + std::cos(M_PI * std::min(1.0, epoch / total_epochs)));
  }
  // the warm-up ramps from zero to the initial rate (tf_cnn_benchmarks': the piecewise schedule's
  // first, even where a boundary falls inside the warm-up); under a cosine, the decayed rate
  if (warmup_epochs > 0 && epoch < warmup_epochs) rate = (cosine ? rate : base) * epoch / warmup_epochs;
  return rate;
}

LrSchedule make_lr_schedule(double base_rate, const std::string& piecewise, double warmup_epochs, bool cosine,
                            double total_epochs, int64_t global_batch, int64_t base_batch) {
  LrSchedule s;
  s.warmup_epochs = warmup_epochs;
  s.cosine = cosine;
  s.total_epochs = total_epochs;
  if (!piecewise.empty()) {
    if (cosine) throw ConfigError("--piecewise_learning_rate_schedule and --cosine_learning_rate exclude each other");
    const PiecewiseSchedule parsed = parse_piecewise_schedule(piecewise);
    s.rates = parsed.rates;
    s.boundaries = parsed.boundaries;
  }
  s.base = scheduled_base_rate(base_rate, piecewise, global_batch, base_batch);
  return s;
}

}  // namespace cnnbench
