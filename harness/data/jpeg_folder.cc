#include "harness/data/jpeg_folder.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace cnnbench {
namespace {

namespace fs = std::filesystem;

bool is_hidden(const fs::path& p) { return p.filename().string().rfind('.', 0) == 0; }

bool is_jpeg(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpeg" || ext == ".jpg";
}

}  // namespace

std::string hidden_files_note(int64_t hidden_skipped) {
  return std::to_string(hidden_skipped) + " hidden files named .jpg/.jpeg left out: ._ metadata, no images";
}

JpegFolder scan_jpeg_folder(const std::string& root, const std::vector<std::string>* classes) {
  if (!fs::is_directory(root)) throw std::runtime_error(root + ": no such folder (expected <class>/*.JPEG inside)");
  JpegFolder f;
  f.root = root;
  std::vector<std::string> found;
  // hidden folders (.ipynb_checkpoints, .cache) are no classes: counting one would shift every
  // later class's label
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory() && !is_hidden(entry.path()))
      found.push_back(entry.path().filename().string());
  std::sort(found.begin(), found.end());
  f.classes = classes ? *classes : found;
  std::map<std::string, int32_t> index;
  for (size_t i = 0; i < f.classes.size(); ++i) index[f.classes[i]] = static_cast<int32_t>(i);
  for (const std::string& name : found) {
    if (!index.count(name)) throw std::runtime_error(root + "/" + name + ": a class the training folder does not have");
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(fs::path(root) / name))
      if (entry.is_regular_file() && is_jpeg(entry.path())) {
        // decoded, "._img.JPEG" would stop the run hours in as a corrupt JPEG
        if (is_hidden(entry.path()))
          ++f.hidden_skipped;
        else
          files.push_back(entry.path().string());
      }
    std::sort(files.begin(), files.end());
    // a training class without images would still take a label (and the head an output)
    if (files.empty() && !classes)
      throw std::runtime_error(root + "/" + name + ": a class folder without JPEG files (every class folder needs its "
                                              "images; remove it or fill it)");
    for (const std::string& file : files) {
      f.files.push_back(file);
      f.labels.push_back(index[name]);
    }
  }
  if (f.files.empty()) throw std::runtime_error(root + ": no JPEG files in its class folders");
  return f;
}

JpegFolderSource::JpegFolderSource(JpegFolder folder, bool training, int64_t size)
    : folder_(std::move(folder)), training_(training), size_(size) {}

void JpegFolderSource::make(int64_t index, std::mt19937_64& rng, float* out) const {
  thread_local std::vector<unsigned char> bytes;  // reused from file to file
  const std::string& path = folder_.files[index];
  read_file_bytes(path, bytes);
  make_imagenet_example(bytes.data(), bytes.size(), path, training_, size_, {}, rng, out);
}

}  // namespace cnnbench
