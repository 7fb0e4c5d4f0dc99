// harness/data/input_pipeline.h — batches for one rank, made ahead of the step by worker
// threads. BatchPipeline is the machinery (slots, workers, the consumer's waits, a worker's error
// rethrown to the consumer); what fills a batch is its subclass's:
// - InputPipeline: examples by index (in-memory data sets, JPEG folders). Every epoch has its own
//   seeded order of the whole data set, the same on every rank; rank r takes positions r,
//   r + ranks, r + 2 ranks, ... of it. Training steps whole batches on every rank, so the order's
//   tail (fewer than ranks x batch images) is left out of that epoch, a different one each epoch;
//   evaluation reads every image once.
// - TfRecordPipeline (tfrecord_pipeline.h): records streamed from TFRecord shards.
// Each batch's augmentation draws from a stream seeded by (seed, epoch, rank, batch), so results
// do not depend on thread timing. The consumer's waits are counted as input stall time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "harness/data/example_source.h"

namespace cnnbench {

// Positions of epoch `epoch`'s order that rank `rank` of `ranks` reads.
std::vector<int64_t> epoch_order(int64_t count, uint64_t seed, int64_t epoch);
std::vector<int64_t> rank_shard(const std::vector<int64_t>& order, int rank, int ranks);

class BatchPipeline {
 public:
  virtual ~BatchPipeline() = default;  // a subclass stops the workers in its own destructor
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // Steps of one epoch: the same on every rank when training; evaluation's is set by start_epoch.
  int64_t steps_per_epoch() const { return steps_; }
  virtual void start_epoch(int64_t epoch) = 0;
  // A training epoch from batch `first_batch` on (a --resume inside it): the batches before are
  // not made (TFRecord streams read their records past, without decoding), and those after are
  // the ones an epoch started at 0 gives, each batch's augmentation being seeded by its index.
  void start_epoch_at(int64_t epoch, int64_t first_batch) {
    first_batch_ = first_batch;
    start_epoch(epoch);
  }
  // The next batch of the epoch (images NCHW, labels); blocks until it is ready. Rethrows a
  // worker's error (naming the file it could not read).
  const float* next_images();
  const int32_t* current_labels() const { return labels_[slot(consumed_ - 1)].data(); }
  int64_t current_valid() const { return valid_[slot(consumed_ - 1)]; }
  double stall_sec() const { return stall_sec_; }
  // The last next_images()'s wait for its batch: start == end where the batch was ready.
  struct Wait {
    std::chrono::steady_clock::time_point start, end;
    bool waited() const { return end > start; }
  };
  const Wait& last_wait() const { return last_wait_; }
  // Images made per second of the workers' busy time, times the workers: what the pipeline could
  // deliver if the consumer never made it wait (0 before the first batch).
  double images_per_sec_capacity() const;
  // Starts that count again (after a warm-up).
  void reset_capacity();

 protected:
  BatchPipeline(int64_t batch_size, int64_t example_floats, int rank, uint64_t seed, int workers, int depth);
  // Writes batch `b` of the current epoch (images, labels) and returns how many of its examples
  // count; called by several workers at once, for different b. A negative return: interrupted.
  // `waited_sec`: time spent waiting for something else (records being read), not making images.
  virtual int64_t fill_batch(int64_t b, std::mt19937_64& rng, float* images, int32_t* labels, double& waited_sec) = 0;
  // Called once stopping is flagged, so that a fill_batch blocked on something else returns.
  virtual void interrupt_fills() {}
  // Workers for `epoch`, from batch first_batch_ (then 0 again: the next start is a whole epoch).
  void start_workers(int64_t epoch);
  void stop_workers();
  int64_t first_batch() const { return first_batch_; }

  int64_t batch_size_, example_floats_;
  int rank_;
  uint64_t seed_;
  int64_t steps_ = 0, epoch_ = 0;
  int64_t consumed_ = 0;

 private:
  int slot(int64_t batch) const { return static_cast<int>(batch % depth_); }
  void produce(int worker, int64_t first);
  int64_t first_batch_ = 0;

  int workers_count_, depth_;
  std::vector<std::vector<float>> images_;
  std::vector<std::vector<int32_t>> labels_;
  std::vector<int64_t> valid_, ready_;  // per slot: valid examples, the batch index it holds
  double stall_sec_ = 0, busy_sec_ = 0;
  Wait last_wait_;
  int64_t made_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  std::exception_ptr error_;  // a worker's failure (a corrupt file), rethrown to the consumer
  std::vector<std::thread> workers_;
};

class InputPipeline final : public BatchPipeline {
 public:
  // training: shuffled and augmented, full batches only (ranks must step together);
  // evaluation: in order, the last batch padded (valid() tells how many count).
  InputPipeline(const ExampleSource& source, int64_t batch_size, int rank, int ranks, uint64_t seed, bool training,
                int workers = 2, int depth = 3);
  ~InputPipeline() override { stop_workers(); }
  void start_epoch(int64_t epoch) override;

 private:
  int64_t fill_batch(int64_t b, std::mt19937_64& rng, float* images, int32_t* labels, double& waited_sec) override;

  const ExampleSource& source_;
  int ranks_;
  bool training_;
  std::vector<int64_t> shard_;
};

}  // namespace cnnbench
