// harness/compare/baseline.h — --baseline: a reference run's speed, read from its JSON result: a
// training result's summary, or a convergence result's images over its training epochs.
#pragma once

#include <string>

#include "harness/report/run_summary.h"

namespace cnnbench {

// Throws std::runtime_error naming the file: missing, not a regular file, too large, not a
// cnnbench result, or holding no speed.
BaselineSpeed read_baseline(const std::string& baseline_json);
// A run's workload as BaselineSpeed::workload names it; `mode` as results say it ("training",
// "forward-only", "convergence"), `backend` the --backend; `classes` the outputs of the model's
// head, `fused` --fuse_ops, `data_format` the synthetic images' (real data's pipeline has one).
std::map<std::string, std::string> baseline_workload(const RunSettings& settings, const std::string& mode,
                                                     const std::string& backend, int64_t classes, bool fused,
                                                     const std::string& data_format);
// Throws std::runtime_error naming the file and what differs where the baseline ran another
// workload than `ours` (a scaling efficiency compares one workload on other numbers of ranks).
void check_baseline_workload(const BaselineSpeed& baseline, const std::string& baseline_json,
                             const std::map<std::string, std::string>& ours);
// The summary's baseline fields and scaling efficiency, for a run on `ranks`.
void apply_baseline(RunSummary& summary, const std::string& baseline_json, int ranks);

}  // namespace cnnbench
