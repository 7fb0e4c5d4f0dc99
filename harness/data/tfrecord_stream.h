// harness/data/tfrecord_stream.h — one rank's records from a set of TFRecord shards, in batches:
// - Shards are split across ranks: with at least as many shards as ranks, rank r reads positions
//   r, r + ranks, ... of the pass's shard order; with fewer, every rank reads every shard and keeps
//   records r, r + ranks, ... of the pass.
// - A rank's shards are split across reader threads, each reading its files front to back in
//   large sequential blocks; the batcher takes one record from each reader in turn, so the
//   sequence does not depend on thread timing.
// - Training: passes repeat forever, each with its own seeded shard order, through a seeded
//   shuffle buffer (tf.data's: emit a random buffered record, put the new one in its place).
//   A pass ends whole before the next begins, as tf.data's shuffle-then-repeat: every reader's
//   records of the pass, then the buffer emptied in random order; so each pass is a permutation
//   of the rank's records, none twice, none left out (the epochs, nominal, count steps of the
//   stream and may start inside a pass).
//   Evaluation: one pass in shard order, no shuffle; the last batch may be short.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cnnbench {

struct StreamRecord {
  std::string bytes;
  int32_t file = 0;     // index into the stream's files; -1: the reader's end of a pass
  uint64_t offset = 0;  // of the record in its file, for errors
};

struct RecordStreamOptions {
  int rank = 0, ranks = 1;
  uint64_t seed = 1;
  bool training = true;
  int64_t first_pass = 0;        // training: the pass to start from (resuming)
  int64_t batch_size = 1;
  int64_t shuffle_buffer = 10000;
  int readers = 2;
  int batches_ahead = 4;         // batches made ready before anyone asks
};

// The shards (of `count` files) that rank `rank` reads in pass `pass`; all of them when there are
// fewer shards than ranks.
std::vector<int32_t> rank_files(int64_t count, int rank, int ranks, uint64_t seed, int64_t pass, bool shuffled);

class RecordStream {
 public:
  RecordStream(std::vector<std::string> files, const RecordStreamOptions& options);
  ~RecordStream();
  RecordStream(const RecordStream&) = delete;
  RecordStream& operator=(const RecordStream&) = delete;

  // Batch k of the stream (0-based), blocking until it is made; empty at the end of an evaluation
  // pass. False if interrupted. Rethrows a reader's error (naming the shard and the offset).
  bool take(int64_t k, std::vector<StreamRecord>& out);
  void interrupt();  // wakes every take() with false, until resume()
  void resume();
  const std::string& file(int32_t index) const { return files_[index]; }

 private:
  struct Queue {
    std::deque<StreamRecord> records;
    bool ended = false;
  };
  void read(int reader);
  void batch();
  bool pop(int reader, StreamRecord& out);  // false when that reader has ended (evaluation)
  void fail(std::exception_ptr error);

  std::vector<std::string> files_;
  RecordStreamOptions options_;
  int readers_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Queue> queues_;
  std::map<int64_t, std::vector<StreamRecord>> ready_;  // batch index -> records
  int64_t made_ = 0;        // batches made
  bool ended_ = false, stop_ = false, interrupted_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace cnnbench
