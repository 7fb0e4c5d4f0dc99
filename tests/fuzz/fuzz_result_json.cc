// tests/fuzz/fuzz_result_json.cc — libFuzzer harness for the result JSON reader behind `cnnbench
// compare`: the input is one result file. read_results() gives one run with positive finite
// speeds (a training result) or one time-to-accuracy run with finite non-negative figures (a
// convergence result), or one ResultReadError line naming the file.
#include <cmath>
#include <cstdint>
#include <string>

#include "fuzz_files.h"
#include "harness/compare/result_reader.h"

using namespace cnnbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_dir() + "/resnet20_fp32_1r.json";
  fuzz::write_bytes(path, data, size);
  try {
    const ResultSet set = read_results(path);
    fuzz::expect(set.runs.size() + set.accuracy_runs.size() == 1, "one run per JSON");
    for (const AccuracyRun& a : set.accuracy_runs) {
      fuzz::expect(!a.reached || (std::isfinite(a.seconds) && a.seconds >= 0 && std::isfinite(a.epochs) &&
                                  std::isfinite(a.images)),
                   "finite times to accuracy");
      fuzz::expect(!a.config["target_top_1_accuracy"].empty(), "a target");
    }
    if (set.runs.empty()) return 0;
    const RunSpeeds& run = set.runs[0];
    fuzz::expect(run.steps >= 1 && static_cast<size_t>(run.steps) == run.per_step.size(), "one speed per step");
    for (double v : run.per_step) fuzz::expect(v > 0 && std::isfinite(v), "positive finite speeds");
    fuzz::expect(std::isfinite(run.mean) && std::isfinite(run.stderr_), "a finite summary");
  } catch (const ResultReadError& e) {
    fuzz::expect_one_line(e.what(), path);
  }
  return 0;
}
