// harness/compare/result_reader.cc — the paths compare is given: a result JSON, a results.csv
// (each row through its JSON where that still holds the row's run, else the row's own summary)
// or a folder of both, each run counted once (result_documents.cc reads each JSON).
#include "harness/compare/result_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "harness/cli/bounded_file.h"
#include "harness/cli/printable.h"
#include "harness/compare/result_documents.h"
#include "harness/compare/result_numbers.h"
#include "harness/report/stats.h"
#include "harness/report/csv.h"
#include "harness/report/result_fields.h"

namespace cnnbench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw ResultReadError(where + ": " + what); }

// A CSV row names its JSON as the run saw it (relative to the run's folder, usually the
// folder above the CSV's, or the CSV's own): look next to the CSV first (a folder copied
// elsewhere reads its own copies, not the files it was copied from), then where the row says.
std::optional<std::string> find_json(const std::string& json_file, const std::string& csv_path) {
  if (json_file.empty()) return std::nullopt;
  const fs::path named(json_file), csv_dir = fs::path(csv_path).parent_path();
  std::vector<fs::path> candidates;
  if (named.is_relative()) {
    candidates.push_back(csv_dir / named.filename());
    candidates.push_back(csv_dir / named);
  }
  candidates.push_back(named);
  for (const fs::path& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec)) return c.string();
  }
  return std::nullopt;
}

std::string canonical(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(path, ec);
  return ec ? path : p.string();
}

// `read`: the files already read (their canonical paths and their texts' digests), so that one
// run is counted once however many rows name its file, and however many copies of it are read.
bool read_before(const std::string& path, const std::set<std::string>& read) {
  return read.count("path " + canonical(path)) > 0;
}
bool first_reading(const std::string& path, const std::string& digest, std::set<std::string>& read) {
  const bool new_path = read.insert("path " + canonical(path)).second;
  const bool new_text = read.insert("text " + digest).second;
  return new_path && new_text;
}

// The JSON's start time; nullopt where it has none (it is taken as every row's run then).
std::optional<std::string> run_time_of(const json& doc) {
  if (!doc.is_object()) return std::nullopt;
  const auto context = doc.find("context");
  if (context == doc.end() || !context->is_object()) return std::nullopt;
  const auto time = context->find("time_utc");
  if (time == context->end() || !time->is_string()) return std::nullopt;
  return time->get<std::string>();
}
// Whether the JSON a row names still holds the row's run: the same start time. A run given the
// same --result_json replaces the file, and the rows of the runs before it keep their own.
bool holds_row_run(const std::optional<std::string>& json_time_utc, const std::string& row_time_utc) {
  return row_time_utc.empty() || !json_time_utc || *json_time_utc == row_time_utc;
}

// The header names every column compare reads, each once. Other columns are not checked: a
// later version's results.csv has more of them, and readers ignore fields they do not know.
std::map<std::string, size_t> csv_columns(const std::vector<std::string>& header, const std::string& path) {
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i)
    if (!column.emplace(header[i], i).second)
      fail(path, "not a cnnbench results.csv: its header has column '" + printable(header[i]) + "' twice");
  std::vector<std::string> needed = configuration_fields();
  for (const char* name : {"images_per_sec", "images_per_sec_mean", "images_per_sec_stderr", "timed_steps", "json_file"})
    needed.push_back(name);
  if (column.count("target_top_1_accuracy"))  // the time-to-accuracy columns come together
    for (const char* name : {"time_to_accuracy_sec", "epochs_to_accuracy", "images_to_accuracy"}) needed.push_back(name);
  for (const std::string& name : needed)
    if (!column.count(name)) fail(path, "not a cnnbench results.csv: its header has no column '" + name + "'");
  return column;
}

// A row's numbers are checked whether or not its JSON is at hand to be read instead: a row
// cnnbench wrote never holds a number out of range, so one that does is damage to the file.
// An empty cell is damage too, except where a run writes one for "not measured": a convergence
// row's speeds (images_per_sec when it trained no epoch; the mean and standard error it never
// has), its target (no target: the row is passed over, as before) and its time to accuracy
// (not reached). A benchmark row has every speed column filled, in every version: the columns
// added since (the accuracy ones, at the end) are what an older row has empty, and compare
// reads none of them in a benchmark row.
using Cell = std::function<std::string(const std::string&)>;

