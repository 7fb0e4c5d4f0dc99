#include "harness/data/make_tfrecords.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "harness/data/image_example.h"
#include "harness/data/input_pipeline.h"
#include "harness/data/jpeg_folder.h"
#include "harness/data/tfrecord.h"
#include "harness/data/tfrecord_pipeline.h"

namespace cnnbench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: cnnbench make_tfrecords JPEG_ROOT OUT_DIR [--train_shards=N] [--validation_shards=N] [--threads=N]\n"
    "  JPEG_ROOT holds train/<class>/*.JPEG and val/<class>/*.JPEG; OUT_DIR gets train-*-of-* and\n"
    "  validation-*-of-* TFRecord shards of tf.train.Example records (defaults: 1024, 128 shards,\n"
    "  fewer when there are fewer images; threads: every CPU)\n";

struct Options {
  std::string root, out;
  int64_t train_shards = 1024, validation_shards = 128, threads = 0;
};

int64_t count_value(const std::string& arg, const std::string& name) {
  const std::string value = arg.substr(name.size() + 3);
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || v < 1 || v > 100000)
    throw std::invalid_argument("--" + name + ": '" + value + "' is not a whole number from 1 to 100000");
  return v;
}

Options parse(const std::vector<std::string>& args) {
  Options o;
  std::vector<std::string> positional;
  for (const std::string& a : args) {
    if (a.starts_with("--train_shards=")) o.train_shards = count_value(a, "train_shards");
    else if (a.starts_with("--validation_shards=")) o.validation_shards = count_value(a, "validation_shards");
    else if (a.starts_with("--threads=")) o.threads = count_value(a, "threads");
    else if (a.starts_with("--")) throw std::invalid_argument("unknown option " + a);
    else positional.push_back(a);
  }
  if (positional.size() != 2) throw std::invalid_argument("expected JPEG_ROOT and OUT_DIR");
  o.root = positional[0];
  o.out = positional[1];
  if (o.threads == 0) o.threads = std::max(1u, std::thread::hardware_concurrency());
  return o;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct Written {
  int64_t images = 0, shards = 0;
  uint64_t bytes = 0;
};

// The folder's files in a seeded order, dealt into `shards` shards of consecutive files.
Written write_subset(const JpegFolder& folder, const std::string& out, const std::string& subset, int64_t shards,
                     int64_t threads) {
  const int64_t count = static_cast<int64_t>(folder.files.size());
  shards = std::min(shards, count);
  const std::vector<int64_t> order = epoch_order(count, 12345, 0);
  std::atomic<int64_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex mutex;
  std::string error;
  auto work = [&] {
    for (int64_t s = next++; s < shards; s = next++) {
      try {
        const std::string path = fmt::format("{}/{}-{:05d}-of-{:05d}", out, subset, s, shards);
        TfRecordWriter writer(path, /*atomic=*/true);
        for (int64_t i = s * count / shards; i < (s + 1) * count / shards; ++i) {
          const int64_t f = order[i];
          ImageExample e;
          e.jpeg = read_file(folder.files[f]);
          const RgbImage header =
              read_jpeg_header(reinterpret_cast<const unsigned char*>(e.jpeg.data()), e.jpeg.size(), folder.files[f]);
          e.height = header.height;
          e.width = header.width;
          e.label = folder.labels[f] + 1;
          e.synset = folder.classes[folder.labels[f]];
          e.filename = fs::path(folder.files[f]).filename().string();
          writer.write(serialize_image_example(e));
        }
        writer.close();
        bytes += writer.bytes_written();
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (error.empty()) error = e.what();
        next = shards;  // the others stop after their current shard
      }
    }
  };
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < std::min(threads, shards); ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  if (!error.empty()) throw std::runtime_error(error);
  return {count, shards, bytes.load()};
}

}  // namespace

int make_tfrecords_command(const std::vector<std::string>& args, std::FILE* out, std::FILE* err) {
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kUsage, out);
    return 0;
  }
  try {
    const Options o = parse(args);
    const JpegFolder train = scan_jpeg_folder(o.root + "/train");
    const JpegFolder val = scan_jpeg_folder(o.root + "/val", &train.classes);
    fs::create_directories(o.out);
    if (!list_tfrecord_shards(o.out, "train").empty() || !list_tfrecord_shards(o.out, "validation").empty())
      throw std::runtime_error(o.out + ": holds TFRecord shards already (remove them or choose another folder)");
    const auto start = std::chrono::steady_clock::now();
    Written t, v;
    try {
      t = write_subset(train, o.out, "train", o.train_shards, o.threads);
      v = write_subset(val, o.out, "validation", o.validation_shards, o.threads);
    } catch (const std::exception&) {
      // the folder held no shards before: every shard in it is this run's, and part of a set is
      // no data set; removed, so that a second try can write the folder afresh
      for (const char* subset : {"train", "validation"})
        for (const std::string& path : list_tfrecord_shards(o.out, subset)) {
          std::error_code ec;
          fs::remove(path, ec);
        }
      throw;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print(out, "{}: train {} images in {} shards, validation {} images in {} shards, {} classes, {:.1f} MB in {:.1f} s\n",
               o.out, t.images, t.shards, v.images, v.shards, train.classes.size(), (t.bytes + v.bytes) / 1e6, seconds);
    if (train.hidden_skipped + val.hidden_skipped > 0)
      fmt::print(out, "{}\n", hidden_files_note(train.hidden_skipped + val.hidden_skipped));
    // labels 1..N as build_imagenet_data.py writes them: N + 1 outputs, 0 left for background
    if (train.classes.size() != 1000)
      fmt::print(out, "labels 1..{} (0 left for background, as ImageNet's shards): train with --num_classes={}\n",
                 train.classes.size(), train.classes.size() + 1);
    return 0;
  } catch (const std::invalid_argument& e) {
    fmt::print(err, "cnnbench make_tfrecords: {}\n{}", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    fmt::print(err, "cnnbench make_tfrecords: {}\n", e.what());
    return 2;
  }
}

}  // namespace cnnbench
