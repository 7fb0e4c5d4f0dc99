// tests/fuzz/fuzz_checkpoint.cc — libFuzzer harness for the checkpoint reader: the input is a
// checkpoint file of the tiny model of fuzz_plan.h. It is read as it is, and once more with its
// last 8 bytes replaced by the right checksum, so that the fuzzer gets past the checksum to the
// header and the sizes. read_checkpoint() restores the state or fails with one line naming the
// file; a checkpoint it accepts has counts that a resumed run can continue from.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "fuzz_files.h"
#include "fuzz_plan.h"
#include "harness/run/checkpoint.h"

using namespace cnnbench;

namespace {

// The checksum the checkpoint writer appends (64-bit FNV-1a).
uint64_t fnv1a(const uint8_t* data, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

void read_back(const std::string& path, const std::string& bytes) {
  static fuzz::TinyPlan plan;
  fuzz::write_bytes(path, bytes.data(), bytes.size());
  try {
    const CheckpointInfo info = read_checkpoint(path, plan, fuzz::tiny_model);
    fuzz::expect(info.epochs_done >= 0 && info.steps_done >= 0, "counts a run can continue from");
    fuzz::expect(info.path == path && info.model == fuzz::tiny_model, "the file and model read");
  } catch (const std::runtime_error& e) {
    fuzz::expect_one_line(e.what(), path);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_dir() + "/checkpoint-epoch-0001.ckpt";
  std::string bytes(reinterpret_cast<const char*>(data), size);
  read_back(path, bytes);
  if (size >= sizeof(uint64_t)) {
    const uint64_t sum = fnv1a(data, size - sizeof(sum));
    std::memcpy(bytes.data() + size - sizeof(sum), &sum, sizeof(sum));
    if (std::memcmp(bytes.data(), data, size) != 0) read_back(path, bytes);
  }
  return 0;
}
