// tests/fuzz/fuzz_compare.h — what fuzz_results_csv and fuzz_result_json share past the reader:
// the oracles on the runs compare read (every number within the ranges result_numbers.h names),
// the comparison of those runs with one another (statistics in range, a report whose lines are
// bounded whatever the numbers), and `cnnbench compare FILE FILE` as a user runs it.
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_files.h"
#include "harness/compare/compare.h"
#include "harness/compare/result_numbers.h"
#include "harness/compare/result_reader.h"

namespace cnnbench::fuzz {

inline bool in_range(double v, const NumberRange& range) { return std::isfinite(v) && v >= range.low && v <= range.high; }

// Every number of every run read is one a result can hold.
inline void expect_numbers_in_range(const ResultSet& set) {
  for (const RunSpeeds& run : set.runs) {
    expect(!run.run_speeds.empty(), "a speed for every run");
    for (double v : run.run_speeds) expect(in_range(v, speed_range), "run speeds in range");
  }
  for (const AccuracyRun& a : set.accuracy_runs) {
    expect(!a.config["target_top_1_accuracy"].empty(), "a target");
    expect(!a.reached || (in_range(a.seconds, accuracy_seconds_range) && in_range(a.epochs, accuracy_seconds_range) &&
                          in_range(a.images, accuracy_images_range)),
           "times to accuracy in range");
  }
}

// The runs compared with one another, whatever their configurations (the first few each way):
// p-values in [0, 1], finite changes, and a report whose every line is at most the widest label
// plus 200 characters (a 1e16 img/s cell is 7 wide, not 20).
inline void compare_runs_with_one_another(const ResultSet& set) {
  constexpr size_t most = 4;
  CompareReport report;
  report.base_path = report.new_path = "fuzz";
  for (size_t i = 0; i < set.runs.size() && i < most; ++i)
    for (size_t j = 0; j < set.runs.size() && j < most; ++j) {
      const ComparedConfiguration c = compare_speeds({set.runs[i]}, {set.runs[j]}, 0.05);
      expect(c.test.p_value >= 0 && c.test.p_value <= 1, "a p-value in [0, 1]");
      expect(c.test.ratio_ci.low <= c.test.ratio_ci.high, "an interval in order");
      expect(std::isfinite(c.change) && std::isfinite(c.base_speed) && std::isfinite(c.new_speed), "a finite change");
      report.matched.push_back(c);
    }
  for (size_t i = 0; i < set.accuracy_runs.size() && i < most; ++i)
    for (size_t j = 0; j < set.accuracy_runs.size() && j < most; ++j) {
      const ComparedAccuracy c = compare_time_to_accuracy({set.accuracy_runs[i]}, {set.accuracy_runs[j]}, 0.05);
      expect(c.p_value >= 0 && c.p_value <= 1, "a p-value in [0, 1]");
      report.accuracy.push_back(c);
    }
  size_t widest_label = 0;
  for (const auto& c : report.matched) widest_label = std::max(widest_label, c.label.size());
  for (const auto& c : report.accuracy) widest_label = std::max(widest_label, c.label.size());
  const std::string text = format_report(report);
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    const size_t length = (end == std::string::npos ? text.size() : end) - start;
    if (length > widest_label + 200) {
      std::fprintf(stderr, "a report line of %zu characters (widest label %zu): %s\n", length, widest_label,
                   text.substr(start, length).c_str());
      std::abort();
    }
    start = end == std::string::npos ? text.size() : end + 1;
  }
  (void)report_json(report).dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `cnnbench compare PATH PATH` (as JSON or text): exit 0, a run never being slower than itself,
// and nothing on stderr; or exit 2 with one line naming the file.
inline void compare_with_itself(const std::string& path, bool json) {
  static FILE* out = std::fopen("/dev/null", "w");
  char* message = nullptr;
  size_t length = 0;
  FILE* err = open_memstream(&message, &length);
  const int code = compare_command(json ? std::vector<std::string>{path, path, "--json"}
                                        : std::vector<std::string>{path, path},
                                   out, err);
  std::fclose(err);
  std::string line(message, length);
  std::free(message);
  expect(code == 0 || code == 2, "exit code 0 or 2");
  if (code == 2) {
    expect(!line.empty() && line.back() == '\n', "a message when refused");
    line.pop_back();
    expect_one_line(line, path);
  } else {
    expect(line.empty(), "nothing on stderr when it compared");
  }
}

}  // namespace cnnbench::fuzz
