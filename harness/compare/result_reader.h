// harness/compare/result_reader.h — results read back, for `cnnbench compare`: a JSON result
// ("cnnbench.result/1"), a results.csv, or a folder of them. Each run gives the configuration
// that decides its speed and its images/sec as it reported them (each repeat's under --repeats). Convergence runs with a target accuracy
// ("cnnbench.convergence/1", or results.csv rows of mode "convergence") give their time to it.
// Any problem is one ResultReadError naming the file (and the CSV line) and what is wrong with it.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/report/result_files.h"  // max_result_json_bytes, max_results_csv_bytes

namespace cnnbench {

struct ResultReadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What decides how fast a run goes: two runs are comparable when all of these are equal. Not
// the time, host or git revision: those are what a comparison is across.
const std::vector<std::string>& configuration_fields();  // model, dataset, ..., compression
// Settings added to results later (hierarchical_allreduce, overlap_forward): part of the
// configuration, with the value a result that predates them had. results.csv has no column for
// them, so a row whose JSON is gone takes that value too.
const std::vector<std::pair<std::string, std::string>>& later_configuration_fields();
// Flags that decide speed beyond those fields (--fuse_ops, --share_memory, --data_format,
// --layer_timing, --num_classes, --optimizer, ...), and, for time to accuracy, those that decide
// how a run learns (--init_learning_rate, the schedule, --weight_decay, --label_smoothing,
// --eval_during_training_every_n_epochs, --num_epochs, ...): read from a JSON's config as the run
// had them, a flag's default where a result has none (one written before it, a CSV row whose JSON
// is gone). Runs differing in any are other configurations.
const std::vector<std::string>& speed_flags();
const std::vector<std::string>& accuracy_flags();
// The flag's default as a result's config writes it ("true", "0", "NCHW").
std::string flag_default(const std::string& flag);

struct RunConfiguration {
  std::map<std::string, std::string> values;  // by the names of configuration_fields(), as the CSV writes them
  std::string operator[](const std::string& field) const;
  auto operator<=>(const RunConfiguration&) const = default;
};

struct RunSpeeds {
  RunConfiguration config;
  std::string source;               // the file (and line, for a CSV row without its JSON)
  std::vector<double> run_speeds;   // images/sec of each run the file holds: its headline figure (total
                                    // images over total time), or each repeat's under --repeats
  // What may differ between runs of one configuration and is said when it does (context_notes
  // in compare.cc): warm-up and timed steps, the CPU, its ISA, the compiler, oneDNN's version;
  // those a result does not hold are absent (a CSV row has its timed steps alone).
  std::map<std::string, std::string> context;
  bool flags_assumed = false;       // a results.csv row without its JSON: its flags taken as their defaults
};

// A convergence run that measured its time to a target accuracy (--target_top_1_accuracy or
// --stop_at_top_1_accuracy): the configuration is configuration_fields() (mode "convergence")
// plus target_top_1_accuracy.
struct AccuracyRun {
  RunConfiguration config;
  std::string source;
  bool reached = false;
  double seconds = 0, epochs = 0, images = 0;  // to the target, when reached
  bool flags_assumed = false;                   // as RunSpeeds'
  // From the JSON, empty where unknown (a CSV row, a result written before they were recorded):
  // runs of one --seed are the same run again, and runs on other data are not compared.
  std::string seed, data_fingerprint;
};

// Whether a run of either side is a results.csv row without its JSON (RunSpeeds or AccuracyRun).
template <class Run>
bool any_flags_assumed(const std::vector<Run>& base, const std::vector<Run>& next) {
  for (const auto* side : {&base, &next})
    for (const Run& r : *side)
      if (r.flags_assumed) return true;
  return false;
}

struct ResultSet {
  std::vector<RunSpeeds> runs;
  std::vector<AccuracyRun> accuracy_runs;
  std::vector<std::string> skipped;  // files in a folder that are other cnnbench results (allreduce, convergence
                                     // without a target)
};

// `path`: a JSON result, a .csv file, or a folder (its *.json and results.csv; a JSON named by
// a CSV row is read once). Throws ResultReadError.
ResultSet read_results(const std::string& path);
RunSpeeds read_result_json(const std::string& path);

}  // namespace cnnbench
