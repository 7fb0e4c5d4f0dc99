// harness/run/step_loop.h — the timed step loop: warm-up steps, then timed steps that each feed a
// batch, run forward, loss, backward and the update, keeping every step's time and its split.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/cli/run_settings.h"
#include "comm/gradient_reducer.h"
#include "comm/timeline.h"
#include "harness/run/forward_overlap.h"
#include "harness/run/loss_scaler.h"
#include "harness/report/step_record.h"
#include "kernels/plan.h"

namespace cnnbench {

// A loss that is NaN or infinite: the run diverged, and a diverged benchmark is not a result.
struct DivergedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Throws DivergedError naming the step ("warm-up step N", "step N" or "step N (epoch E)" for
// epoch > 0) when r's loss is not finite, unless the step was one the loss scaler skipped or
// --allow_nonfinite_loss is set. Formats nothing unless it throws: it runs after every step.
void check_finite_loss(const StepRecord& r, const Config& config, int64_t step, bool warmup, int64_t epoch = 0);

struct StepLoopEvents {
  std::function<void()> warmup_started, warmup_done;
  // called after timed step `index` (0-based) with every timed step so far
  std::function<void(int64_t index, const std::vector<StepRecord>&)> step_done;
  Timeline* timeline = nullptr;  // --timeline: every step's phases (and layers) recorded there
};

SgdConfig sgd_config(const Config& config);

// One step on the batch already given to plan.set_input(): forward (inference when not
// training), loss, and when training backward and the update, averaged across ranks by the
// reducer if there is one.
// With a timeline, forward (with the loss) and backward are spans on its compute track and the
// update (per bucket with a reducer) on its update track.
// With an overlap (--overlap_forward; the reducer's, no scaler), forward first applies the
// previous step's pending updates and this step's are left pending (ForwardOverlap::finish()
// applies them); the record's comm, exposed and update times are then the previous step's
// exchange's, as the forward pass saw it.
StepRecord train_step(Plan& plan, GradientExchange* reducer, const SgdConfig& sgd, float learning_rate,
                      const int32_t* labels, bool training, LossScaler* scaler = nullptr,
                      Timeline* timeline = nullptr, ForwardOverlap* overlap = nullptr);

// Runs settings.warmup_steps + settings.timed_steps steps on `plan`; returns the timed ones.
// With a reducer, gradients are averaged across ranks during backward and each bucket is
// updated as soon as it is reduced, or with an overlap in the next step's forward pass (the
// last timed step then also pays for applying its own updates: the run ends with every update
// applied).
std::vector<StepRecord> run_step_loop(const RunSettings& settings, const Config& config, Plan& plan,
                                      GradientExchange* reducer, ForwardOverlap* overlap, LossScaler* scaler,
                                      const float* images, const int32_t* labels, const StepLoopEvents& events);

}  // namespace cnnbench
