// harness/report/output_paths.h — every path a run will write, checked before its first step, so
// that a folder that is a file or a result name that holds a user's own file stops the run at
// once with one line, not after hours of training; and nothing a user wrote is replaced: an
// existing --result_json is replaced only when it is a cnnbench result itself, an existing
// --timeline only when it is a cnnbench trace.
#pragma once

#include <string>
#include <string_view>

#include "harness/cli/config.h"

namespace cnnbench {

// Throws std::runtime_error naming the flag and the path for the first output that cannot be
// written as asked: a folder flag (--benchmark_log_dir, --train_dir, --summary_dir) naming a file
// or below one, --result_json (or the per-epoch CSV beside it) naming a folder or a file that
// is not a cnnbench result, --timeline naming a folder or a file that is not a cnnbench trace,
// a results.csv (allreduce.csv, input.csv) whose header this version cannot append under.
void check_output_paths(const Config& config);

// Throws unless `path` does not exist or is a cnnbench result JSON ("schema": "cnnbench.*").
void check_replaceable_result(const std::string& path, const std::string& flag);

// How every trace write_timeline() writes begins, in this version and earlier ones: what makes
// an existing file one that --timeline may replace.
inline constexpr std::string_view kTimelineStart = R"({"displayTimeUnit":"ms","otherData":{"origin_us":)";
// Throws unless `path` does not exist or is a trace --timeline wrote.
void check_replaceable_timeline(const std::string& path, const std::string& flag);

// The per-epoch CSV beside a convergence run's JSON: X.json -> X_epochs.csv.
std::string epochs_csv_path(const std::string& json_path);

}  // namespace cnnbench
