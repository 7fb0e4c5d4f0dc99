#include "harness/run/real_data.h"

#include <fmt/format.h>

#include <stdexcept>

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

}  // namespace

std::string DataSplits::describe_train() const {
  if (tfrecords()) return fmt::format("{} images in {} TFRecord shards", train_count, train_shards.files.size());
  if (train_images) return fmt::format("{} images", train_count);
  return fmt::format("{} JPEG files", train_count);
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
  d.train_shards.files = find_tfrecord_shards(dir, "train");
  if (!d.tfrecords()) return d;
  d.test_shards.files = find_tfrecord_shards(dir, "validation");
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
    JpegFolder train = scan_jpeg_folder(dir + "/train");
    if (with_test) {
      JpegFolder val = scan_jpeg_folder(dir + "/val", &train.classes);
      d.test_count = static_cast<int64_t>(val.files.size());
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
  d.train_images = std::make_unique<ImageDataset>(cifar ? load_cifar10(dir, true) : load_idx_dataset(dir, true, dataset));
  d.test_images = std::make_unique<ImageDataset>(cifar ? load_cifar10(dir, false) : load_idx_dataset(dir, false, dataset));
  d.train = std::make_unique<InMemorySource>(*d.train_images, train_augmentation);
  d.test = std::make_unique<InMemorySource>(*d.test_images, augmentation_for(dataset, false));
  d.train_count = d.train_images->count;
  d.test_count = d.test_images->count;
  d.channels = d.train_images->channels;
  d.height = d.train_images->height;
  d.width = d.train_images->width;
  d.classes = d.train_images->classes;
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
  return std::make_unique<InputPipeline>(training ? *data.train : *data.test, batch_size, comm.rank(), comm.size(),
                                         config.seed, training, workers);
}

}  // namespace cnnbench
