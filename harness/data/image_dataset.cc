#include "harness/data/image_dataset.h"

#include "harness/cli/bounded_file.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace cnnbench {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void bad(const std::string& path, const std::string& why) { throw std::runtime_error(path + ": " + why); }

// Largest idx data read into memory: more than any published idx data set (EMNIST's largest,
// 0.55 GB), and no size product near overflowing.
constexpr uint64_t max_idx_bytes = uint64_t{4} << 30;

std::string cifar_folder(const std::string& dir) {
  if (fs::exists(fs::path(dir) / "data_batch_1.bin") || fs::exists(fs::path(dir) / "test_batch.bin")) return dir;
  if (fs::exists(fs::path(dir) / "cifar-10-batches-bin")) return (fs::path(dir) / "cifar-10-batches-bin").string();
  if (fs::exists(fs::path(dir) / "data_batch_1") || fs::exists(fs::path(dir) / "cifar-10-batches-py"))
    bad(dir, "this is the Python (pickle) version of CIFAR-10; cnnbench reads the binary version "
             "(cifar-10-binary.tar.gz, folder cifar-10-batches-bin; scripts/get_cifar10.sh fetches it)");
  bad(dir, "no CIFAR-10 binary batches here (expected data_batch_1.bin .. data_batch_5.bin, test_batch.bin)");
}

}  // namespace

ImageDataset load_cifar10(const std::string& dir, bool train) {
  const std::string folder = cifar_folder(dir);
  ImageDataset d;
  d.name = std::string("cifar10 ") + (train ? "train" : "test");
  d.channels = 3;
  d.height = d.width = 32;
  d.classes = 10;
  std::vector<std::string> files;
  if (train)
    for (int i = 1; i <= 5; ++i) files.push_back((fs::path(folder) / ("data_batch_" + std::to_string(i) + ".bin")).string());
  else
    files.push_back((fs::path(folder) / "test_batch.bin").string());
  constexpr int64_t record = 1 + 3 * 32 * 32;
  for (const std::string& path : files) {
    std::string bytes;
    try {  // a regular file of at most a few batches (each is 30 MB): a folder or a FIFO is no batch
      bytes = read_bounded_file(path, uint64_t{1} << 30, "a CIFAR-10 batch");
    } catch (const BoundedFileError& e) {
      if (!fs::exists(path)) bad(path, "cannot open (is the binary CIFAR-10 complete?)");
      throw std::runtime_error(e.what());
    }
    if (bytes.empty() || bytes.size() % record != 0)
      bad(path, std::to_string(bytes.size()) + " bytes is not a whole number of 3073-byte records (truncated or not CIFAR-10 binary)");
    const int64_t n = static_cast<int64_t>(bytes.size()) / record;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t label = static_cast<uint8_t>(bytes[i * record]);
      if (label >= 10) bad(path, "record " + std::to_string(i) + " has label " + std::to_string(label) + ", outside 0..9");
      d.labels.push_back(label);
      d.pixels.insert(d.pixels.end(), bytes.begin() + i * record + 1, bytes.begin() + (i + 1) * record);
    }
  }
  d.count = static_cast<int64_t>(d.labels.size());
  return d;
}

