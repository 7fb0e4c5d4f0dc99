// tests/fuzz/fuzz_jpeg.cc — libFuzzer harness for JPEG decoding: the input is one .JPEG file of
// an ImageNet-style folder, made into a 32 x 32 example as the input pipeline does (a random-
// resized crop for training when the input's length is odd, else resize and centre crop). It
// decodes to finite normalised pixels or fails with one line naming the file.
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_files.h"
#include "harness/data/jpeg_folder.h"

using namespace cnnbench;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch_dir() + "/img.JPEG";
  fuzz::write_bytes(path, data, size);
  JpegFolder folder;
  folder.root = fuzz::scratch_dir();
  folder.classes = {"n01440764"};
  folder.files = {path};
  folder.labels = {0};
  constexpr int64_t side = 32;
  const JpegFolderSource source(folder, /*training=*/size % 2 == 1, side);
  std::vector<float> example(static_cast<size_t>(source.example_floats()));
  std::mt19937_64 rng(size);
  try {
    source.make(0, rng, example.data());
  } catch (const std::runtime_error& e) {
    fuzz::expect_one_line(e.what(), path);
    return 0;
  }
  for (float v : example) fuzz::expect(std::isfinite(v), "finite pixels");
  return 0;
}
