#include "harness/run/evaluation.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "kernels/cpu_ops.h"
#include "kernels/top_k.h"

namespace cnnbench {

// The pipeline's next batch; with a timeline, a wait for it (the batch not there yet) is an
// "input stall" span of that wait.
const float* next_batch(BatchPipeline& input, Timeline* timeline) {
  const float* images = input.next_images();
  if (timeline && input.last_wait().waited())
    timeline->span(Track::input, "input stall", input.last_wait().start, input.last_wait().end);
  return images;
}

// The whole test set, each rank its shard, counts summed over ranks.
EvalResult evaluate(Plan& plan, BatchPipeline& pipeline, const Communicator& comm, Timeline* timeline) {
  const auto start = std::chrono::steady_clock::now();
  const Graph& g = plan.graph();
  const int64_t n = g.batch_size(), classes = g.num_classes();
  std::vector<float> logits(n * classes), scratch(n * classes);
  double sums[4] = {0, 0, 0, 0};  // loss x images, top-1, top-5, images
  pipeline.start_epoch(0);
  for (int64_t s = 0; s < pipeline.steps_per_epoch(); ++s) {
    plan.set_input(next_batch(pipeline, timeline));
    plan.forward(Mode::inference);
    plan.read_output(g.output, logits.data());
    const int64_t valid = pipeline.current_valid();
    const int32_t* labels = pipeline.current_labels();
    sums[0] += cpu::softmax_cross_entropy(logits.data(), labels, scratch.data(), valid, classes) * valid;
    sums[1] += count_top_k(logits.data(), labels, valid, classes, 1);
    sums[2] += count_top_k(logits.data(), labels, valid, classes, std::min<int64_t>(5, classes));
    sums[3] += valid;
  }
  comm.allreduce_sum(sums, 4);
  if (timeline) timeline->span(Track::compute, "evaluation", start, std::chrono::steady_clock::now());
  return {sums[0] / sums[3], sums[1] / sums[3], sums[2] / sums[3]};
}

}  // namespace cnnbench
