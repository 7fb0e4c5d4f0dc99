// harness/compare/accuracy_compare.h — `cnnbench compare` for time-to-accuracy runs. Each run is
// one sample (the seconds to its target), so the question is how many runs there are: a side's
// figure is the median over its runs, the test is Mann-Whitney U over the runs (a run that never
// reached the target ranks slower than every run that did, and the direction of a change comes
// from the ranks), and where these runs did not reach p < 0.05 and could not have with any times
// (complete separation without ties), the report says so instead of calling no change.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/compare/result_reader.h"
#include "harness/compare/verdict.h"

namespace cnnbench {

struct ComparedAccuracy {
  RunConfiguration config;
  std::string label;
  int base_runs = 0, new_runs = 0, base_reached = 0, new_reached = 0;
  double base_seconds = 0, new_seconds = 0;  // medians; infinity when the median run missed the target
  double base_epochs = 0, new_epochs = 0;    // medians over the runs that reached it (0: none did)
  double change = 0;  // new / base - 1 of the median seconds (negative: faster); NaN where a median missed
  double p_value = 1;
  bool enough_runs = false;  // p < 0.05 here, or reachable with these run counts
  bool flags_assumed = false;  // as ComparedConfiguration's
  Verdict verdict = Verdict::no_change;
  // runs of one --seed on a side counted once (the same data order and first weights: the same
  // run again); base_runs and new_runs count what is left
  int base_same_seed = 0, new_same_seed = 0;
  // where every run records its data and the sides' differ: "base 1a2b..., new 3c4d..."; such
  // runs are not compared (another data set's time to accuracy says nothing of this one's)
  std::string other_data;
};

// One configuration's runs on each side; a regression is slower than the base by more than
// `tolerance` and significant.
ComparedAccuracy compare_time_to_accuracy(const std::vector<AccuracyRun>& base, const std::vector<AccuracyRun>& next,
                                          double tolerance);
// configuration_label() and the target: "resnet20_fmnist b128 fp32, 1 rank x 2 threads, ..., to 94.5% top-1"
std::string accuracy_label(const RunConfiguration& config);
// The table rows of the text report and the JSON report's entries.
std::string format_accuracy_rows(const std::vector<ComparedAccuracy>& compared);
nlohmann::json accuracy_json(const ComparedAccuracy& c);

}  // namespace cnnbench
