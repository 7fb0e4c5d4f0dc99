// harness/run/convergence_run.h — training on real data (--data_dir) for --num_epochs epochs:
// sharded, prefetched, augmented input; the learning-rate schedule; evaluation on the whole
// test set, split across ranks and reduced (top-1, top-5); per-epoch metrics in CSV and JSON;
// a checkpoint per epoch in --train_dir and --resume from the newest valid one. Rank 0 prints
// one line per epoch (and a progress bar on a terminal).
#pragma once

#include "comm/communicator.h"
#include "harness/cli/config.h"

namespace cnnbench {

void run_convergence(const Config& config, Communicator& comm);

}  // namespace cnnbench