void read_idx_file(const std::string& path, int expected_dims, std::vector<int64_t>& dims, std::vector<uint8_t>& data,
                   const std::function<void(const std::vector<int64_t>&)>& check_header) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files too
  if (!f) bad(path, "cannot open");
  // Reads up to n bytes; fewer only at the end of the data. A damaged gzip stream is an error.
  auto read_some = [&](void* dst, size_t n) {
    size_t done = 0;
    while (done < n) {
      const int got = gzread(f, static_cast<char*>(dst) + done, static_cast<unsigned>(std::min<size_t>(n - done, 1 << 30)));
      if (got < 0) {
        int code = 0;
        const std::string why = gzerror(f, &code);
        gzclose(f);
        bad(path, "damaged gzip data (" + why + ")");
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  };
  auto read = [&](void* dst, size_t n) {
    if (const size_t got = read_some(dst, n); got < n) {
      gzclose(f);
      bad(path, "truncated: expected " + std::to_string(n) + " bytes, got " + std::to_string(got));
    }
  };
  unsigned char magic[4];
  read(magic, 4);
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] != expected_dims) {
    gzclose(f);
    bad(path, "not an idx file of unsigned bytes with " + std::to_string(expected_dims) + " dimension(s)");
  }
  dims.clear();
  uint64_t total = 1;
  for (int i = 0; i < expected_dims; ++i) {
    unsigned char b[4];
    read(b, 4);
    const uint64_t dim = (uint64_t{b[0]} << 24) | (uint64_t{b[1]} << 16) | (uint64_t{b[2]} << 8) | b[3];
    // checked before multiplying: three 32-bit sizes can overflow 64 bits
    if (dim == 0 || total > max_idx_bytes / dim) {
      gzclose(f);
      bad(path, dim == 0 ? "its header announces a size of 0 (no data)"
                         : "its header announces more than " + std::to_string(max_idx_bytes >> 30) + " GiB of data");
    }
    total *= dim;
    dims.push_back(static_cast<int64_t>(dim));
  }
  if (check_header) {
    try {
      check_header(dims);
    } catch (...) {
      gzclose(f);
      throw;
    }
  }
  // Grown as the bytes arrive (doubling from 64 KiB), so that a header announcing more than the
  // file holds costs no memory before the file is found short.
  data.clear();
  while (data.size() < total) {
    const size_t at = data.size(), chunk = std::min<uint64_t>(total - at, std::max<size_t>(at, 64 << 10));
    data.resize(at + chunk);
    if (const size_t got = read_some(data.data() + at, chunk); got < chunk) {
      gzclose(f);
      bad(path, "truncated: its header announces " + std::to_string(total) + " bytes of data, it has " +
                    std::to_string(at + got));
    }
  }
  char extra;
  const bool trailing = read_some(&extra, 1) > 0;
  gzclose(f);
  if (trailing) bad(path, "has bytes after the " + std::to_string(total) + " its header announces");
}

ImageDataset load_idx_dataset(const std::string& dir, bool train, const std::string& name, int64_t image_size) {
  const std::string prefix = train ? "train" : "t10k";
  auto find = [&](const std::string& stem) {
    for (const std::string& candidate : {stem, stem + ".gz"})
      if (fs::exists(fs::path(dir) / candidate)) return (fs::path(dir) / candidate).string();
    bad(dir, "missing " + stem + "[.gz]");
  };
  const std::string images_path = find(prefix + "-images-idx3-ubyte");
  const std::string labels_path = find(prefix + "-labels-idx1-ubyte");
  ImageDataset d;
  d.name = name + " " + (train ? "train" : "test");
  std::vector<int64_t> image_dims, label_dims;
  std::vector<uint8_t> labels;
  read_idx_file(images_path, 3, image_dims, d.pixels, [&](const std::vector<int64_t>& dims) {
    if (image_size > 0 && (dims[1] != image_size || dims[2] != image_size))
      bad(images_path, "images of " + std::to_string(dims[1]) + "x" + std::to_string(dims[2]) + ", the model takes " +
                           std::to_string(image_size) + "x" + std::to_string(image_size));
  });
  read_idx_file(labels_path, 1, label_dims, labels, [&](const std::vector<int64_t>& dims) {
    if (dims[0] != image_dims[0])
      bad(labels_path, std::to_string(dims[0]) + " labels for " + std::to_string(image_dims[0]) + " images");
  });
  // `gunzip -k` leaves both: the plain file is read, and a .gz beside it must hold the same
  // (a stale unpacked copy beside newer .gz files once trained without a word)
  auto same_as_gz = [&](const std::string& path, int rank, const std::vector<int64_t>& dims,
                        const std::vector<uint8_t>& data) {
    if (path.ends_with(".gz") || !fs::exists(path + ".gz")) return;
    std::vector<int64_t> twin_dims;
    std::vector<uint8_t> twin;
    read_idx_file(path + ".gz", rank, twin_dims, twin, [](const std::vector<int64_t>&) {});
    if (twin_dims != dims || twin != data)
      bad(path, "differs from " + fs::path(path).filename().string() +
                    ".gz beside it: which one to train on? (keep one of them in the folder)");
  };
  same_as_gz(images_path, 3, image_dims, d.pixels);
  same_as_gz(labels_path, 1, label_dims, labels);
  d.count = image_dims[0];
  d.channels = 1;
  d.height = image_dims[1];
  d.width = image_dims[2];
  d.classes = 10;
  for (int64_t i = 0; i < d.count; ++i) {
    if (labels[i] >= 10) bad(labels_path, "label " + std::to_string(labels[i]) + " of image " + std::to_string(i) + " is outside 0..9");
    d.labels.push_back(labels[i]);
  }
  return d;
}

}  // namespace cnnbench
