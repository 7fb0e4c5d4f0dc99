// harness/data/image_example.h — one ImageNet image as a tf.train.Example, the way TensorFlow's
// build_imagenet_data.py writes them: image/encoded (JPEG bytes), image/class/label (1..1000;
// 0 is left for "background"), image/class/synset, image/height, image/width, image/format,
// image/filename and, where known, image/object/bbox/{xmin,ymin,xmax,ymax} (fractions of the
// width and height). cnnbench trains on the label as stored, as tf_cnn_benchmarks does (a
// 1001-output head for ImageNet's 1..1000).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cnnbench {

struct Box {
  float xmin = 0, ymin = 0, xmax = 1, ymax = 1;  // fractions of the image
};

struct ImageExample {
  std::string jpeg;
  int64_t label = 0;   // as stored: the class's output (1..1000 for ImageNet, 0 its background)
  std::string synset, filename;
  int64_t height = 0, width = 0;
  std::vector<Box> boxes;
};

// The Example's fields; throws std::runtime_error with the problem (not a protobuf Example, no
// image/encoded, no image/class/label, a bounding box list of unequal lengths).
ImageExample parse_image_example(const std::string& serialized);
std::string serialize_image_example(const ImageExample& example);

}  // namespace cnnbench
