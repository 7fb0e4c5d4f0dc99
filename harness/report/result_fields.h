// harness/report/result_fields.h — the one definition of a run's result record: every field of the
// JSON documents "cnnbench.result/1" (training and forward-only runs) and "cnnbench.convergence/1"
// (runs on real data), with its JSON path, the results.csv column it fills, its unit, and whether
// it decides how fast a run goes. The JSON writers build their documents field by field; the
// results.csv row of every mode is read off the document through this table; compare matches runs
// on its configuration fields; docs/results.md lists the same fields (a test holds them equal).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/cli/config.h"
#include "harness/cli/run_settings.h"
#include "models/graph.h"

namespace cnnbench {

enum ResultSchema : unsigned { kTrainingResult = 1, kConvergenceResult = 2 };

struct ResultField {
  const char* json_path;   // dotted from the root: "summary.images_per_sec", "epochs[].test_top1"; "" for a
                           // results.csv column with no JSON field (json_file)
  const char* csv_column;  // the results.csv column it fills, "" for none
  const char* unit;        // "images/s", "s", "bytes", "fraction", "count", "text", "bool", ...
  unsigned schemas;        // ResultSchema bits: the documents that hold it
  // part of the configuration compare matches runs on; `before` is the value of a field added
  // later (hierarchical_allreduce) for results that predate it
  bool configuration = false;
  const char* before = nullptr;
};

// Every field, results.csv's columns first in their order (which only grows at its end: a
// results.csv written before gains the new columns).
const std::vector<ResultField>& result_fields();

// The "run" fields every result document holds, named alike in each: what compare matches runs
// by, the batch and the steps. Each writer adds its own beside them.
struct RunFacts {
  std::string mode, backend, allreduce;  // allreduce: the backend, or none
  int hosts = 1;
  int64_t timed_steps = 0;
  bool overlap_forward = false;
};
nlohmann::json run_fields(const Config& config, const RunSettings& settings, const RunFacts& facts);
// The "model" fields every result document holds: name, classes (the head's outputs),
// parameters, forward GMACs per image.
nlohmann::json model_fields(const RunSettings& settings, const Graph& graph);

// The table as a JSON array, one object a field: json_path, csv_column (null for none), unit,
// schemas (the documents' schema names), configuration. `cnnbench --list_result_fields` prints
// it; scripts read their fields' names from it instead of keeping a copy.
nlohmann::json result_fields_json();

std::vector<std::string> csv_header();
// The columns of allreduce.csv (--mode=allreduce, a row a message size) and input.csv
// (--mode=input): defined here so that a run checks the file it will append to before it starts.
std::vector<std::string> allreduce_csv_header();
std::vector<std::string> input_csv_header();
// The results.csv row of a result document: each column the value at its field's JSON path
// (integers and text as they are, other numbers as csv_number, true/false; empty where the
// document has no such field), json_file the given path.
std::vector<std::string> csv_row(const nlohmann::json& doc, const std::string& json_file);

// A document's fields as the table names them: "steps.loss" for an array of numbers,
// "layers[].name" for the members of an array of objects, "config.*" and
// "context.mpi_settings.*" for the open maps. Used by the tests that hold writers, table and
// docs together.
std::vector<std::string> json_field_paths(const nlohmann::json& doc);

}  // namespace cnnbench