// A convergence row's time to its target; nullopt when the row has no target.
std::optional<AccuracyRun> accuracy_row(const Cell& at, const std::string& where) {
  if (!at("images_per_sec").empty()) csv_cell_number(at("images_per_sec"), where, "images_per_sec", speed_or_zero_range);
  if (at("target_top_1_accuracy").empty()) return std::nullopt;
  AccuracyRun run;
  run.source = where;
  for (const std::string& field : configuration_fields()) run.config.values[field] = at(field);
  for (const auto& [field, before] : later_configuration_fields()) run.config.values[field] = before;
  default_flag_settings(speed_flags(), run.config);
  default_flag_settings(accuracy_flags(), run.config);
  run.flags_assumed = true;
  const double target = csv_cell_number(at("target_top_1_accuracy"), where, "target_top_1_accuracy", fraction_range);
  run.config.values["target_top_1_accuracy"] = fmt::format("{:.6g}", target);
  run.reached = !at("time_to_accuracy_sec").empty();  // empty: not reached
  if (run.reached) {
    run.seconds = csv_cell_number(at("time_to_accuracy_sec"), where, "time_to_accuracy_sec", accuracy_seconds_range);
    run.epochs = csv_cell_number(at("epochs_to_accuracy"), where, "epochs_to_accuracy", accuracy_seconds_range);
    run.images = csv_cell_number(at("images_to_accuracy"), where, "images_to_accuracy", accuracy_images_range);
  } else {
    for (const char* column : {"epochs_to_accuracy", "images_to_accuracy"})
      if (!at(column).empty())
        fail(where, std::string(column) + " '" + printable(at(column)) + "' without a time_to_accuracy_sec");
  }
  return run;
}

// A benchmark row's speed (used when its JSON is gone): its images_per_sec, the run's figure.
RunSpeeds speed_row(const Cell& at, const std::string& where) {
  RunSpeeds run;
  run.source = where;
  for (const std::string& field : configuration_fields()) run.config.values[field] = at(field);
  for (const auto& [field, before] : later_configuration_fields()) run.config.values[field] = before;
  default_flag_settings(speed_flags(), run.config);
  run.flags_assumed = true;
  run.run_speeds = {csv_cell_number(at("images_per_sec"), where, "images_per_sec", speed_range)};
  csv_cell_number(at("images_per_sec_mean"), where, "images_per_sec_mean", speed_range);
  csv_cell_number(at("images_per_sec_stderr"), where, "images_per_sec_stderr", spread_range);
  run.context["timed steps"] = fmt::format(
      "{}", static_cast<int64_t>(csv_cell_number(at("timed_steps"), where, "timed_steps", steps_range)));
  return run;
}

// `read`: as first_reading() keeps it.
std::vector<RunSpeeds> read_csv(const std::string& path, std::set<std::string>& read,
                                std::vector<AccuracyRun>& accuracy_runs) {
  std::vector<CsvRow> rows;
  try {
    rows = parse_csv(read_text(path, max_results_csv_bytes, "a cnnbench results.csv"), path);
  } catch (const CsvError& e) {
    throw ResultReadError(e.what());
  }
  if (rows.empty()) fail(path, "empty: no header");
  const std::vector<std::string>& header = rows[0].fields;
  const std::map<std::string, size_t> column = csv_columns(header, path);

  std::vector<RunSpeeds> runs;
  std::set<std::vector<std::string>> seen;  // a row appended twice (a file copied onto itself) is one run
  // the JSONs rows named, each read once: its start time (every run that reused a --result_json
  // names the file its last run wrote; each row parsed it whole before, rows times its size)
  std::map<std::string, std::optional<std::string>> json_times;
  // Whether the row's run is the one its JSON holds (counted through the JSON, once); `take`
  // gets the JSON the first time it is read.
  const auto run_in_json = [&](const std::string& json_path, const std::string& row_time, const auto& take) {
    auto known = json_times.find(json_path);
    if (known == json_times.end()) {
      std::string digest;
      const json doc = parse_json(json_path, &digest);
      known = json_times.emplace(json_path, run_time_of(doc)).first;
      if (holds_row_run(known->second, row_time) && first_reading(json_path, digest, read)) take(doc);
    }
    return holds_row_run(known->second, row_time);
  };
  for (size_t r = 1; r < rows.size(); ++r) {
    const CsvRow& row = rows[r];
    const std::string where = fmt::format("{}:{}", path, row.line);
    if (row.fields.size() != header.size())
      fail(where, fmt::format("{} fields, the header has {}", row.fields.size(), header.size()));
    if (!seen.insert(row.fields).second) continue;
    const Cell at = [&](const std::string& name) {
      const auto it = column.find(name);
      return it == column.end() ? std::string() : row.fields[it->second];
    };
    if (at("mode") == "convergence") {  // a convergence run: its time to a target, if it had one
      std::optional<AccuracyRun> run = accuracy_row(at, where);
      if (!run) continue;
      if (const auto json_path = find_json(at("json_file"), path))
        if (run_in_json(*json_path, at("time_utc"), [&](const json& doc) {
              if (auto from_json = parse_convergence(doc, *json_path)) accuracy_runs.push_back(*from_json);
            }))
          continue;
      accuracy_runs.push_back(std::move(*run));
      continue;
    }
    RunSpeeds run = speed_row(at, where);
    if (const auto json_path = find_json(at("json_file"), path))
      if (run_in_json(*json_path, at("time_utc"), [&](const json& doc) { runs.push_back(parse_result(doc, *json_path)); }))
        continue;
    runs.push_back(std::move(run));  // the JSON is gone, or holds a later run now: the row's summary is all there is
  }
  return runs;
}

