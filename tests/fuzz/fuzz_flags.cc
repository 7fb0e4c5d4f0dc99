// tests/fuzz/fuzz_flags.cc — libFuzzer harness for the command line: the input is the arguments,
// separated by NUL bytes. parse_command_line() gives a Config or one ConfigError line; a Config
// is then resolved against 1, 3 and 2^31 - 1 ranks (the ranks x batch product), which again
// gives settings or one ConfigError line.
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_files.h"
#include "harness/cli/config.h"
#include "harness/cli/run_settings.h"

using namespace cnnbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args = {"cnnbench"};
  std::string arg;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(arg);
      arg.clear();
    } else {
      arg += static_cast<char>(data[i]);
    }
  }
  if (!arg.empty()) args.push_back(arg);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());

  Config config;
  try {
    config = parse_command_line(static_cast<int>(argv.size()), argv.data());
  } catch (const ConfigError& e) {
    fuzz::expect_one_line(e.what());
    return 0;
  }
  for (int ranks : {1, 3, INT_MAX}) {
    try {
      const RunSettings s = resolve_settings(config, ranks, 1);
      fuzz::expect(s.batch_size >= 1 && s.global_batch <= max_global_batch, "global batch in range");
      fuzz::expect(s.timed_steps >= 1 && s.timed_steps <= max_steps, "timed steps in range");
      fuzz::expect(s.warmup_steps >= 0 && s.warmup_steps <= max_steps, "warm-up steps in range");
    } catch (const ConfigError& e) {
      fuzz::expect_one_line(e.what());
    }
  }
  return 0;
}
