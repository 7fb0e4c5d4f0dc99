// harness/report/step_record.h — what one training or inference step measured: its time and
// split, its communication, its loss and accuracy counts. A leaf: the step loop fills it, the
// log, the summary and the result files read it.
#pragma once

#include <cstdint>
#include <vector>

namespace cnnbench {

struct StepRecord {
  double time_sec = 0, forward_sec = 0, backward_sec = 0, update_sec = 0;
  double comm_sec = 0;     // gradient allreduce, on the communication thread (overlapped)
  double exposed_sec = 0;  // of which the compute thread waited for, after backward
                           // (--overlap_forward: in forward, for the previous step's buckets)
  double hidden_by_forward_sec = 0;  // --overlap_forward: of comm_sec, what ran beside forward's compute
  double loss = 0;     // rank 0's: the softmax cross-entropy over its batch
  double l2_loss = 0;  // on the steps the log prints, of a training run with weight decay: the decay x half
                       // the sum of squares of the decayed weights this step started from (0 elsewhere)
  int64_t top1_correct = 0, top5_correct = 0;
  bool skipped = false;  // loss scaling found inf/NaN gradients: no update this step
  double learning_rate = 0;  // the rate this step updated with (0: forward-only)
  double loss_scale = 0;     // with loss scaling: the scale after this step's update (0: none)
  double ended_at = 0;       // when the step ended, seconds since the Unix epoch (0: not kept)
};

// Whether the log prints timed step `index` (0-based): the first and every display_every-th, as
// tf_cnn_benchmarks does.
inline bool step_line_shown(int64_t index, int64_t display_every) {
  return index == 0 || (index + 1) % display_every == 0;
}

// Images per second of each step (global batch / step time).
inline std::vector<double> step_speeds(const std::vector<StepRecord>& steps, int64_t global_batch) {
  std::vector<double> speeds;
  speeds.reserve(steps.size());
  for (const StepRecord& s : steps) speeds.push_back(static_cast<double>(global_batch) / s.time_sec);
  return speeds;
}

}  // namespace cnnbench
