// harness/report/time_to_accuracy.h — MLPerf's metric for a convergence run: the wall-clock seconds
// (evaluations and checkpoints included, as MLPerf counts them), epochs and images trained until
// the test top-1 accuracy first reaches a target (--target_top_1_accuracy, or
// --stop_at_top_1_accuracy, which also ends the run there). Its resolution is the evaluation
// interval: set --eval_during_training_every_n_epochs=1 for a figure to the epoch. Checkpoints
// carry it, with the training time so far, so that a resumed run goes on counting.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cnnbench {

struct TimeToAccuracy {
  double target = 0;      // 0..1; 0 = none asked for
  bool reached = false;
  double seconds = 0;     // of training when the target was reached
  int64_t epochs = 0;     // epochs trained then
  int64_t images = 0;     // images trained then, all ranks
  double top1 = 0;        // the accuracy of that evaluation
  double best_top1 = 0;   // the best of all evaluations
  int64_t evaluations = 0;
  // false: resumed from a checkpoint that did not hold the training time so far, so seconds
  // leave out the epochs before it (epochs and images do not); compare skips such a run
  bool clock_complete = true;
  // the rank counts whose training the seconds cover, in order: one unless a --resume moved the
  // run to another count before the target was reached ({2, 4}: 2 ranks, then 4); empty where a
  // checkpoint of an earlier version did not say. A time of two rank counts is not one
  // configuration's: compare skips it, and the results' summary leaves it out.
  std::vector<int64_t> ranks;
  // 1: every evaluation was on this run's test set. E > 1: a --resume found another test set
  // than the one the run had evaluated on, so only the evaluations of epoch E on count; the time
  // is then no configuration's time to accuracy (compare skips it, the summary leaves it out).
  int64_t evaluated_from_epoch = 1;

  // The run trains on `n` ranks from here: noted while the target is still ahead.
  void trained_on(int64_t n);
  // Whether the seconds cover any rank count but `run_ranks` (false where unknown).
  bool mixes_ranks(int64_t run_ranks) const;
  // The evaluations so far were on another test set: forgets them (reached, best, count) and
  // counts from `epoch` (1-based) on; target, clock and rank counts stay.
  void test_set_changed(int64_t epoch);
  // The run's time to accuracy as one configuration's: complete clock, one rank count, one test set.
  bool comparable(int64_t run_ranks) const {
    return clock_complete && !mixes_ranks(run_ranks) && evaluated_from_epoch <= 1;
  }

  // One evaluation: its test top-1 and loss after `epochs` epochs, `images` images, `seconds`
  // into training. A diverged evaluation (a loss that is not finite) never reaches the target.
  // Returns true the first time the target is reached.
  bool observe(double test_top1, double test_loss, double seconds_now, int64_t epochs_now, int64_t images_now);
  // "time to 94.50% test top-1: 1834.2 s, 42 epochs, 2520000 images (reached 94.62%)", or why not;
  // with the run's rank count, a time trained on others says so.
  std::string line(int64_t run_ranks = 0) const;
  nlohmann::json to_json() const;
  // The state to_json() wrote (a checkpoint's); throws std::runtime_error naming the bad field.
  static TimeToAccuracy from_json(const nlohmann::json& j);
};

// A JSON list of rank counts (each 1 to 2^24, at most 1000 of them) into `out`; false, and
// `out` untouched, where it is not one. Checkpoints' ranks_trained and time_to_accuracy.ranks.
bool read_rank_counts(const nlohmann::json& j, std::vector<int64_t>& out);

// The target a run measures: --target_top_1_accuracy, else --stop_at_top_1_accuracy (0: none).
double accuracy_target(double target_top_1_accuracy, double stop_at_top_1_accuracy);

}  // namespace cnnbench
