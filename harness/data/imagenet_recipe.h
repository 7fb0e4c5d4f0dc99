// harness/data/imagenet_recipe.h — the ImageNet recipe that turns a JPEG into a 3 x size x size
// network input, shared by JPEG folders and TFRecord shards. Training: a random-resized crop
// (scale 0.08-1, aspect 3/4-4/3, as torchvision; covering a tenth of one of the Example's boxes
// when it has some, as TensorFlow's sampler) and a horizontal flip. Evaluation: the shorter side
// resized to size x 256/224 and a centre crop. The crop is chosen from the header alone and only
// its part of the image is decoded, at the smallest DCT scale that keeps it >= size; then bilinear
// resampling and normalisation by ImageNet's mean and deviation.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "harness/data/image_example.h"
#include "harness/data/jpeg_decode.h"

namespace cnnbench {

struct ImagenetCrop {
  PixelWindow window;  // in the full image's pixels
  bool flip = false;
};

// The crop of a width x height image; draws from `rng` only when training. Boxes are fractions.
ImagenetCrop imagenet_crop(int width, int height, bool training, int64_t size, const std::vector<Box>& boxes,
                           std::mt19937_64& rng);

// JPEG bytes (`name` for errors) to normalised CHW floats in `out`.
void make_imagenet_example(const unsigned char* jpeg, size_t bytes, const std::string& name, bool training,
                           int64_t size, const std::vector<Box>& boxes, std::mt19937_64& rng, float* out);
// The same from an image decoded whole.
void make_imagenet_example(const RgbImage& image, bool training, int64_t size, const std::vector<Box>& boxes,
                           std::mt19937_64& rng, float* out);

}  // namespace cnnbench
