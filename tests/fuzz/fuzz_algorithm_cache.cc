// tests/fuzz/fuzz_algorithm_cache.cc — libFuzzer harness for --algorithm_cache's file as a GPU run
// reads and saves it (harness/run/algorithm_cache.h). Input: the file. read_algorithm_cache()
// gives choices whose text reads back as itself, or one line naming the file; a file that reads
// takes a new choice on saving and keeps every line it had; a file that does not read is not
// saved over, and its bytes stay as they were.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "fuzz_files.h"
#include "harness/run/algorithm_cache.h"

using namespace cnnbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_dir() + "/choices.txt";
  fuzz::write_bytes(path, data, size);
  SearchChoices mine;
  mine.put("fuzz gpu sm_90 cuDNN 91900 driver 13000", "conv f16:8x16x32x32:16 3x3", "1 1 0 1 1 1 0 0 0 0 0 0 0");
  std::unique_ptr<SearchChoices> read;
  try {
    read = read_algorithm_cache(path);
  } catch (const std::runtime_error& e) {
    fuzz::expect_one_line(e.what(), path);
    fuzz::expect(!save_algorithm_cache(path, mine).empty(), "a file that does not read was saved over");
    fuzz::expect(fuzz::read_bytes(path) == std::string(reinterpret_cast<const char*>(data), size),
                 "a file that does not read was changed");
    return 0;
  }
  const std::string text = read->text();
  fuzz::expect(SearchChoices::parse(text).text() == text, "the text of what was read reads back as itself");
  fuzz::expect(save_algorithm_cache(path, mine).empty(), "a file that reads could not be saved");
  const auto after = read_algorithm_cache(path);
  fuzz::expect(after->find("fuzz gpu sm_90 cuDNN 91900 driver 13000", "conv f16:8x16x32x32:16 3x3") != nullptr,
               "the new choice was not saved");
  SearchChoices kept = *after;
  kept.take_missing(*read);
  fuzz::expect(kept.size() == after->size(), "a line the file had was lost on saving");
  return 0;
}
