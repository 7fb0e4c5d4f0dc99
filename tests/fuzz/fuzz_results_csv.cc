// tests/fuzz/fuzz_results_csv.cc — libFuzzer harness for results.csv as `cnnbench compare` reads
// it: the input is the CSV. read_results() gives runs whose every number is within the ranges a
// result can hold (harness/compare/result_numbers.h) or one ResultReadError line naming the file
// (and line); the runs read are compared with one another (statistics in range, report lines of
// bounded length); then `cnnbench compare CSV CSV`, as text and as JSON, exits 0 (a run is never
// slower than itself) or 2 with one line naming the file.
#include <cstdint>
#include <string>

#include "fuzz_compare.h"
#include "fuzz_files.h"
#include "harness/compare/result_reader.h"

using namespace cnnbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_dir() + "/results.csv";
  fuzz::write_bytes(path, data, size);
  try {
    const ResultSet set = read_results(path);
    fuzz::expect_numbers_in_range(set);
    fuzz::compare_runs_with_one_another(set);
  } catch (const ResultReadError& e) {
    fuzz::expect_one_line(e.what(), path);
  }
  fuzz::compare_with_itself(path, size % 2 == 0);
  return 0;
}
