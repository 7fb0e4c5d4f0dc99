// tests/fuzz/fuzz_result_json.cc — libFuzzer harness for the result JSON reader behind `cnnbench
// compare`: the input is one result file. read_results() gives one run (a training result) or
// one time-to-accuracy run (a convergence result) whose every number is within the ranges a
// result can hold (harness/compare/result_numbers.h), or one ResultReadError line naming the
// file; the run is compared with itself (statistics in range, report lines of bounded length),
// and `cnnbench compare JSON JSON` exits 0 or 2 with one line naming the file.
#include <cstdint>
#include <string>

#include "fuzz_compare.h"
#include "fuzz_files.h"
#include "harness/compare/result_reader.h"

using namespace cnnbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_dir() + "/resnet20_fp32_1r.json";
  fuzz::write_bytes(path, data, size);
  try {
    const ResultSet set = read_results(path);
    fuzz::expect(set.runs.size() + set.accuracy_runs.size() == 1, "one run per JSON");
    fuzz::expect_numbers_in_range(set);
    for (const RunSpeeds& run : set.runs) fuzz::expect(!run.run_speeds.empty(), "the run's speed");
    fuzz::compare_runs_with_one_another(set);
  } catch (const ResultReadError& e) {
    fuzz::expect_one_line(e.what(), path);
  }
  fuzz::compare_with_itself(path, size % 2 == 0);
  return 0;
}
