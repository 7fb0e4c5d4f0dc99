// harness/data/image_dataset.h — data sets small enough to hold in memory, read from their
// published files: CIFAR-10's binary batches and the idx files of MNIST / Fashion-MNIST
// (gzipped or not). Every malformed file gets a std::runtime_error naming it and the problem.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cnnbench {

struct ImageDataset {
  std::string name;                 // e.g. "cifar10 train"
  int64_t count = 0, channels = 0, height = 0, width = 0, classes = 0;
  std::vector<uint8_t> pixels;      // count x channels x height x width
  std::vector<int32_t> labels;
  const uint8_t* image(int64_t i) const { return pixels.data() + i * channels * height * width; }
};

// `dir` holds data_batch_1.bin .. data_batch_5.bin and test_batch.bin (or is the folder that
// contains cifar-10-batches-bin/). Each record: 1 label byte, then 3072 bytes of red, green and
// blue 32x32 planes, row-major.
ImageDataset load_cifar10(const std::string& dir, bool train);

// `dir` holds train-images-idx3-ubyte / train-labels-idx1-ubyte / t10k-... (each optionally .gz).
// `image_size` > 0: images of another height or width are refused from the file's header, before
// its data is read (a gzipped file announcing 4 GiB inflates that much first), and so is a labels
// file announcing another count than the images'.
ImageDataset load_idx_dataset(const std::string& dir, bool train, const std::string& name, int64_t image_size = 0);

// Reads an idx file (optionally gzipped) into dims and bytes; `expected_dims` is 1 or 3.
// `check_header`, where given, sees the dims before any data is read and throws to refuse them.
void read_idx_file(const std::string& path, int expected_dims, std::vector<int64_t>& dims, std::vector<uint8_t>& data,
                   const std::function<void(const std::vector<int64_t>&)>& check_header = {});

}  // namespace cnnbench
