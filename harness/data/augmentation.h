// harness/data/augmentation.h — turning stored images into network inputs: per-channel
// mean/std normalisation, and for training the CIFAR recipe (4-pixel zero pad, random 32x32
// crop, horizontal flip). Deterministic given the random engine passed in.
#pragma once

#include <cstdint>
#include <random>

#include "harness/data/image_dataset.h"

namespace cnnbench {

struct Augmentation {
  float mean[3] = {0, 0, 0}, stddev[3] = {1, 1, 1};  // of pixel / 255
  int64_t pad = 0;     // zero padding before the random crop (CIFAR: 4)
  bool flip = false;   // random horizontal flip
};

// The recipe for a data set: training augments, evaluation only normalises.
Augmentation augmentation_for(const std::string& dataset, bool training);

// Writes image `index` of `data` as channels x height x width floats into `out`.
void make_example(const ImageDataset& data, int64_t index, const Augmentation& augmentation, std::mt19937_64& rng,
                  float* out);

}  // namespace cnnbench
