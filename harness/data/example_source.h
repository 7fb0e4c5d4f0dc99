// harness/data/example_source.h — ExampleSource: where the input pipeline gets examples from.
// One example = one label and one image written as channels x height x width floats, augmented
// (training) or not (evaluation) with the random engine given. Implementations: an in-memory
// data set (CIFAR-10, Fashion-MNIST) and a folder of JPEG files (ImageNet).
#pragma once

#include <cstdint>
#include <random>

#include "harness/data/augmentation.h"
#include "harness/data/image_dataset.h"

namespace cnnbench {

class ExampleSource {
 public:
  virtual ~ExampleSource() = default;
  virtual int64_t count() const = 0;
  virtual int32_t label(int64_t index) const = 0;
  virtual int64_t example_floats() const = 0;  // channels x height x width of one example
  // Safe to call from several threads at once.
  virtual void make(int64_t index, std::mt19937_64& rng, float* out) const = 0;
};

class InMemorySource final : public ExampleSource {
 public:
  InMemorySource(const ImageDataset& data, const Augmentation& augmentation) : data_(data), augmentation_(augmentation) {}
  int64_t count() const override { return data_.count; }
  int32_t label(int64_t index) const override { return data_.labels[index]; }
  int64_t example_floats() const override { return data_.channels * data_.height * data_.width; }
  void make(int64_t index, std::mt19937_64& rng, float* out) const override {
    make_example(data_, index, augmentation_, rng, out);
  }

 private:
  const ImageDataset& data_;
  Augmentation augmentation_;
};

}  // namespace cnnbench
