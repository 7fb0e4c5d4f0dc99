// harness/data/tfrecord_pipeline.h — ImageNet from TFRecord shards (train-00000-of-01024 ...,
// validation-00000-of-00128 ..., as TensorFlow's build_imagenet_data.py and `cnnbench
// make_tfrecords` write them): records streamed by RecordStream, each a tf.train.Example decoded
// and augmented by the pipeline's workers with the JPEG folders' recipe (the crop honours the
// Example's bounding boxes). Training epochs are nominal, as in tf_cnn_benchmarks: an epoch is
// (records in all shards) / (ranks x batch) steps of a stream that never ends, whose passes over
// the rank's records each hold every one of them once (RecordStream).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "harness/data/input_pipeline.h"
#include "harness/data/tfrecord_stream.h"

namespace cnnbench {

// `dir`'s files named as shards of `subset` ("train" or "validation"): <subset>-NNNNN-of-MMMMM
// (digits of any width, nothing after them: a .md5 or .tmp beside a shard is not one), sorted,
// whether or not they make a whole set.
std::vector<std::string> list_tfrecord_shards(const std::string& dir, const std::string& subset);
// The same, checked to be one whole set: a single -of-M, every index 0..M-1 once, no shard of 0
// bytes. Anything else throws std::runtime_error naming what is missing or mixed, so that a run
// never trains or evaluates on part of the data (a shard left out of a copy, a conversion that
// stopped, two sets in one folder).
std::vector<std::string> find_tfrecord_shards(const std::string& dir, const std::string& subset);

struct TfRecordShards {
  std::vector<std::string> files;
  std::vector<int64_t> records;  // per file
  int64_t total() const;
};

class TfRecordPipeline final : public BatchPipeline {
 public:
  // A label is its class as stored (0..classes-1, as tf_cnn_benchmarks trains them: its ImageNet
  // has 1001 classes, 0 the background); any other label is an error naming the shard and the
  // record's offset. None is shifted.
  TfRecordPipeline(TfRecordShards shards, int64_t batch_size, int rank, int ranks, uint64_t seed, bool training,
                   int64_t image_size, int64_t classes, int64_t shuffle_buffer, int workers = 2, int depth = 3);
  ~TfRecordPipeline() override;
  void start_epoch(int64_t epoch) override;

 private:
  int64_t fill_batch(int64_t b, std::mt19937_64& rng, float* images, int32_t* labels, double& waited_sec) override;
  void interrupt_fills() override;
  void make(const StreamRecord& record, std::mt19937_64& rng, float* out, int32_t& label) const;

  TfRecordShards shards_;
  RecordStreamOptions options_;
  int64_t image_size_, classes_;
  std::unique_ptr<RecordStream> stream_;
  int64_t base_ = 0;         // stream batch of this epoch's first step
  int64_t next_epoch_ = -1;  // the epoch the stream continues into without a restart
};

}  // namespace cnnbench
