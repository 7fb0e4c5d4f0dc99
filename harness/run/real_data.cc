#include "harness/run/real_data.h"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "harness/data/augmentation.h"
#include "harness/data/jpeg_folder.h"
#include "harness/data/tfrecord.h"

namespace cnnbench {
namespace {

// Records per shard, each rank counting its share of the files; every rank joins the sum.
void count_shards(TfRecordShards& shards, const Communicator& comm, std::string& error) {
  std::vector<double> counts(shards.files.size(), 0.0);
  for (size_t i = comm.rank(); i < counts.size() && error.empty(); i += comm.size()) {
    try {
      counts[i] = static_cast<double>(count_tfrecords(shards.files[i]));
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  comm.allreduce_sum(counts.data(), counts.size());
  shards.records.assign(counts.begin(), counts.end());
}

// FNV-1a over bytes, 64 bits.
void mix(uint64_t& h, const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
}
void mix(uint64_t& h, const std::string& text) { mix(h, text.data(), text.size() + 1); }
// Words at a time: an in-memory set's 180 MB of pixels in a fraction of a second.
void mix_words(uint64_t& h, const uint8_t* data, size_t bytes) {
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 29;
  }
  mix(h, data + i, bytes - i);
}

constexpr uint64_t kFnvStart = 14695981039346656037ull;

uint64_t shards_fingerprint(uint64_t h, const std::vector<std::string>& files) {
  for (const std::string& path : files) {
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    mix(h, std::filesystem::path(path).filename().string());
    mix(h, &size, sizeof(size));
  }
  mix(h, "|");
  return h;
}

uint64_t folder_fingerprint(uint64_t h, const JpegFolder& f) {
  for (size_t i = 0; i < f.files.size(); ++i) {
    mix(h, std::filesystem::path(f.files[i]).lexically_relative(f.root).string());
    mix(h, &f.labels[i], sizeof(f.labels[i]));
  }
  return h;
}

uint64_t dataset_fingerprint(uint64_t h, const ImageDataset& set) {
  mix_words(h, set.pixels.data(), set.pixels.size());
  mix(h, set.labels.data(), set.labels.size() * sizeof(int32_t));
  return h;
}

// Collective: each rank's (fingerprint, train count, test count), every rank learning all.
struct RankData {
  uint64_t fingerprint;
  int64_t train, test;
};
std::vector<RankData> gather_rank_data(uint64_t fingerprint, int64_t train, int64_t test, const Communicator& comm) {
  // 24-bit pieces: exact in the doubles the sum carries
  std::vector<double> all(static_cast<size_t>(comm.size()) * 5, 0.0);
  double* mine = all.data() + static_cast<size_t>(comm.rank()) * 5;
  mine[0] = static_cast<double>(fingerprint & 0xffffff);
  mine[1] = static_cast<double>((fingerprint >> 24) & 0xffffff);
  mine[2] = static_cast<double>(fingerprint >> 48);
  mine[3] = static_cast<double>(train);
  mine[4] = static_cast<double>(test);
  comm.allreduce_sum(all.data(), all.size());
  std::vector<RankData> out;
  for (int r = 0; r < comm.size(); ++r) {
    const double* v = all.data() + static_cast<size_t>(r) * 5;
    out.push_back({static_cast<uint64_t>(v[0]) | static_cast<uint64_t>(v[1]) << 24 | static_cast<uint64_t>(v[2]) << 48,
                   static_cast<int64_t>(v[3]), static_cast<int64_t>(v[4])});
  }
  return out;
}

std::string first_difference(const std::vector<RankData>& ranks, const std::string& dir, const std::string& what) {
  for (size_t r = 1; r < ranks.size(); ++r) {
    if (ranks[r].fingerprint == ranks[0].fingerprint) continue;
    std::string counts;
    if (ranks[r].train != ranks[0].train || ranks[r].test != ranks[0].test)
      counts = fmt::format(" ({} training and {} test {} there, {} and {} on rank 0)", ranks[r].train, ranks[r].test,
                           what, ranks[0].train, ranks[0].test);
    return fmt::format("--data_dir={}: rank {} reads other data than rank 0{}: every rank must see the same data set "
                       "(the same copy on each host, an absolute path)",
                       dir, r, counts);
  }
  return "";
}

}  // namespace

std::string check_ranks_read_the_same_data(const DataSplits& data, const std::string& dir, const Communicator& comm) {
  if (comm.size() == 1) return "";
  return first_difference(gather_rank_data(data.fingerprint, data.train_count, data.test_count, comm), dir, "images");
}

std::string DataSplits::describe_train() const {
  if (tfrecords()) return fmt::format("{} images in {} TFRecord shards", train_count, train_shards.files.size());
  if (train_images) return fmt::format("{} images", train_count);
  if (hidden_skipped == 0) return fmt::format("{} JPEG files", train_count);
  return fmt::format("{} JPEG files ({})", train_count, hidden_files_note(hidden_skipped));
}

int64_t head_classes(const Config& config, const RunSettings& settings) {
  if (config.num_classes > 0) return config.num_classes;
  if (!settings.synthetic && settings.dataset == "imagenet" && config.mode != "allreduce" &&
      !find_tfrecord_shards(config.data_dir, "train").empty())
    return 1001;
  return settings.model.classes;
}

DataSplits find_shards(const std::string& dataset, const std::string& dir, const Communicator& comm,
                       std::string& error) {
  DataSplits d;
  if (dataset != "imagenet") return d;
  try {
    d.train_shards.files = find_tfrecord_shards(dir, "train");
    if (d.tfrecords()) d.test_shards.files = find_tfrecord_shards(dir, "validation");
  } catch (const std::exception& e) {
    error = e.what();
    d = DataSplits{};
  }
  // every rank takes the same path from here, or the counting's sums would not match: the ranks
  // first agree on which shards there are (a rank whose listing failed counts as seeing none)
  d.train_fingerprint = shards_fingerprint(kFnvStart, d.train_shards.files);
  d.fingerprint = shards_fingerprint(d.train_fingerprint, d.test_shards.files);
  if (comm.size() > 1) {
    const std::vector<RankData> ranks =
        gather_rank_data(d.fingerprint, static_cast<int64_t>(d.train_shards.files.size()),
                         static_cast<int64_t>(d.test_shards.files.size()), comm);
    const std::string differ = first_difference(ranks, dir, "shards");
    if (!differ.empty()) {
      if (error.empty()) error = differ;
      return DataSplits{};
    }
  }
  if (!d.tfrecords()) return d;
  count_shards(d.train_shards, comm, error);
  count_shards(d.test_shards, comm, error);
  return d;
}

DataSplits load_data(const std::string& dataset, const std::string& dir, int64_t image_size, int64_t classes,
                     DataSplits found, const std::string& augmentation, bool with_test) {
  // refused before anything is read: ImageNet's crops are its recipe's
  const Augmentation train_augmentation = augmentation_for(dataset, true, augmentation);
  DataSplits d = std::move(found);
  if (d.tfrecords()) {
    if (with_test && d.test_shards.files.empty())
      throw std::runtime_error(dir + ": train-*-of-* shards but no validation-*-of-* shards to evaluate on");
    d.classes = classes;  // the labels are checked record by record
    d.train_count = d.train_shards.total();
    d.test_count = d.test_shards.total();
    d.channels = 3;
    d.height = d.width = image_size;
    return d;
  }
  if (dataset == "imagenet") {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir + "/train", ec))
      throw std::runtime_error(dir + ": neither train-*-of-* TFRecord shards nor a train/ folder of <class>/*.JPEG");
    JpegFolder train = scan_jpeg_folder(dir + "/train");
    d.train_fingerprint = d.fingerprint = folder_fingerprint(kFnvStart, train);
    d.hidden_skipped = train.hidden_skipped;
    if (with_test) {
      JpegFolder val = scan_jpeg_folder(dir + "/val", &train.classes);
      d.hidden_skipped += val.hidden_skipped;
      d.test_count = static_cast<int64_t>(val.files.size());
      d.fingerprint = folder_fingerprint(d.train_fingerprint, val);
      d.test = std::make_unique<JpegFolderSource>(std::move(val), false, image_size);
    }
    d.classes = static_cast<int64_t>(train.classes.size());
    d.train_count = static_cast<int64_t>(train.files.size());
    d.train = std::make_unique<JpegFolderSource>(std::move(train), true, image_size);
    d.channels = 3;
    d.height = d.width = image_size;
    return d;
  }
  const bool cifar = dataset == "cifar10";
  // idx headers are checked against the model's image size before their data is inflated
  d.train_images =
      std::make_unique<ImageDataset>(cifar ? load_cifar10(dir, true) : load_idx_dataset(dir, true, dataset, image_size));
  d.test_images =
      std::make_unique<ImageDataset>(cifar ? load_cifar10(dir, false) : load_idx_dataset(dir, false, dataset, image_size));
  // The model is sized by the training images: a test set of another size would be read as them
  const ImageDataset &tr = *d.train_images, &te = *d.test_images;
  if (te.channels != tr.channels || te.height != tr.height || te.width != tr.width)
    throw std::runtime_error(fmt::format("{}: the test images are {}x{}x{} (channels x height x width), the training "
                                         "images {}x{}x{}: both splits must have one size",
                                         dir, te.channels, te.height, te.width, tr.channels, tr.height, tr.width));
  d.train = std::make_unique<InMemorySource>(*d.train_images, train_augmentation);
  d.test = std::make_unique<InMemorySource>(*d.test_images, augmentation_for(dataset, false));
  d.train_count = d.train_images->count;
  d.test_count = d.test_images->count;
  d.channels = d.train_images->channels;
  d.height = d.train_images->height;
  d.width = d.train_images->width;
  d.classes = d.train_images->classes;
  d.train_fingerprint = dataset_fingerprint(kFnvStart, *d.train_images);
  d.fingerprint = dataset_fingerprint(d.train_fingerprint, *d.test_images);
  return d;
}

std::unique_ptr<BatchPipeline> make_pipeline(const DataSplits& data, bool training, int64_t batch_size,
                                             const Communicator& comm, const Config& config, int64_t image_size,
                                             int64_t classes) {
  const int workers = static_cast<int>(config.num_data_workers);
  if (data.tfrecords())
    return std::make_unique<TfRecordPipeline>(training ? data.train_shards : data.test_shards, batch_size, comm.rank(),
                                              comm.size(), config.seed, training, image_size, classes,
                                              training ? config.datasets_shuffle_buffer_size : 0, workers);
  // in-memory sets and JPEG folders shuffle the whole set each epoch: no buffer to size
  if (training && comm.rank() == 0 && config.was_given("datasets_shuffle_buffer_size"))
    fmt::print(stderr, "cnnbench: note: --datasets_shuffle_buffer_size: TFRecord shards only ({} shuffles its whole "
                       "set each epoch); ignored\n", data.describe_train());
  return std::make_unique<InputPipeline>(training ? *data.train : *data.test, batch_size, comm.rank(), comm.size(),
                                         config.seed, training, workers);
}

}  // namespace cnnbench
