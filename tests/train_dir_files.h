// tests/train_dir_files.h — what the tests of --train_dir share: a tiny Fashion-MNIST in idx
// files to train on (128 training images of 32: 4 steps an epoch on one rank), the flags that
// train on it, and a checkpoint file's parts.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "test_files.h"

namespace cnnbench {

inline const std::string idx = "--model=small_cnn --data_dir=. --batch_size=32 --num_intra_threads=1 --num_data_workers=1 ";

inline std::string idx_dir(const std::string& name) {
  const std::string dir = fresh_dir(name);
  testing::write_idx_dataset(dir, "train", 128, false);
  testing::write_idx_dataset(dir, "t10k", 32, false);
  return dir;
}

// Another such data set in dir/sub, of `train` and `test` images: the flags that train on it.
inline std::string idx_in(const std::string& dir, const std::string& sub, int train, int test) {
  std::filesystem::create_directories(dir + "/" + sub);
  testing::write_idx_dataset(dir + "/" + sub, "train", train, false);
  testing::write_idx_dataset(dir + "/" + sub, "t10k", test, false);
  return "--model=small_cnn --data_dir=" + sub + " --batch_size=32 --num_intra_threads=1 --num_data_workers=1 ";
}

// A checkpoint (or rank state) file's header (JSON) and its tensors: the bytes after the header,
// without the checksum, which covers the header too.
inline std::pair<nlohmann::json, std::string> checkpoint_parts(const std::string& bytes) {
  uint64_t length = 0;
  if (bytes.size() < 24) return {};
  std::memcpy(&length, bytes.data() + 8, sizeof(length));
  return {nlohmann::json::parse(bytes.substr(16, length)), bytes.substr(16 + length, bytes.size() - 24 - length)};
}
inline nlohmann::json checkpoint_header(const std::string& path) { return checkpoint_parts(slurp_file(path)).first; }
inline std::string checkpoint_payload(const std::string& path) { return checkpoint_parts(slurp_file(path)).second; }

}  // namespace cnnbench
