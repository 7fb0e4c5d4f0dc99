// harness/data/jpeg_folder.h — ImageNet-style folders of JPEG files (root/<class>/*.JPEG), each
// file made into a 3 x size x size example by the ImageNet recipe (imagenet_recipe.h: a random-
// resized crop and a flip for training, resize and centre crop for evaluation; only the crop's
// part of the file decoded). A corrupt or unsupported file gets an error naming it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/data/example_source.h"
#include "harness/data/imagenet_recipe.h"
#include "harness/data/jpeg_decode.h"

namespace cnnbench {

struct JpegFolder {
  std::string root;
  std::vector<std::string> classes;  // sorted folder names; the label is the index
  std::vector<std::string> files;
  std::vector<int32_t> labels;
  // hidden files with a JPEG's name (macOS's "._img.JPEG" metadata beside each image copied from
  // a Mac): not images, left out and counted
  int64_t hidden_skipped = 0;
};

// "3 hidden files named .jpg/.jpeg left out: ._ metadata, no images", for a count above 0.
std::string hidden_files_note(int64_t hidden_skipped);

// Scans root/<class>/ for .jpeg/.jpg files (any case), hidden ones left out. With `classes`,
// labels follow that list (a validation folder uses the training folder's classes) and unknown
// folders are an error.
JpegFolder scan_jpeg_folder(const std::string& root, const std::vector<std::string>* classes = nullptr);

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
