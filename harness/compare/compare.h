// harness/compare/compare.h — `cnnbench compare BASE NEW`: reads two sets of results, pairs the runs by
// the configuration that decides speed, and says for each configuration whether images/sec
// changed beyond the noise of its per-step samples. A regression is a slowdown larger than the
// tolerance that the statistics also call significant; it fails the command unless only
// checking (CI on noisy machines: the files and the matching are checked every time, speed
// only when asked).
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/compare/accuracy_compare.h"
#include "harness/compare/result_reader.h"
#include "harness/compare/significance.h"
#include "harness/compare/verdict.h"

namespace cnnbench {

struct CompareOptions {
  double tolerance = 0.05;  // a regression is slower than the base by more than this fraction
  bool check_only = false;  // report speed changes, fail only on bad input or nothing matched
  bool allow_missing = false;  // a configuration of BASE that NEW did not run is no failure
  bool json = false;        // print the report as JSON instead of a table
};


struct ComparedConfiguration {
  RunConfiguration config;
  std::string label;
  int base_runs = 0, new_runs = 0;   // runs with this configuration on each side (each repeat a run)
  bool flags_assumed = false;        // a run of a side is a CSV row without its JSON (flags_assumed_note)
  double base_speed = 0, new_speed = 0;  // images/sec: the geometric mean of the side's runs
  double change = 0;                 // new / base - 1
  RunTest test;                      // over the runs (significance.h); kind none with 1 run a side
  Verdict verdict = Verdict::no_change;
  // settings that differ between the sides without making another configuration (warm-up
  // steps, the CPU, ...): "warm-up steps: base 2, new 0"
  std::vector<std::string> differences;
};

struct CompareReport {
  std::string base_path, new_path;
  CompareOptions options;
  int base_runs = 0, new_runs = 0;
  std::vector<ComparedConfiguration> matched;
  std::vector<ComparedAccuracy> accuracy;               // time-to-accuracy runs matched
  std::vector<std::string> only_in_base, only_in_new;  // labels of unmatched configurations
  std::vector<std::string> skipped;                    // other cnnbench results found in folders
  int regressions = 0;  // of speed and of time to accuracy
  // 1 a regression (gated), else 3 where a configuration of BASE has no run in NEW (a gate that
  // passed on what was not run would let a crashed or dropped benchmark through), else 0
  int exit_code() const {
    if (regressions > 0 && !options.check_only) return 1;
    return incomplete() ? 3 : 0;
  }
  bool incomplete() const { return !only_in_base.empty() && !options.allow_missing; }
};

inline constexpr double significance_level = 0.05;

// Throws ResultReadError naming the file for bad input, and when no configuration matches.
CompareReport compare_results(const std::string& base, const std::string& next, const CompareOptions& options);
// One side's runs of one configuration, judged against the base's.
ComparedConfiguration compare_speeds(const std::vector<RunSpeeds>& base, const std::vector<RunSpeeds>& next,
                                     double tolerance);
// Short, readable: "resnet20 b32 1x2 fp32", plus whatever differs from the defaults.
std::string configuration_label(const RunConfiguration& config);
// Said under the table for a configuration where a run of either side is a results.csv row whose
// JSON is gone: the CSV has no column for the flags, so such a run is paired as if its flags
// were the defaults.
inline constexpr const char* flags_assumed_note =
    ": a results.csv row without its JSON, its flags taken as the defaults\n";

std::string format_report(const CompareReport& report);
nlohmann::json report_json(const CompareReport& report);

// The command: `args` are those after "compare". Prints the report to `out`, one line to `err`
// on bad input; returns 0 (no regression), 1 (a regression) or 2 (bad input or usage).
int compare_command(const std::vector<std::string>& args, FILE* out, FILE* err);
std::string compare_usage();

}  // namespace cnnbench
