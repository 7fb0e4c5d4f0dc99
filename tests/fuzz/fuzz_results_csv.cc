// tests/fuzz/fuzz_results_csv.cc — libFuzzer harness for results.csv as `cnnbench compare` reads
// it: the input is the CSV. read_results() gives runs with positive finite speeds or one
// ResultReadError line naming the file (and line); then `cnnbench compare CSV CSV`, as text and
// as JSON, exits 0 (a run is never slower than itself) or 2 with one line naming the file.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_files.h"
#include "harness/compare/compare.h"
#include "harness/compare/result_reader.h"

using namespace cnnbench;

namespace {

void compare_with_itself(const std::string& path, bool json) {
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
  fuzz::expect(code == 0 || code == 2, "exit code 0 or 2");
  if (code == 2) {
    fuzz::expect(!line.empty() && line.back() == '\n', "a message when refused");
    line.pop_back();
    fuzz::expect_one_line(line, path);
  } else {
    fuzz::expect(line.empty(), "nothing on stderr when it compared");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_dir() + "/results.csv";
  fuzz::write_bytes(path, data, size);
  try {
    const ResultSet set = read_results(path);
    for (const RunSpeeds& run : set.runs) {
      fuzz::expect(run.steps >= 1, "timed steps");
      fuzz::expect(run.mean > 0 && std::isfinite(run.mean) && std::isfinite(run.stderr_), "a finite summary");
    }
  } catch (const ResultReadError& e) {
    fuzz::expect_one_line(e.what(), path);
  }
  compare_with_itself(path, size % 2 == 0);
  return 0;
}
