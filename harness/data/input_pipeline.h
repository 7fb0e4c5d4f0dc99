// harness/data/input_pipeline.h — batches for one rank, made ahead of the step by worker
// threads. Every epoch has its own seeded order of the whole data set, the same on every
// rank; rank r takes positions r, r + ranks, r + 2 ranks, ... of it, so the ranks' shards
// together cover the epoch exactly once. Each batch's augmentation draws from a stream seeded
// by (seed, epoch, rank, batch), so results do not depend on thread timing. The consumer's
// waits are counted as input stall time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/data/example_source.h"

namespace cnnbench {

// Positions of epoch `epoch`'s order that rank `rank` of `ranks` reads.
std::vector<int64_t> epoch_order(int64_t count, uint64_t seed, int64_t epoch);
std::vector<int64_t> rank_shard(const std::vector<int64_t>& order, int rank, int ranks);

class InputPipeline {
 public:
  // training: shuffled and augmented, full batches only (ranks must step together);
  // evaluation: in order, the last batch padded (valid() tells how many count).
  InputPipeline(const ExampleSource& source, int64_t batch_size, int rank, int ranks, uint64_t seed, bool training,
                int workers = 2, int depth = 3);
  ~InputPipeline();

  // Steps of one epoch: the same on every rank when training; evaluation's is set by start_epoch.
  int64_t steps_per_epoch() const { return steps_; }
  void start_epoch(int64_t epoch);
  // The next batch of the epoch (images NCHW, labels); blocks until it is ready. Rethrows a
  // worker's error (naming the file it could not read).
  const float* next_images();
  const int32_t* current_labels() const { return labels_[slot(consumed_ - 1)].data(); }
  int64_t current_valid() const { return valid_[slot(consumed_ - 1)]; }
  double stall_sec() const { return stall_sec_; }

 private:
  int slot(int64_t batch) const { return static_cast<int>(batch % depth_); }
  void produce(int worker);
  void stop_workers();

  const ExampleSource& source_;
  int64_t batch_size_, example_floats_;
  int rank_, ranks_;
  uint64_t seed_;
  bool training_;
  int workers_count_, depth_;
  int64_t steps_ = 0, epoch_ = 0;
  std::vector<int64_t> shard_;

  std::vector<std::vector<float>> images_;
  std::vector<std::vector<int32_t>> labels_;
  std::vector<int64_t> valid_, ready_;  // per slot: valid examples, the batch index it holds
  int64_t consumed_ = 0;
  double stall_sec_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  std::exception_ptr error_;  // a worker's failure (a corrupt file), rethrown to the consumer
  std::vector<std::thread> workers_;
};

}  // namespace cnnbench
