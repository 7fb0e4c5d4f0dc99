// harness/run/checkpoint.h — training state on disk: weights, momentum, batch-norm statistics,
// the number of finished epochs and steps, the seed (every random stream is derived from it,
// the epoch and the batch, so this is all the RNG state there is) and a checksum. Written to a
// temporary name and renamed; read back only if the checksum, the model and the sizes match.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/report/epoch_metrics.h"
#include "harness/report/time_to_accuracy.h"
#include "harness/run/loss_scaler.h"

#include "kernels/plan.h"

namespace cnnbench {

struct CheckpointInfo {
  std::string model;
  int64_t epochs_done = 0, steps_done = 0;
  uint64_t seed = 0;
  std::string path;
  // Optional (absent in checkpoints of earlier versions): the wall-clock seconds of training so
  // far (< 0: unknown), and the time-to-accuracy state, so that a resumed run goes on counting.
  double training_seconds = -1;
  std::optional<TimeToAccuracy> time_to_accuracy;
  // Optional: the id its ranks' own state files were written under (empty: none written).
  std::string rank_state_id;
  // Optional (absent before): the settings that shaped the weights (train_dir.h's run_identity).
  nlohmann::json run = nlohmann::json();
  uint64_t parameters = 0, buffers = 0;  // as the header says
  bool stopped_at_target = false;  // the run stopped here at --stop_at_top_1_accuracy: it is complete
  // Optional (absent before 2026-11-28): every epoch so far, so that a resumed run's results hold
  // the epochs before the resume, and a run whose results were lost can write them again.
  std::optional<std::vector<EpochMetrics>> history = std::nullopt;
  // Optional (absent before 2026-11-28): the rank counts the run has trained on, in order ({2, 4}:
  // resumed on 4 ranks after training on 2); empty where not known.
  std::vector<int64_t> ranks_trained = {};
  // Optional (absent before 2026-11-29, and in runs without loss scaling): the loss scaler's state.
  std::optional<LossScaleState> loss_scale = std::nullopt;
  // Optional (absent before 2026-11-29): the test set the run evaluates on, as the fingerprint of
  // the training and test data together (real_data.h's DataSplits::fingerprint; the training data
  // being the run's own, it differs where the test set does), and the first epoch (1-based) the
  // run evaluated on it (> 1 where a --resume changed the test set).
  std::string test_set_fingerprint = {};
  int64_t test_set_from_epoch = 1;
  // The file's checksum, as read back (not written): ranks that read copies of it compare them.
  uint64_t checksum = 0;
};

// <dir>/checkpoint-epoch-NNNN.ckpt
std::string checkpoint_path(const std::string& dir, int64_t epochs_done);
// Writes checkpoint_path(dir, info.epochs_done); returns it.
std::string write_checkpoint(const std::string& dir, Plan& plan, const CheckpointInfo& info);
// The header of `path` alone (the whole file is read and its checksum checked; nothing is
// loaded): throws std::runtime_error naming the file when it is not a whole checkpoint.
CheckpointInfo read_checkpoint_header(const std::string& path);
// The checkpoint files in dir, newest (most epochs) first.
std::vector<std::string> list_checkpoints(const std::string& dir);
// --max_ckpts_to_keep, after `written` (a checkpoint_path) is whole: keeps it and the `keep` - 1
// newest before it, removing older ones (and their ranks' state files); keep 0 removes none.
// Higher-numbered files (damaged ones a resume skipped) and names cnnbench does not write are
// left alone. Returns how many checkpoints went.
int remove_older_checkpoints(const std::string& written, int64_t keep);
// Loads `path` into plan; throws std::runtime_error naming the file and the problem.
CheckpointInfo read_checkpoint(const std::string& path, Plan& plan, const std::string& model);
// The newest checkpoint in dir that reads back whole; nullopt if none. Damaged ones are skipped
// and listed in `skipped`.
std::optional<CheckpointInfo> load_newest_checkpoint(const std::string& dir, Plan& plan, const std::string& model,
                                                     std::string* skipped);

// A rank's own state beside a checkpoint, state that differs between ranks (PowerSGD's error
// feedback): checkpoint-epoch-NNNN.rank-RRRR.state, framed and checksummed as the checkpoint is,
// under an id that the checkpoint's header names too (CheckpointInfo::rank_state_id), so that a
// state file left by another run of the same folder is never taken for this checkpoint's.
// A checkpoint written again under its name (inside an epoch, then at its end) must not leave the
// one before without its state if a kill comes between the files: each rank writes
// checkpoint-epoch-NNNN.rank-RRRR.next.state, rank 0 replaces the checkpoint, and only then does
// each rank commit its next state over the old one.
std::string rank_state_path(const std::string& checkpoint, int rank);
std::string next_rank_state_path(const std::string& checkpoint, int rank);
void write_rank_state(const std::string& checkpoint, int rank, int ranks, const std::string& kind,
                      const std::string& id, const std::string& state);
void commit_rank_state(const std::string& checkpoint, int rank);
// The state written beside `checkpoint` for this rank of a run of `ranks`, of this kind, under
// this id (the committed file, else the next one); throws std::runtime_error naming the
// committed file and the problem (missing, damaged, another run's or another checkpoint's).
std::string read_rank_state(const std::string& checkpoint, int rank, int ranks, const std::string& kind,
                            const std::string& id);

}  // namespace cnnbench
