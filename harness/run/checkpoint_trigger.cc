#include "harness/run/checkpoint_trigger.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>

namespace cnnbench {
namespace {

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGUSR1};

volatile sig_atomic_t g_signal = 0;  // the first stop signal received; set by the handler alone

// SA_RESETHAND: the handler is used once, so a second signal does what it does without cnnbench
void note_signal(int signal) {
  if (g_signal == 0) g_signal = signal;
}

struct sigaction g_before[sizeof(kStopSignals) / sizeof(kStopSignals[0])];

}  // namespace

const char* signal_name(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
  }
}

CheckpointTrigger::CheckpointTrigger(const Config& config, const Communicator& comm)
    : comm_(comm),
      every_steps_(config.save_model_steps),
      every_seconds_(config.save_model_secs),
      last_written_(std::chrono::steady_clock::now()) {
  g_signal = 0;
  struct sigaction action = {};
  action.sa_handler = note_signal;
  action.sa_flags = SA_RESETHAND | SA_RESTART;  // a read or write in flight goes on
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < sizeof(kStopSignals) / sizeof(kStopSignals[0]); ++i)
    sigaction(kStopSignals[i], &action, &g_before[i]);
}

CheckpointTrigger::~CheckpointTrigger() {
  for (size_t i = 0; i < sizeof(kStopSignals) / sizeof(kStopSignals[0]); ++i)
    sigaction(kStopSignals[i], &g_before[i], nullptr);
}

CheckpointTrigger::Action CheckpointTrigger::after_step(int64_t steps_done) {
  // [0]: a signal's number; [1]: rank 0's clock says a checkpoint is due
  double asked[2] = {static_cast<double>(g_signal), 0};
  if (comm_.rank() == 0 && every_seconds_ > 0)
    asked[1] = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_written_).count() >= every_seconds_;
  if (comm_.size() > 1) comm_.allreduce_max(asked, 2);
  if (asked[0] > 0) {
    stop_signal_ = static_cast<int>(asked[0]);
    return checkpoint_and_stop;
  }
  if (asked[1] > 0 || (every_steps_ > 0 && steps_done % every_steps_ == 0)) return checkpoint;
  return none;
}

void raise_signal_if_asked(int rank, int64_t step) {
  static const struct Ask {
    int rank = -1, signal = 0;
    long long step = -1;
  } ask = [] {
    Ask a;
    if (const char* spec = std::getenv("CNNBENCH_TEST_SIGNAL_AT"))
      std::sscanf(spec, "%d:%lld:%d", &a.rank, &a.step, &a.signal);
    return a;
  }();
  if (rank == ask.rank && step == ask.step && ask.signal > 0) ::raise(ask.signal);
}

}  // namespace cnnbench