ResultSet read_folder(const std::string& dir) {
  ResultSet set;
  std::set<std::string> read;
  const std::string csv = (fs::path(dir) / "results.csv").string();
  std::error_code ec;
  // a results.csv or *.json that is no regular file (a pipe, a device, a dangling link) is
  // refused by read_text, not passed over: a result may be missing behind it
  auto is_result_file = [](const fs::path& p) {
    std::error_code e;
    return fs::symlink_status(p, e).type() != fs::file_type::not_found && !fs::is_directory(p, e);
  };
  if (is_result_file(csv)) set.runs = read_csv(csv, read, set.accuracy_runs);
  std::vector<std::string> jsons;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".json" && is_result_file(entry.path())) jsons.push_back(entry.path().string());
  if (ec) fail(dir, "cannot list: " + ec.message());
  std::sort(jsons.begin(), jsons.end());
  for (const std::string& path : jsons) {
    if (read_before(path, read)) continue;  // through a CSV row: not parsed again
    std::string digest;
    const json doc = parse_json(path, &digest);
    if (!first_reading(path, digest, read)) continue;
    const std::string schema = schema_of(doc);
    if (schema == convergence_schema) {
      if (auto run = parse_convergence(doc, path))
        set.accuracy_runs.push_back(*run);
      else
        set.skipped.push_back(path + " (" + schema + ", no target accuracy or no whole time to it)");
      continue;
    }
    if (schema != result_schema && schema.rfind("cnnbench.", 0) == 0) {
      set.skipped.push_back(path + " (" + schema + ")");  // an allreduce or input result, not an error
      continue;
    }
    set.runs.push_back(parse_result(doc, path));
  }
  return set;
}

}  // namespace

RunSpeeds read_result_json(const std::string& path) { return parse_result(parse_json(path), path); }

ResultSet read_results(const std::string& path) {
  std::error_code ec;
  ResultSet set;
  if (fs::is_directory(path, ec)) {
    set = read_folder(path);
  } else if (!fs::exists(path, ec)) {
    fail(path, "no such file or folder");
  } else if (fs::path(path).extension() == ".csv") {
    std::set<std::string> read;
    set.runs = read_csv(path, read, set.accuracy_runs);
  } else {
    const json doc = parse_json(path);
    if (schema_of(doc) == convergence_schema) {
      auto run = parse_convergence(doc, path);
      if (!run)
        fail(path, "a convergence result without a target accuracy, resumed from a checkpoint that did not hold "
                   "the training time, timed on other rank counts than its own, or evaluated on a test set a resume "
                   "changed: no time to accuracy to compare");
      set.accuracy_runs.push_back(*run);
    } else {
      set.runs.push_back(parse_result(doc, path));
    }
  }
  if (set.runs.empty() && set.accuracy_runs.empty())
    fail(path, "holds no training results (no result *.json, no rows in results.csv)");
  return set;
}

}  // namespace cnnbench
