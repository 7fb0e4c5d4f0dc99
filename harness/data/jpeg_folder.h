// harness/data/jpeg_folder.h — ImageNet-style folders of JPEG files (root/<class>/*.JPEG),
// decoded with libjpeg-turbo (using its DCT scaling to decode large files at a fraction of
// their size when the crop allows) and turned into 3 x size x size examples: for training a
// random-resized crop (scale 0.08-1, aspect 3/4-4/3, as torchvision) and a horizontal flip; for
// evaluation the shorter side resized to size x 256/224 and a centre crop. A corrupt or
// unsupported file, or one of more than 64 megapixels (8192 x 8192), gets an error naming it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/data/example_source.h"
#include "harness/data/image_example.h"

namespace cnnbench {

struct JpegFolder {
  std::string root;
  std::vector<std::string> classes;  // sorted folder names; the label is the index
  std::vector<std::string> files;
  std::vector<int32_t> labels;
};

// Scans root/<class>/ for .jpeg/.jpg files (any case). With `classes`, labels follow that list
// (a validation folder uses the training folder's classes) and unknown folders are an error.
JpegFolder scan_jpeg_folder(const std::string& root, const std::vector<std::string>* classes = nullptr);

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // height x width x 3
};

// Decodes a JPEG file to RGB, reduced by 1/2, 1/4 or 1/8 while its shorter side stays >= min_side.
RgbImage decode_jpeg(const std::string& path, int min_side);
// The same for JPEG bytes in memory; `name` (a file, a shard and offset) is what errors name.
RgbImage decode_jpeg_bytes(const unsigned char* data, size_t size, const std::string& name, int min_side);
// The width and height alone (no pixels), with the same checks of the header.
RgbImage read_jpeg_header(const unsigned char* data, size_t size, const std::string& name);

// The ImageNet recipe on a decoded image, written as 3 x size x size normalised floats: for
// training a random-resized crop (covering at least a tenth of one of `boxes`, when given, as
// TensorFlow's sampler does) and a flip; for evaluation the shorter side resized to
// size x 256/224 and a centre crop. Boxes are fractions of the image.
void make_imagenet_example(const RgbImage& image, bool training, int64_t size, const std::vector<Box>& boxes,
                           std::mt19937_64& rng, float* out);
// The shorter side to decode at least, for make_imagenet_example.
inline int imagenet_decode_side(bool training, int64_t size) {
  return static_cast<int>(training ? size : size * 256 / 224);
}

class JpegFolderSource final : public ExampleSource {
 public:
  JpegFolderSource(JpegFolder folder, bool training, int64_t size = 224);
  int64_t count() const override { return static_cast<int64_t>(folder_.files.size()); }
  int32_t label(int64_t index) const override { return folder_.labels[index]; }
  int64_t example_floats() const override { return 3 * size_ * size_; }
  void make(int64_t index, std::mt19937_64& rng, float* out) const override;
  const JpegFolder& folder() const { return folder_; }

 private:
  JpegFolder folder_;
  bool training_;
  int64_t size_;
};

}  // namespace cnnbench
