// harness/run/time_to_accuracy.h — MLPerf's metric for a convergence run: the wall-clock seconds
// (evaluations and checkpoints included, as MLPerf counts them), epochs and images trained until
// the test top-1 accuracy first reaches a target (--target_top_1_accuracy, or
// --stop_at_top_1_accuracy, which also ends the run there). Its resolution is the evaluation
// interval: set --eval_during_training_every_n_epochs=1 for a figure to the epoch.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace cnnbench {

struct TimeToAccuracy {
  double target = 0;      // 0..1; 0 = none asked for
  bool reached = false;
  double seconds = 0;     // from the start of training (of this process, when resumed)
  int64_t epochs = 0;     // epochs trained when the target was reached
  int64_t images = 0;     // images trained then, all ranks
  double top1 = 0;        // the accuracy of that evaluation
  double best_top1 = 0;   // the best of all evaluations
  int evaluations = 0;
  int64_t first_epoch = 0;  // > 0: resumed there, so seconds leave out the earlier epochs

  // One evaluation's accuracy after `epochs` epochs, `images` images, `seconds` into training.
  // Returns true the first time the target is reached.
  bool observe(double test_top1, double seconds_now, int64_t epochs_now, int64_t images_now);
  // "time to 94.50% test top-1: 1834.2 s, 42 epochs, 2520000 images (reached 94.62%)", or why not.
  std::string line() const;
  nlohmann::json to_json() const;
};

// The target a run measures: --target_top_1_accuracy, else --stop_at_top_1_accuracy (0: none).
double accuracy_target(double target_top_1_accuracy, double stop_at_top_1_accuracy);

}  // namespace cnnbench
