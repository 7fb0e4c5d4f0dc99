// harness/run/resume_carry.h — what a convergence run's --resume carries over from the checkpoint
// it resumes: where training goes on, the epochs before (and the part of an epoch that a
// checkpoint written inside it had trained), the training clock, time to accuracy (replayed
// against another target where the history holds each evaluation's clock), the rank counts the
// run trained on, and the test set it evaluated on (another one now: said, and its evaluations
// before are not counted towards this one's time to accuracy).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/report/epoch_metrics.h"
#include "harness/report/time_to_accuracy.h"
#include "harness/run/checkpoint.h"

namespace cnnbench {

struct CarriedOver {
  int64_t first_epoch = 0, steps_done = 0;  // first_epoch 0-based: the epoch training goes on in
  double seconds_before = 0;                // of training before the resume
  std::vector<EpochMetrics> epochs;         // the whole epochs before it
  // a checkpoint written inside an epoch: that epoch's training figures up to it, which the
  // resumed run's steps complete (absent in checkpoints written before they were kept)
  std::optional<EpochMetrics> epoch_begun;
  std::vector<int64_t> ranks_trained;  // empty: not known
  int64_t test_set_from_epoch = 1;     // the first epoch (1-based) evaluated on this run's test set
};

struct ResumeContext {
  bool complete = false;          // the checkpoint finished the run: nothing trains, nothing is evaluated
  int64_t steps_per_epoch = 0, global_batch = 0;
  std::string test_set;           // this run's test set (checkpoint.h's test_set_fingerprint)
  int64_t test_images = 0;
  std::string data_dir;           // for the line that says the test set changed
  bool leader = false;            // says it
};

// `to_target` comes in holding this run's target and goes out as the resumed run counts on.
CarriedOver carry_over(const CheckpointInfo& found, const ResumeContext& run, TimeToAccuracy& to_target);

}  // namespace cnnbench
