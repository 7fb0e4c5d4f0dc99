// harness/report/result_record.h — the two result files of a training or forward-only run: one
// JSON document (schema "cnnbench.result/1": context, config, model, run, every step, summary,
// optional repeats and layers) and one row appended to <benchmark_log_dir>/results.csv, read off
// that document through result_fields.h. docs/results.md lists every field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/report/step_record.h"
#include "harness/report/run_context.h"
#include "harness/report/run_summary.h"

namespace cnnbench {

struct ResultInputs {
  const Config& config;
  const RunSettings& settings;
  const Graph& graph;
  const RunContext& context;
  const std::vector<StepRecord>& steps;
  const RunSummary& summary;
  const std::vector<LayerTime>* layers;  // null without --layer_timing
  std::string backend;
  int hosts = 1;
  std::string allreduce = "none";  // the allreduce backend, or none (1 rank, independent)
  const RepeatSpeeds* repeats = nullptr;  // --repeats N > 1: every run's speed (the rest is the median run's)
};

nlohmann::json result_json(const ResultInputs& in);

// Writes the JSON (atomically) and appends the CSV row; returns the JSON path.
std::string write_results(const ResultInputs& in);

}  // namespace cnnbench
