// harness/report/epoch_metrics.h — one epoch of a run on real data, as the result JSON's "epochs"
// and a checkpoint's history hold it: its training figures, its evaluation where there was one,
// and how far the run had come by its end.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

namespace cnnbench {

struct EpochMetrics {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_top1 = 0, learning_rate = 0;
  double seconds = 0, images_per_sec = 0, compute_images_per_sec = 0, input_stall_sec = 0;
  bool evaluated = false;
  double test_loss = 0, test_top1 = 0, test_top5 = 0;
  int64_t images = 0;         // images all ranks had trained by the epoch's end, since the run began
  // the steps the training figures (loss, top-1, seconds, images/s) cover: the epoch's, or in the
  // epoch a --resume started inside, those since; 0 where a file written before does not say
  int64_t train_steps = 0;
  double elapsed_sec = -1;    // evaluated: the training clock then (time to accuracy's); -1 unknown
};

// An epoch's training figures over the steps of `before` (a checkpoint's partial row, written
// inside the epoch) and those of `after` (the steps a resume trained since): loss and top-1
// weighted by steps, seconds and stalls added, the rates over both parts' images; the rest
// (evaluation, images, learning rate) `after`'s.
EpochMetrics join_epoch_parts(const EpochMetrics& before, const EpochMetrics& after);

// An epoch as the JSON's "epochs" and a checkpoint's history hold it, and back (throws
// std::runtime_error naming the bad field).
nlohmann::json epoch_json(const EpochMetrics& m);
EpochMetrics epoch_from_json(const nlohmann::json& j);

}  // namespace cnnbench
