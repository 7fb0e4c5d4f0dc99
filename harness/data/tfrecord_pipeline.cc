#include "harness/data/tfrecord_pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "harness/data/image_example.h"
#include "harness/data/imagenet_recipe.h"

namespace cnnbench {

namespace {

namespace fs = std::filesystem;

struct ShardName {
  int64_t index = -1, of = -1;  // -1: not a shard's name
};

// "<subset>-00002-of-00004" -> {2, 4}
ShardName parse_shard_name(const std::string& name, const std::string& subset) {
  const std::string head = subset + "-";
  if (!name.starts_with(head)) return {};
  const size_t at = name.find("-of-", head.size());
  if (at == std::string::npos) return {};
  const std::string index = name.substr(head.size(), at - head.size()), of = name.substr(at + 4);
  auto number = [](const std::string& digits) -> int64_t {
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoll(digits);
  };
  return {number(index), number(of)};
}

}  // namespace

std::vector<std::string> list_tfrecord_shards(const std::string& dir, const std::string& subset) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const ShardName n = parse_shard_name(entry.path().filename().string(), subset);
    if (entry.is_regular_file() && n.index >= 0 && n.of >= 0) found.push_back(entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::string> find_tfrecord_shards(const std::string& dir, const std::string& subset) {
  const std::vector<std::string> found = list_tfrecord_shards(dir, subset);
  std::map<int64_t, std::vector<int64_t>> sets;  // -of-M -> indices
  for (const std::string& path : found) {
    const ShardName n = parse_shard_name(fs::path(path).filename().string(), subset);
    sets[n.of].push_back(n.index);
  }
  if (sets.size() > 1) {
    std::string counts;
    for (const auto& [of, indices] : sets) counts += fmt::format("{}{} of -of-{:05d}", counts.empty() ? "" : ", ", indices.size(), of);
    throw std::runtime_error(fmt::format("{}: {} shards of {} sets ({}): one set to a folder", dir, subset,
                                         sets.size(), counts));
  }
  for (const auto& [of, indices] : sets) {
    std::vector<bool> seen(static_cast<size_t>(of), false);
    for (int64_t i : indices)
      if (i >= of) throw std::runtime_error(fmt::format("{}: {}-{:05d}-of-{:05d}: index past the set's {} shards", dir, subset, i, of, of));
      else if (seen[static_cast<size_t>(i)])  // train-0-of-2 beside train-00000-of-00002: read twice an epoch
        throw std::runtime_error(fmt::format("{}: shard {} of {} {} shards named twice (another zero padding?): one file "
                                             "a shard", dir, i, of, subset));
      else seen[static_cast<size_t>(i)] = true;
    std::vector<std::string> missing;
    for (int64_t i = 0; i < of; ++i)
      if (!seen[static_cast<size_t>(i)]) missing.push_back(fmt::format("{}-{:05d}-of-{:05d}", subset, i, of));
    if (!missing.empty())
      throw std::runtime_error(fmt::format("{}: {} of {} {} shards missing, the first {}: a run would use part of the "
                                           "data (copy the whole set)", dir, missing.size(), of, subset, missing[0]));
  }
  std::error_code ec;
  for (const std::string& path : found)
    if (fs::file_size(path, ec) == 0 && !ec)
      throw std::runtime_error(path + ": an empty shard (0 bytes; a copy or conversion that failed?): a run would use "
                               "part of the data");
  return found;
}

int64_t TfRecordShards::total() const {
  int64_t sum = 0;
  for (int64_t r : records) sum += r;
  return sum;
}

TfRecordPipeline::TfRecordPipeline(TfRecordShards shards, int64_t batch_size, int rank, int ranks, uint64_t seed,
                                   bool training, int64_t image_size, int64_t classes, int64_t shuffle_buffer,
                                   int workers, int depth)
    : BatchPipeline(batch_size, 3 * image_size * image_size, rank, seed, workers, depth),
      shards_(std::move(shards)),
      image_size_(image_size),
      classes_(classes) {
  options_.rank = rank;
  options_.ranks = ranks;
  options_.seed = seed;
  options_.training = training;
  options_.batch_size = batch_size;
  // a pass drains the buffer at its end: more than a rank's share of one is never filled
  options_.shuffle_buffer = std::min(shuffle_buffer, std::max<int64_t>(1, shards_.total() / ranks));
  options_.batches_ahead = std::max(4, depth + 1);
  const int64_t files = static_cast<int64_t>(shards_.files.size());
  if (training) {
    steps_ = shards_.total() / ranks / batch_size;
  } else {  // this rank's records of the one pass
    int64_t mine = 0;
    if (files < ranks) {
      mine = (shards_.total() - rank + ranks - 1) / ranks;
    } else {
      for (int32_t f : rank_files(files, rank, ranks, seed, 0, false)) mine += shards_.records[f];
    }
    steps_ = (mine + batch_size - 1) / batch_size;
  }
}

TfRecordPipeline::~TfRecordPipeline() { stop_workers(); }

void TfRecordPipeline::interrupt_fills() {
  if (stream_) stream_->interrupt();
}

void TfRecordPipeline::start_epoch(int64_t epoch) {
  const bool finished = consumed_ == steps_;
  stop_workers();
  if (options_.training && stream_ && epoch == next_epoch_ && finished) {
    base_ += steps_;  // the stream goes on where the last epoch ended
    stream_->resume();
  } else {  // the first epoch, evaluation, or after an epoch cut short: a new stream
    stream_.reset();
    options_.first_pass = options_.training ? epoch : 0;
    stream_ = std::make_unique<RecordStream>(shards_.files, options_);
    base_ = 0;
  }
  next_epoch_ = epoch + 1;
  // a resume inside the epoch: the batches before its step are read past, not decoded
  std::vector<StreamRecord> passed;
  for (int64_t k = 0; k < std::min(first_batch(), steps_); ++k)
    if (!stream_->take(base_ + k, passed)) break;
  start_workers(epoch);
}

void TfRecordPipeline::make(const StreamRecord& record, std::mt19937_64& rng, float* out, int32_t& label) const {
  const std::string where = stream_->file(record.file) + ": record at byte " + std::to_string(record.offset);
  ImageExample e;
  try {
    e = parse_image_example(record.bytes);
  } catch (const std::exception& error) {
    throw std::runtime_error(where + ": " + error.what());
  }
  if (e.label < 0 || e.label >= classes_)
    throw std::runtime_error(where + ": image/class/label " + std::to_string(e.label) + " is outside 0.." +
                             std::to_string(classes_ - 1) + " (a label is its class as stored; the model has " +
                             std::to_string(classes_) + " outputs: --num_classes sets how many)");
  label = static_cast<int32_t>(e.label);
  make_imagenet_example(reinterpret_cast<const unsigned char*>(e.jpeg.data()), e.jpeg.size(), where,
                        options_.training, image_size_, e.boxes, rng, out);
}

int64_t TfRecordPipeline::fill_batch(int64_t b, std::mt19937_64& rng, float* images, int32_t* labels,
                                     double& waited_sec) {
  std::vector<StreamRecord> records;
  const auto start = std::chrono::steady_clock::now();
  if (!stream_->take(base_ + b, records)) return -1;
  waited_sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (records.empty()) throw std::runtime_error(shards_.files.front() + "...: the shards ended early (changed while read?)");
  const int64_t valid = std::min<int64_t>(static_cast<int64_t>(records.size()), batch_size_);
  for (int64_t i = 0; i < batch_size_; ++i)  // evaluation pads its last batch with its first record
    make(records[i < valid ? i : 0], rng, images + i * example_floats_, labels[i]);
  return valid;
}

}  // namespace cnnbench
