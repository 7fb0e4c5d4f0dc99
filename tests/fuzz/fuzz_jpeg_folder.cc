// tests/fuzz/fuzz_jpeg_folder.cc — libFuzzer harness for the ImageNet folder scan. The input is a
// list of paths, one a line, made into a small tree (a path ending in '/' is a folder, any other
// an empty file; components that could leave the tree are dropped); the lines after a line
// "---" make a second tree. As for --data_dir, the first is scanned as train/ and the second as
// val/ with train's classes. Each scan gives JPEG files with labels of known classes, or one line
// naming the folder.
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_files.h"
#include "harness/data/jpeg_folder.h"

using namespace cnnbench;
namespace fs = std::filesystem;

namespace {

// Builds root/<line> for each line; at most 32 entries, 4 levels, 64-byte names.
void make_tree(const std::string& root, const std::vector<std::string>& lines) {
  fs::create_directories(root);
  int entries = 0;
  for (const std::string& line : lines) {
    if (++entries > 32) break;
    const bool folder = line.back() == '/';
    std::vector<std::string> parts(1);
    for (char c : line.substr(0, line.size() - (folder ? 1 : 0))) {
      if (c == '/')
        parts.emplace_back();
      else
        parts.back() += c;
    }
    bool ok = parts.size() <= 4;
    for (const std::string& part : parts) ok = ok && !part.empty() && part != "." && part != ".." && part.size() <= 64;
    if (!ok) continue;
    fs::path path = root;
    for (const std::string& part : parts) path /= part;
    std::error_code ec;
    if (folder) {
      fs::create_directories(path, ec);
    } else {
      fs::create_directories(path.parent_path(), ec);
      if (!ec && !fs::exists(path, ec)) fuzz::write_bytes(path.string(), "", 0);
    }
  }
}

void check(const JpegFolder& f, const std::vector<std::string>& classes) {
  fuzz::expect(!f.files.empty() && f.files.size() == f.labels.size(), "one label per file");
  fuzz::expect(f.classes == classes || classes.empty(), "the classes given are kept");
  for (size_t i = 0; i < f.files.size(); ++i) {
    fuzz::expect(f.labels[i] >= 0 && static_cast<size_t>(f.labels[i]) < f.classes.size(), "labels of known classes");
    fuzz::expect(fs::is_regular_file(f.files[i]), "files are files");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> train_lines, val_lines;
  std::vector<std::string>* lines = &train_lines;
  std::string line;
  for (size_t i = 0; i <= size; ++i) {
    if (i < size && data[i] != '\n') {
      line += data[i] ? static_cast<char>(data[i]) : '_';  // no NUL in a file name
      continue;
    }
    if (line == "---")
      lines = &val_lines;
    else if (!line.empty())
      lines->push_back(line);
    line.clear();
  }
  const std::string root = fuzz::scratch_dir() + "/imagenet";
  std::error_code ec;
  fs::remove_all(root, ec);
  make_tree(root + "/train", train_lines);
  if (lines == &val_lines) make_tree(root + "/val", val_lines);

  JpegFolder train;
  try {
    train = scan_jpeg_folder(root + "/train");
  } catch (const std::runtime_error& e) {
    fuzz::expect_one_line(e.what(), root + "/train");
    return 0;
  }
  check(train, {});
  try {
    check(scan_jpeg_folder(root + "/val", &train.classes), train.classes);
  } catch (const std::runtime_error& e) {
    fuzz::expect_one_line(e.what(), root + "/val");
  }
  return 0;
}
