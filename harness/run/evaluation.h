// harness/run/evaluation.h — a real-data run's batches and its test-set evaluation: the next
// batch from an input pipeline (a wait for it is an "input stall" on the timeline), and the
// whole test set's loss, top-1 and top-5, each rank its shard, counts summed over ranks.
#pragma once

#include "comm/communicator.h"
#include "comm/timeline.h"
#include "harness/data/input_pipeline.h"
#include "kernels/plan.h"

namespace cnnbench {

const float* next_batch(BatchPipeline& input, Timeline* timeline);

struct EvalResult {
  double loss = 0, top1 = 0, top5 = 0;
};
EvalResult evaluate(Plan& plan, BatchPipeline& pipeline, const Communicator& comm, Timeline* timeline);

}  // namespace cnnbench
