// harness/run/real_data.h — the real data set of a --data_dir run, found and loaded the same way
// by training (convergence_run) and by the input benchmark (input_bench): CIFAR-10 binary,
// Fashion-MNIST idx, ImageNet as TFRecord shards (chosen when the folder holds train-*-of-*
// files) or as JPEG folders; and the batch pipelines that read it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "comm/communicator.h"
#include "harness/cli/config.h"
#include "harness/cli/run_settings.h"
#include "harness/data/image_dataset.h"
#include "harness/data/input_pipeline.h"
#include "harness/data/tfrecord_pipeline.h"

namespace cnnbench {

// Training and test examples of a data set, and what they are made from.
struct DataSplits {
  std::unique_ptr<ImageDataset> train_images, test_images;  // in-memory data sets
  std::unique_ptr<ExampleSource> train, test;
  TfRecordShards train_shards, test_shards;  // ImageNet as TFRecord shards (then no sources)
  int64_t train_count = 0, test_count = 0, channels = 0, height = 0, width = 0, classes = 0;
  int64_t hidden_skipped = 0;  // JPEG folders: hidden "._img.JPEG" files left out (jpeg_folder.h)
  // what the data is made of, for the ranks to compare: the shards' names and sizes, the JPEG
  // folders' files and labels, the in-memory sets' pixels and labels
  uint64_t fingerprint = 0;
  // the training split's alone: what shaped the weights (a checkpoint's run identity)
  uint64_t train_fingerprint = 0;
  bool tfrecords() const { return !train_shards.files.empty(); }
  // "tfrecord", "in-memory" (CIFAR-10's and Fashion-MNIST's files) or "jpeg" (folders)
  const char* format() const { return tfrecords() ? "tfrecord" : train_images ? "in-memory" : "jpeg"; }
  // "1000 JPEG files", "8 TFRecord shards", "50000 images"; hidden files left out said too
  std::string describe_train() const;
};

// The head's outputs: --num_classes, else 1001 on ImageNet TFRecord shards (tf_cnn_benchmarks'
// ImageNet: label 0 its background class, 1-1000 the classes, each label its output as stored),
// else the model's own. Every label must be below it; none is shifted.
int64_t head_classes(const Config& config, const RunSettings& settings);

// Collective, on every rank: ImageNet's TFRecord shards in `dir`, if any, found and their records
// counted (each rank counting its share from the headers). A rank's error is kept in `error`, to
// be reported with the others'; every rank still joins the sums.
DataSplits find_shards(const std::string& dataset, const std::string& dir, const Communicator& comm,
                       std::string& error);
// Collective, after load_data succeeded on every rank: "" where every rank read the same data,
// else the same line on every rank naming the first rank whose data differ from rank 0's (another
// copy under the same path on its host, a relative path from another working folder). Without it
// such ranks trained on other data, or waited in a collective until the watchdog.
std::string check_ranks_read_the_same_data(const DataSplits& data, const std::string& dir, const Communicator& comm);
// The rest: folders scanned, in-memory sets read; `found` is find_shards' result. Without
// `with_test`, the training split alone (no val/ folder or validation shards needed).
// `augmentation` is --train_augmentation. Throws with a line naming what is missing or damaged.
DataSplits load_data(const std::string& dataset, const std::string& dir, int64_t image_size, int64_t classes,
                     DataSplits found, const std::string& augmentation, bool with_test = true);

// The pipeline of one split for this rank: training shuffled and augmented, evaluation in order.
std::unique_ptr<BatchPipeline> make_pipeline(const DataSplits& data, bool training, int64_t batch_size,
                                             const Communicator& comm, const Config& config, int64_t image_size,
                                             int64_t classes);

}  // namespace cnnbench
