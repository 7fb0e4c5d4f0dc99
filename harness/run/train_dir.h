// harness/run/train_dir.h — a train_dir belongs to the run that made it. Its checkpoints record
// that run's identity (model, data set, seed and every setting that shapes the weights); a new
// run in a folder that holds checkpoints, or a --resume whose newest checkpoint is another run's,
// is refused with one line naming the difference, touching nothing, unless --overwrite_train_dir
// says to start afresh (the old run's checkpoints and state files are removed first, so a later
// --resume can never continue from the old run's epochs). A damaged checkpoint (it does not read
// back whole) is skipped and named; a foreign one is refused, and so is a --resume where every
// checkpoint is damaged. --num_epochs and the split of the global batch over ranks may change on
// --resume (not the length of a cosine schedule, which --num_epochs sets). One run at a time: a
// second run given a folder that a running one holds is refused (a lock, train_dir/.lock).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "comm/communicator.h"
#include "harness/cli/config.h"
#include "harness/cli/run_settings.h"
#include "harness/run/checkpoint.h"
#include "kernels/plan.h"

namespace cnnbench {

// What a checkpoint records of its run: the settings that shape the weights, as text, the
// number of training examples (a step count means its epochs on that many examples) and the
// training data's fingerprint (real_data.h's DataSplits::train_fingerprint: Fashion-MNIST and
// MNIST are the same size, a copy with other files is not the same data; the test split may
// change, which checkpoint.h's test_set_fingerprint notes); under a cosine schedule, the epochs
// it spans (`schedule_epochs`).
nlohmann::json run_identity(const Config& config, const RunSettings& settings, double learning_rate,
                            int64_t train_examples, uint64_t data_fingerprint, double schedule_epochs);

// "model small_cnn (this run: resnet20), seed 1 (this run: 2)": where `theirs` (a checkpoint's)
// differs from `ours`; empty when they agree. A checkpoint of an earlier version records no
// identity: only its model and seed are compared then; one written before a key was added
// (train_examples) is not compared on it.
std::string identity_differences(const CheckpointInfo& theirs, const nlohmann::json& ours);

struct TrainDirStart {
  std::optional<CheckpointInfo> resumed;  // loaded into the plan
  bool complete = false;                  // resumed from a checkpoint that finished the run
  bool results_written = true;            // complete: its results were written (else: write them)
};

// train_dir/results-written: the result JSON's path, written once a finished run's results are
// (a run that died between its last checkpoint and its results writes them on --resume).
std::string results_marker_path(const std::string& train_dir);

// Every rank, before training: checks the folder against the run (errors gathered and printed
// once, then ErrorsReported{2}); clears temporaries of killed writes; with --resume loads the
// newest checkpoint of this run into `plan`. `total_steps`: the steps the whole run trains;
// `steps_per_epoch`: for the line that says how far the run had come.
TrainDirStart open_train_dir(const Config& config, const nlohmann::json& identity, Plan& plan, int64_t total_steps,
                             int64_t steps_per_epoch, Communicator& comm);

// Removes `dir`'s temporaries (NAME.tmp.HOST.PID, or NAME.tmp.PID of earlier versions) whose
// writer was a process of this host that no longer runs; returns how many.
int clear_stale_temporaries(const std::string& dir);

}  // namespace cnnbench
