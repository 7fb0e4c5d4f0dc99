#include "harness/run/checkpoint_trigger.h"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace cnnbench {
namespace {

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGUSR1};
constexpr size_t kCount = sizeof(kStopSignals) / sizeof(kStopSignals[0]);

// the first stop signal received; lock-free, so that the handler may set it on any thread
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

struct sigaction g_before[kCount];
bool g_installed[kCount] = {};

// The first signal is noted, and every stop signal goes back to what it did before cnnbench
// (sigaction is async-signal-safe): a second one, of any kind, ends the run at once.
void note_signal(int signal) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signal);
  for (size_t i = 0; i < kCount; ++i)
    if (g_installed[i]) sigaction(kStopSignals[i], &g_before[i], nullptr);
}

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
  action.sa_flags = SA_RESTART;  // a read or write in flight goes on
  sigfillset(&action.sa_mask);   // the handler runs alone
  for (size_t i = 0; i < kCount; ++i) {
    // a signal ignored before (SIGINT in a shell's background job) stays ignored
    g_installed[i] = sigaction(kStopSignals[i], nullptr, &g_before[i]) == 0 && g_before[i].sa_handler != SIG_IGN;
    if (g_installed[i]) sigaction(kStopSignals[i], &action, nullptr);
  }
}

CheckpointTrigger::~CheckpointTrigger() {
  for (size_t i = 0; i < kCount; ++i)
    if (g_installed[i]) sigaction(kStopSignals[i], &g_before[i], nullptr);
  for (bool& installed : g_installed) installed = false;
}

bool CheckpointTrigger::stop_agreed() {
  double asked = static_cast<double>(g_signal.load());
  if (comm_.size() > 1) comm_.allreduce_max(&asked, 1);
  if (asked > 0) stop_signal_ = static_cast<int>(asked);
  return asked > 0;
}

CheckpointTrigger::Action CheckpointTrigger::after_step(int64_t steps_done) {
  // [0]: a signal's number; [1]: rank 0's clock says a checkpoint is due
  double asked[2] = {static_cast<double>(g_signal.load()), 0};
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
