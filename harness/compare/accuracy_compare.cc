#include "harness/compare/accuracy_compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

#include "harness/compare/compare.h"
#include "harness/compare/result_numbers.h"
#include "harness/compare/significance.h"
#include "harness/report/stats.h"

namespace cnnbench {
namespace {

constexpr double never = std::numeric_limits<double>::infinity();

// Seconds to the target per run; a run that missed it is slower than any that reached it.
std::vector<double> seconds_of(const std::vector<AccuracyRun>& runs) {
  std::vector<double> s;
  for (const AccuracyRun& r : runs) s.push_back(r.reached ? r.seconds : never);
  return s;
}

double median_epochs(const std::vector<AccuracyRun>& runs) {
  std::vector<double> e;
  for (const AccuracyRun& r : runs)
    if (r.reached) e.push_back(r.epochs);
  return e.empty() ? 0 : median(e);
}

// The median with missed runs as infinity: the middle run, or the mean of the middle two (any
// interpolation between a finite time and infinity would give NaN).
double median_seconds(std::vector<double> s) {
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  if (n == 0) return never;
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int count_reached(const std::vector<AccuracyRun>& runs) {
  return static_cast<int>(std::count_if(runs.begin(), runs.end(), [](const AccuracyRun& r) { return r.reached; }));
}

// One run per --seed: the run of the median time among those with its seed (a run without a
// recorded seed stands alone); `dropped` counts the others.
std::vector<AccuracyRun> one_run_per_seed(const std::vector<AccuracyRun>& runs, int& dropped) {
  std::vector<AccuracyRun> out;
  std::map<std::string, std::vector<AccuracyRun>> by_seed;
  std::vector<std::string> order;
  for (const AccuracyRun& r : runs) {
    if (r.seed.empty()) {
      out.push_back(r);
      continue;
    }
    if (by_seed[r.seed].empty()) order.push_back(r.seed);
    by_seed[r.seed].push_back(r);
  }
  for (const std::string& seed : order) {
    std::vector<AccuracyRun>& same = by_seed[seed];
    std::stable_sort(same.begin(), same.end(), [](const AccuracyRun& a, const AccuracyRun& b) {
      return (a.reached ? a.seconds : never) < (b.reached ? b.seconds : never);
    });
    out.push_back(same[(same.size() - 1) / 2]);
    dropped += static_cast<int>(same.size()) - 1;
  }
  return out;
}

// "base 1a2b..., new 3c4d..." where every run records its data and the sides' sets differ.
std::string other_data(const std::vector<AccuracyRun>& base, const std::vector<AccuracyRun>& next) {
  std::set<std::string> sides[2];
  const std::vector<AccuracyRun>* runs[2] = {&base, &next};
  for (int side = 0; side < 2; ++side)
    for (const AccuracyRun& r : *runs[side]) {
      if (r.data_fingerprint.empty()) return "";
      sides[side].insert(r.data_fingerprint);
    }
  if (sides[0] == sides[1]) return "";
  auto listed = [](const std::set<std::string>& set) {
    std::string text;
    for (const std::string& f : set) text += (text.empty() ? "" : " / ") + f;
    return set.size() > 2 ? fmt::format("{} fingerprints", set.size()) : text;
  };
  return "base " + listed(sides[0]) + ", new " + listed(sides[1]);
}

std::string seconds_text(double s) { return std::isinf(s) ? "not reached" : number_text(s, 1, 9) + " s"; }

std::string accuracy_verdict_text(const ComparedAccuracy& c) {
  if (!c.other_data.empty()) return "not compared (other data)";
  if (c.enough_runs) return verdict_name(c.verdict);
  return fmt::format("too few runs to decide ({} + {} cannot give p < {:g})", c.base_runs, c.new_runs,
                     significance_level);
}

}  // namespace

std::string accuracy_label(const RunConfiguration& config) {
  std::string label = configuration_label(config);
  for (const std::string& flag : accuracy_flags())
    if (!config[flag].empty() && config[flag] != flag_default(flag)) label += ", --" + flag + "=" + config[flag];
  return label + fmt::format(", to {:g}% top-1", 100 * std::atof(config["target_top_1_accuracy"].c_str()));
}

ComparedAccuracy compare_time_to_accuracy(const std::vector<AccuracyRun>& base_runs,
                                          const std::vector<AccuracyRun>& next_runs, double tolerance) {
  ComparedAccuracy c;
  c.config = base_runs.front().config;
  c.label = accuracy_label(c.config);
  c.flags_assumed = any_flags_assumed(base_runs, next_runs);
  c.other_data = other_data(base_runs, next_runs);
  const std::vector<AccuracyRun> base = one_run_per_seed(base_runs, c.base_same_seed),
                                 next = one_run_per_seed(next_runs, c.new_same_seed);
  c.base_runs = static_cast<int>(base.size());
  c.new_runs = static_cast<int>(next.size());
  c.base_reached = count_reached(base);
  c.new_reached = count_reached(next);
  const std::vector<double> a = seconds_of(base), b = seconds_of(next);
  c.base_seconds = median_seconds(a);
  c.new_seconds = median_seconds(b);
  c.base_epochs = median_epochs(base);
  c.new_epochs = median_epochs(next);
  // the change of the medians, where both reached the target; otherwise none to show
  c.change = std::isfinite(c.base_seconds) && std::isfinite(c.new_seconds) && c.base_seconds > 0
                 ? c.new_seconds / c.base_seconds - 1
                 : std::numeric_limits<double>::quiet_NaN();
  const MannWhitney test = mann_whitney(b, a);
  c.p_value = test.p_value;
  // the direction from the ranks, not the medians (which may both be "not reached")
  const bool slower = test.z > 0;
  // enough runs: these runs decided, or at least complete separation (every run of one side
  // faster than every run of the other, no ties) could have
  const bool significant = c.p_value < significance_level;
  c.enough_runs = significant || separation_could_be_significant(base.size(), next.size(), significance_level);
  if (!c.other_data.empty())
    c.verdict = Verdict::no_change;  // not compared: told as such
  else if (significant && slower && !(c.change <= tolerance))
    c.verdict = Verdict::regression;  // more seconds to the target by more than the tolerance, or missed it
  else if (significant)
    c.verdict = slower ? Verdict::slower : Verdict::faster;
  else
    c.verdict = Verdict::no_change;
  return c;
}

std::string format_accuracy_rows(const std::vector<ComparedAccuracy>& compared) {
  if (compared.empty()) return "";
  size_t width = std::string("time to accuracy").size();
  for (const ComparedAccuracy& c : compared) width = std::max(width, c.label.size());
  std::string out = fmt::format("{:<{}}  {:>22}  {:>22}  {:>7}  {:>7}  {}\n", "time to accuracy", width,
                                "base (reached/runs)", "new (reached/runs)", "change", "p-value", "verdict");
  for (const ComparedAccuracy& c : compared) {
    const std::string change = std::isfinite(c.change) ? change_text(c.change) : "-";
    const std::string verdict = accuracy_verdict_text(c);
    out += fmt::format("{:<{}}  {:>22}  {:>22}  {:>7}  {:>7}  {}\n", c.label, width,
                       fmt::format("{} ({}/{})", seconds_text(c.base_seconds), c.base_reached, c.base_runs),
                       fmt::format("{} ({}/{})", seconds_text(c.new_seconds), c.new_reached, c.new_runs), change,
                       c.p_value < 0.001 ? "<0.001" : fmt::format("{:.3f}", c.p_value), verdict);
  }
  out += "time to accuracy: median seconds over the runs (evaluations included); test: Mann-Whitney over the runs, "
         "a run that missed the target slower than any that reached it\n";
  for (const ComparedAccuracy& c : compared) {
    if (c.base_same_seed + c.new_same_seed > 0)
      out += fmt::format("same seed: {}: {} base and {} new runs repeated another's --seed (the same run again): "
                         "counted once\n",
                         c.label, c.base_same_seed, c.new_same_seed);
    if (!c.other_data.empty()) out += "other data: " + c.label + ": " + c.other_data + ": not compared\n";
  }
  return out;
}

nlohmann::json accuracy_json(const ComparedAccuracy& c) {
  nlohmann::json config = nlohmann::json::object();
  for (const auto& [name, value] : c.config.values) config[name] = value;
  auto seconds = [](double s) { return std::isfinite(s) ? nlohmann::json(s) : nlohmann::json(nullptr); };
  return {{"label", c.label},
          {"config", config},
          {"flags_assumed", c.flags_assumed},
          {"base_runs", c.base_runs},
          {"new_runs", c.new_runs},
          {"base_reached", c.base_reached},
          {"new_reached", c.new_reached},
          {"base_seconds", seconds(c.base_seconds)},
          {"new_seconds", seconds(c.new_seconds)},
          {"base_epochs", c.base_epochs},
          {"new_epochs", c.new_epochs},
          {"change", std::isfinite(c.change) ? nlohmann::json(c.change) : nlohmann::json(nullptr)},
          {"p_value", c.p_value},
          {"enough_runs", c.enough_runs},
          {"base_same_seed", c.base_same_seed},
          {"new_same_seed", c.new_same_seed},
          {"other_data", c.other_data},
          {"verdict", !c.other_data.empty() ? "not compared (other data)"
                      : c.enough_runs       ? verdict_name(c.verdict)
                                            : "too few runs to decide"}};
}

}  // namespace cnnbench
