// harness/data/augmentation.h — turning stored images into network inputs: per-channel
// mean/std normalisation, and for training the CIFAR recipe (4-pixel zero pad, random crop of the
// image's size, horizontal flip). Deterministic given the random engine passed in.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "harness/data/image_dataset.h"

namespace cnnbench {

struct Augmentation {
  float mean[3] = {0, 0, 0}, stddev[3] = {1, 1, 1};  // of pixel / 255
  int64_t pad = 0;     // zero padding before the random crop (CIFAR: 4)
  bool flip = false;   // random horizontal flip
};

// The recipe for a data set: evaluation only normalises; training augments as `choice` says
// (--train_augmentation): "auto" is the data set's usual recipe (CIFAR-10 crop_flip, Fashion-MNIST
// none, ImageNet a flip, its crops made by imagenet_recipe), "none" only normalises, "crop_flip"
// pads by 4 pixels, crops at random and flips. Throws std::invalid_argument for ImageNet with a
// choice other than "auto" (its crops are the recipe's) and for an unknown choice.
Augmentation augmentation_for(const std::string& dataset, bool training, const std::string& choice = "auto");

// Writes image `index` of `data` as channels x height x width floats into `out`.
void make_example(const ImageDataset& data, int64_t index, const Augmentation& augmentation, std::mt19937_64& rng,
                  float* out);

}  // namespace cnnbench
