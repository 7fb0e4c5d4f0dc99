// harness/run/training_run.h — one benchmark run across the job's ranks: agree on the
// configuration, build and compile the model, broadcast rank 0's weights, run the step loop
// with gradients averaged by the GradientReducer, take every step's time as the max over
// ranks, and have rank 0 print and write the results.
#pragma once

#include "comm/communicator.h"
#include "harness/cli/config.h"

namespace cnnbench {

// Throws ConfigError (the same on every rank) for settings that cannot run.
void run_training(const Config& config, Communicator& comm);

}  // namespace cnnbench
