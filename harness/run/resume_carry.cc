#include "harness/run/resume_carry.h"

#include <fmt/format.h>

#include <algorithm>

namespace cnnbench {

CarriedOver carry_over(const CheckpointInfo& found, const ResumeContext& run, TimeToAccuracy& to_target) {
  CarriedOver c;
  const int64_t steps = run.steps_per_epoch;
  // by steps: a --num_batches run's checkpoint can end inside an epoch
  c.first_epoch = steps > 0 ? found.steps_done / steps : 0;
  c.steps_done = found.steps_done;
  if (found.history) c.epochs = *found.history;
  const bool same_target =
      to_target.target <= 0 || (found.time_to_accuracy && found.time_to_accuracy->target == to_target.target);
  // an epoch the checkpoint ended inside is trained to its end here: its partial row, where it
  // covers the steps done, is joined to this run's; it leaves the history
  for (const EpochMetrics& m : c.epochs)
    if (m.epoch == c.first_epoch + 1 && m.train_steps > 0 && m.train_steps == c.steps_done - c.first_epoch * steps)
      c.epoch_begun = m;
  std::erase_if(c.epochs, [&](const EpochMetrics& m) { return m.epoch > c.first_epoch; });
  // another target: the evaluations before are replayed against it where the history holds
  // each one's clock and covers every whole epoch before (a checkpoint inside an epoch
  // evaluated nothing after them)
  const int64_t whole_epochs_images = c.first_epoch * steps * run.global_batch;
  bool replayable = found.history.has_value() &&
                    (c.epochs.empty() ? c.first_epoch == 0 : c.epochs.back().images == whole_epochs_images);
  for (const EpochMetrics& m : c.epochs) replayable = replayable && (!m.evaluated || m.elapsed_sec >= 0);
  // the rank counts before the resume (the replayed time's: all of them, even those after
  // the evaluation that reaches the target, the history not saying which epochs each trained)
  c.ranks_trained = found.ranks_trained;
  to_target.ranks = c.ranks_trained;
  if (found.training_seconds >= 0 && same_target) {
    c.seconds_before = found.training_seconds;
    if (to_target.target > 0) to_target = *found.time_to_accuracy;
  } else if (found.training_seconds >= 0 && replayable) {
    c.seconds_before = found.training_seconds;
    // only the evaluations on this test set, where an earlier resume changed it
    for (const EpochMetrics& m : c.epochs)
      if (m.evaluated && m.epoch >= found.test_set_from_epoch)
        to_target.observe(m.test_top1, m.test_loss, m.elapsed_sec, m.epoch, m.images);
    to_target.evaluated_from_epoch = found.test_set_from_epoch;
  } else {
    // an earlier version's checkpoint: the seconds start at the resume, complete only where
    // nothing was trained before it
    to_target.clock_complete = c.steps_done == 0;
  }
  c.test_set_from_epoch = found.test_set_from_epoch;
  // another test set than the one evaluated on before (no fingerprint: a checkpoint of an earlier
  // version, which did not say): the evaluations before are the other's, and none of them counts
  // towards this one's time to accuracy. A finished run whose results are written again from its
  // checkpoint evaluates nothing.
  const bool evaluated_before =
      std::any_of(c.epochs.begin(), c.epochs.end(), [](const EpochMetrics& m) { return m.evaluated; }) ||
      (found.time_to_accuracy && found.time_to_accuracy->evaluations > 0);
  if (run.complete || found.test_set_fingerprint.empty() || found.test_set_fingerprint == run.test_set ||
      !evaluated_before)
    return c;
  c.test_set_from_epoch = c.first_epoch + 1;
  if (to_target.target > 0) to_target.test_set_changed(c.test_set_from_epoch);
  if (run.leader)
    fmt::print("{}: the test set ({} images) is not the one this run evaluated on before the resume: the test figures "
               "of the epochs before epoch {} are the other's{}\n",
               run.data_dir, run.test_images, c.test_set_from_epoch,
               to_target.target > 0 ? ", and time to accuracy counts this test set's evaluations alone, so it is no "
                                      "configuration's time (compare leaves it out)"
                                    : "");
  return c;
}

}  // namespace cnnbench
