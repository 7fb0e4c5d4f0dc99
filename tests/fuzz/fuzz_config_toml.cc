// tests/fuzz/fuzz_config_toml.cc — libFuzzer harness for --config files: the input is the TOML
// document. Applying it gives a Config or one ConfigError line naming the file.
#include <cstdint>
#include <string>

#include "fuzz_files.h"
#include "harness/cli/config.h"

using namespace cnnbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = "fuzz.toml";
  Config config;
  try {
    apply_config_text(text, path, config);
  } catch (const ConfigError& e) {
    fuzz::expect_one_line(e.what(), path);
    return 0;
  }
  try {
    resolve_device(config);  // as parse_command_line() does next
  } catch (const ConfigError& e) {
    fuzz::expect_one_line(e.what());
  }
  for (const auto& [name, value] : config_values(config)) fuzz::expect(!name.empty(), "every setting has a name");
  return 0;
}
