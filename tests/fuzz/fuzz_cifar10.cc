// tests/fuzz/fuzz_cifar10.cc — libFuzzer harness for the CIFAR-10 binary reader: the input is
// test_batch.bin. load_cifar10() gives whole records with labels 0..9, or one line naming the
// file; a record read is then made into a training example, as the input pipeline does.
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_files.h"
#include "harness/data/augmentation.h"
#include "harness/data/image_dataset.h"

using namespace cnnbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = fuzz::scratch_dir();
  const std::string path = dir + "/test_batch.bin";
  fuzz::write_bytes(path, data, size);
  ImageDataset d;
  try {
    d = load_cifar10(dir, false);
  } catch (const std::runtime_error& e) {
    fuzz::expect_one_line(e.what(), dir);
    return 0;
  }
  fuzz::expect(d.count >= 1 && static_cast<int64_t>(d.labels.size()) == d.count, "one label per image");
  fuzz::expect(static_cast<int64_t>(d.pixels.size()) == d.count * 3 * 32 * 32, "3072 bytes per image");
  for (int32_t label : d.labels) fuzz::expect(label >= 0 && label < d.classes, "labels below the class count");
  std::mt19937_64 rng(size);
  std::vector<float> example(3 * 32 * 32);
  make_example(d, d.count - 1, augmentation_for("cifar10", true), rng, example.data());
  return 0;
}
