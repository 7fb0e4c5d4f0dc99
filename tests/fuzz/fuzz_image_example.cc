// tests/fuzz/fuzz_image_example.cc — libFuzzer harness for one TFRecord record of an ImageNet
// shard: the input is a serialized tf.train.Example. parse_image_example() gives its fields or one
// line saying what is wrong; what it reads survives writing and reading back unchanged; and the
// image is made into a 32 x 32 example as the pipeline does (training, with the bounding boxes,
// when the input's length is odd; evaluation otherwise): finite pixels, or one line naming the
// record.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_files.h"
#include "harness/data/image_example.h"
#include "harness/data/imagenet_recipe.h"

using namespace cnnbench;

namespace {

bool same_boxes(const std::vector<Box>& a, const std::vector<Box>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {  // bit for bit (NaN included)
    const float x[4] = {a[i].xmin, a[i].ymin, a[i].xmax, a[i].ymax}, y[4] = {b[i].xmin, b[i].ymin, b[i].xmax, b[i].ymax};
    if (std::memcmp(x, y, sizeof(x)) != 0) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ImageExample e;
  try {
    e = parse_image_example(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const std::runtime_error& error) {
    fuzz::expect_one_line(error.what());
    return 0;
  }
  const ImageExample again = parse_image_example(serialize_image_example(e));
  fuzz::expect(again.jpeg == e.jpeg && again.label == e.label && again.synset == e.synset &&
                   again.filename == e.filename && again.height == e.height && again.width == e.width &&
                   same_boxes(again.boxes, e.boxes),
               "an Example written back reads the same");
  const std::string name = "train-00000-of-00001: record at byte 0";
  constexpr int64_t side = 32;
  std::vector<float> example(3 * side * side);
  std::mt19937_64 rng(size);
  try {
    make_imagenet_example(reinterpret_cast<const unsigned char*>(e.jpeg.data()), e.jpeg.size(), name, size % 2 == 1,
                          side, e.boxes, rng, example.data());
  } catch (const std::runtime_error& error) {
    fuzz::expect_one_line(error.what(), name);
    return 0;
  }
  for (float v : example) fuzz::expect(std::isfinite(v), "finite pixels");
  return 0;
}
