// tests/fuzz/fuzz_idx.cc — libFuzzer harness for the idx reader (MNIST, Fashion-MNIST), plain
// and gzipped. Input: one byte of modes, two bytes (little-endian) of the images file's length,
// the images file, then the labels file. Modes, two bits per file (images, then labels): 0 plain,
// 1 gzip-compressed here and named .gz (so the fuzzer explores the idx inside), 2 the bytes as
// they are but named .gz (a damaged gzip stream). load_idx_dataset() gives consistent images
// and labels 0..9, or one line naming a file.
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_files.h"
#include "harness/data/augmentation.h"
#include "harness/data/image_dataset.h"

using namespace cnnbench;

namespace {

void write_idx(const std::string& stem, int mode, const uint8_t* data, size_t size) {
  std::error_code ec;
  std::filesystem::remove(stem, ec);
  std::filesystem::remove(stem + ".gz", ec);
  if (mode == 1) {
    gzFile f = gzopen((stem + ".gz").c_str(), "wb1");
    if (size) gzwrite(f, data, static_cast<unsigned>(size));
    gzclose(f);
  } else {
    fuzz::write_bytes(mode == 2 ? stem + ".gz" : stem, data, size);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const int modes = data[0];
  size_t images_size = data[1] | (size_t{data[2]} << 8);
  data += 3;
  size -= 3;
  if (images_size > size) images_size = size;
  const std::string dir = fuzz::scratch_dir();
  write_idx(dir + "/train-images-idx3-ubyte", (modes & 3) % 3, data, images_size);
  write_idx(dir + "/train-labels-idx1-ubyte", ((modes >> 2) & 3) % 3, data + images_size, size - images_size);
  ImageDataset d;
  try {
    d = load_idx_dataset(dir, true, "fashion_mnist");
  } catch (const std::runtime_error& e) {
    fuzz::expect_one_line(e.what(), dir);
    return 0;
  }
  const int64_t image_bytes = d.channels * d.height * d.width;
  fuzz::expect(d.count >= 1 && static_cast<int64_t>(d.labels.size()) == d.count, "one label per image");
  fuzz::expect(image_bytes >= 1 && static_cast<int64_t>(d.pixels.size()) == d.count * image_bytes,
               "the pixels the header announces");
  for (int32_t label : d.labels) fuzz::expect(label >= 0 && label < d.classes, "labels below the class count");
  std::mt19937_64 rng(size);
  std::vector<float> example(static_cast<size_t>(image_bytes));
  make_example(d, d.count - 1, augmentation_for("fashion_mnist", true), rng, example.data());
  return 0;
}
