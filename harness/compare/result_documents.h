// harness/compare/result_documents.h — a result JSON as compare reads it (cnnbench.result/1, a
// training run's steps; cnnbench.convergence/1, a convergence run's time to accuracy): read within
// its cap, every number and setting checked where it is taken; a problem is a ResultReadError of
// one line naming the file. result_reader.cc reads the files, CSV rows and folders that hold them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/compare/result_reader.h"

namespace cnnbench {

inline constexpr const char* result_schema = "cnnbench.result/1";
inline constexpr const char* convergence_schema = "cnnbench.convergence/1";

// `path`'s bytes, refused unread (ResultReadError) past `max_bytes` or where no regular file.
std::string read_text(const std::string& path, uint64_t max_bytes, const std::string& what);
// The JSON at `path` (per-step arrays but steps.time_sec dropped as parsed); `digest` (when
// asked): the text's length and hash, the same for every copy of a file.
nlohmann::json parse_json(const std::string& path, std::string* digest = nullptr);
// The document's "schema", or "" where it has none.
std::string schema_of(const nlohmann::json& doc);
// Each of `flags` at its default (a results.csv row without its JSON).
void default_flag_settings(const std::vector<std::string>& flags, RunConfiguration& config);
// A training result's run: its configuration and per-step speeds.
RunSpeeds parse_result(const nlohmann::json& doc, const std::string& path);
// A convergence result with a time-to-accuracy target; nullopt for one without a target, whose
// seconds leave out the epochs before a resume (clock_complete false), whose seconds cover
// training on other rank counts than run.ranks (time_to_accuracy.ranks, after a --resume), or
// whose evaluations before a resume were on another test set (evaluated_from_epoch > 1).
std::optional<AccuracyRun> parse_convergence(const nlohmann::json& doc, const std::string& path);

}  // namespace cnnbench
