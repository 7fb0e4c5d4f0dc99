// harness/run/checkpoint_trigger.h — when a run on real data writes a checkpoint inside an
// epoch, beside the one at each epoch's end: every --save_model_steps steps, every
// --save_model_secs seconds (rank 0's clock), and when a signal asks the run to stop (SIGTERM: a
// batch system's time limit or scancel; SIGINT: Ctrl-C; SIGUSR1: `scancel --signal=USR1`,
// `#SBATCH --signal=USR1@120`, or `kill -USR1` to mpiexec, which passes it on to its ranks).
// A stop writes a checkpoint after the step in flight and ends the run (exit 128 + the signal's
// number), so that --resume loses nothing; a second signal ends it at once, as without cnnbench.
// A signal that was ignored when the run began (SIGINT in a shell's background job) stays ignored.
//
// A signal may reach one rank only, or the ranks at different steps: after each step the ranks
// agree (one small reduction, only in runs of several ranks with a --train_dir), so that every
// rank writes its part of the same checkpoint at the same step.
#pragma once

#include <chrono>
#include <cstdint>

#include "comm/communicator.h"
#include "harness/cli/config.h"

namespace cnnbench {

class CheckpointTrigger {
 public:
  enum Action { none, checkpoint, checkpoint_and_stop };

  // Installs the signal handlers (restored by the destructor).
  CheckpointTrigger(const Config& config, const Communicator& comm);
  ~CheckpointTrigger();
  CheckpointTrigger(const CheckpointTrigger&) = delete;
  CheckpointTrigger& operator=(const CheckpointTrigger&) = delete;

  // Collective, every rank after each training step: what to do now, the same on every rank.
  Action after_step(int64_t steps_done);
  // Collective, every rank after an epoch's checkpoint: whether a signal has come to any rank
  // (during the epoch's last step, its evaluation or its checkpoint), so the run stops there.
  bool stop_agreed();
  // A checkpoint was written (inside an epoch or at its end): --save_model_secs counts from now.
  void written() { last_written_ = std::chrono::steady_clock::now(); }
  // The signal that asked the run to stop, once after_step has said so (0: none).
  int stop_signal() const { return stop_signal_; }

 private:
  const Communicator& comm_;
  int64_t every_steps_;
  double every_seconds_;
  std::chrono::steady_clock::time_point last_written_;
  int stop_signal_ = 0;
};

// "SIGTERM", "SIGINT", "SIGUSR1", or "signal N".
const char* signal_name(int signal);

// For the tests: CNNBENCH_TEST_SIGNAL_AT=R:S:N makes rank R send itself signal N right after its
// step S (counted from 1), as a batch system's signal arriving then would.
void raise_signal_if_asked(int rank, int64_t step);

}  // namespace cnnbench
