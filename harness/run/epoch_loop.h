// harness/run/epoch_loop.h — one training epoch of a run on real data, beside the step loop of
// synthetic runs: each step draws its batch from the input pipeline, trains at the schedule's
// rate, checks the loss, writes its TensorBoard scalars and draws the progress bar; at the end
// the batch-norm statistics are averaged over ranks and the epoch's figures over ranks.
#pragma once

#include <functional>

#include "comm/communicator.h"
#include "comm/gradient_reducer.h"
#include "comm/timeline.h"
#include "harness/cli/config.h"
#include "harness/cli/run_settings.h"
#include "harness/data/input_pipeline.h"
#include "harness/report/convergence_record.h"
#include "harness/report/event_file.h"
#include "harness/run/checkpoint_trigger.h"
#include "harness/run/forward_overlap.h"
#include "harness/run/loss_scaler.h"
#include "harness/run/lr_schedule.h"
#include "kernels/plan.h"

namespace cnnbench {

// What every epoch of a run shares.
struct EpochRun {
  const Config& config;
  const RunSettings& settings;
  const Communicator& comm;
  Plan& plan;
  GradientExchange* reducer = nullptr;
  ForwardOverlap* overlap = nullptr;
  LossScaler* scaler = nullptr;
  Timeline* timeline = nullptr;
  EventWriter* events = nullptr;
  const LrSchedule& schedule;
  const SgdConfig& sgd;
  BatchPipeline& input;
  int64_t steps_per_epoch = 0, epochs = 0;
  bool progress_bar = false;  // rank 0 on a terminal
  // With a --train_dir: asked after each step whether to checkpoint (or stop) inside the epoch;
  // the checkpoint itself is written by `checkpoint_inside_epoch` (every rank, given steps_done).
  CheckpointTrigger* trigger = nullptr;
  // (given steps_done, and the epoch's training figures so far, for a resume to complete them)
  std::function<void(int64_t, const EpochMetrics&)> checkpoint_inside_epoch;
};

// Trains steps [skip, epoch_steps) of epoch `epoch` (0-based; the first `skip` batches are drawn
// and passed over, so the rest are the ones an unbroken run trains). `steps_done` counts on.
// Returns the epoch's training figures, the same on every rank (no evaluation); where a signal
// stops the run inside the epoch (run.trigger's stop_signal()), after that step's checkpoint, and
// the figures are not the epoch's.
EpochMetrics train_epoch(const EpochRun& run, int64_t epoch, int64_t skip, int64_t epoch_steps, int64_t& steps_done);

// --eval_during_training_every_n_epochs=N: whether the test set is evaluated after epoch
// `epochs_done` (1-based): where a multiple of N falls in that epoch, (epochs_done - 1,
// epochs_done]. Whole N: every N-th epoch; 2.5: after epochs 3, 5, 8, 10 ...; below 1: every epoch
// (evaluation happens at epochs' ends). 0: never (the run's end evaluates anyway).
bool evaluation_due(int64_t epochs_done, double every);

}  // namespace cnnbench
