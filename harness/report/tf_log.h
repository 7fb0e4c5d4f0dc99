// harness/report/tf_log.h — console lines in tf_cnn_benchmarks' format, so existing log parsers keep
// working (out may be null: ranks other than 0 print nothing): the header block, "Running warm up"/"Done warm up", the Step/Img/sec/total_loss
// table every display_every steps, and the "total images/sec:" block. Rank 0 prints.
#pragma once

#include <cstdio>
#include <vector>

#include "harness/report/step_record.h"
#include "harness/cli/run_settings.h"
#include "models/graph.h"

namespace cnnbench {

// The dashed line, "total images/sec: X", the dashed line: every mode's log ends with these three
// lines, as tf_cnn_benchmarks' does, so parsers that read its tail (lines[-2]) find the figure.
void print_total_images_per_sec(FILE* out, double images_per_sec);

class TfLog {
 public:
  TfLog(FILE* out, const RunSettings& settings, const Config& config) : out_(out), settings_(settings), config_(config) {}

  // tf_cnn_benchmarks' header lines, with the model's classes (its head's outputs) and parameters.
  void header(const std::string& devices, const std::string& backend_note, const Graph& graph);
  void warmup_started();
  void warmup_done();
  // Prints the line for timed step `index` when tf_cnn_benchmarks would (the first step and
  // every display_every-th), with statistics over all timed steps so far.
  void step(int64_t index, const std::vector<StepRecord>& steps);
  // The log's last three lines, as tf_cnn_benchmarks ends its log (parsers read the tail).
  void total(double images_per_sec);
  // --repeats: the line that starts run `index` of `count` (from the second on), and the one that
  // ends each run with its speed (not a "total images/sec" line: a log has one, the last).
  void repeat_started(int64_t index, int64_t count);
  void repeat_done(int64_t index, int64_t count, double images_per_sec);

 private:
  // the top-1 and top-5 columns: with --print_training_accuracy, and always forward only (as
  // tf_cnn_benchmarks prints them)
  bool accuracy_columns() const { return config_.print_training_accuracy || config_.forward_only; }
  FILE* out_;
  const RunSettings& settings_;
  const Config& config_;
};

}  // namespace cnnbench
