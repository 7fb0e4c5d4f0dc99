// harness/run/train_dir.h — a train_dir belongs to the run that made it. Its checkpoints record
// that run's identity (model, data set, seed and every setting that shapes the weights); a new
// run in a folder that holds checkpoints, or a --resume whose newest checkpoint is another run's,
// is refused with one line naming the difference, touching nothing, unless --overwrite_train_dir
// says to start afresh (the old run's checkpoints and state files are removed first, so a later
// --resume can never continue from the old run's epochs). A damaged checkpoint (it does not read
// back whole) is skipped and named; a foreign one is refused. --num_epochs and the split of the
// global batch over ranks may change on --resume.
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

// What a checkpoint records of its run: the settings that shape the weights, as text, and the
// number of training examples (a step count means its epochs on that many examples).
nlohmann::json run_identity(const Config& config, const RunSettings& settings, double learning_rate,
                            int64_t train_examples);

// "model small_cnn (this run: resnet20), seed 1 (this run: 2)": where `theirs` (a checkpoint's)
// differs from `ours`; empty when they agree. A checkpoint of an earlier version records no
// identity: only its model and seed are compared then; one written before a key was added
// (train_examples) is not compared on it.
std::string identity_differences(const CheckpointInfo& theirs, const nlohmann::json& ours);

struct TrainDirStart {
  std::optional<CheckpointInfo> resumed;  // loaded into the plan
  bool complete = false;                  // resumed from a checkpoint that finished the run
};

// Every rank, before training: checks the folder against the run (errors gathered and printed
// once, then ErrorsReported{2}); clears temporaries of killed writes; with --resume loads the
// newest checkpoint of this run into `plan`. `total_steps`: the steps the whole run trains.
TrainDirStart open_train_dir(const Config& config, const nlohmann::json& identity, Plan& plan, int64_t total_steps,
                             Communicator& comm);

// Removes `dir`'s temporaries (NAME.tmp.HOST.PID, or NAME.tmp.PID of earlier versions) whose
// writer was a process of this host that no longer runs; returns how many.
int clear_stale_temporaries(const std::string& dir);

}  // namespace cnnbench
