#include "harness/run/fault_injection.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace cnnbench {

namespace {

struct RankStep {
  int rank = -1;
  long long step = -1;
};

RankStep rank_step_from(const char* variable) {
  RankStep t;
  if (const char* spec = std::getenv(variable)) std::sscanf(spec, "%d:%lld", &t.rank, &t.step);
  return t;
}

}  // namespace

void exit_here_if_asked(int rank, int64_t step) {
  static const RankStep exit_at = rank_step_from("CNNBENCH_TEST_EXIT_AT");
  static const RankStep hang_at = rank_step_from("CNNBENCH_TEST_HANG_AT");
  if (rank == exit_at.rank && step == exit_at.step) {
    std::fprintf(stderr, "cnnbench: rank %d stops dead after step %lld (CNNBENCH_TEST_EXIT_AT)\n", rank, exit_at.step);
    std::fflush(stderr);
    std::_Exit(3);
  }
  if (rank == hang_at.rank && step == hang_at.step) {
    std::fprintf(stderr, "cnnbench: rank %d hangs after step %lld (CNNBENCH_TEST_HANG_AT)\n", rank, hang_at.step);
    std::fflush(stderr);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

void slow_step_if_asked(int64_t step) {
  static const char* spec = std::getenv("CNNBENCH_TEST_SLOW_STEP_MS");
  static const long long ms = spec ? std::atoll(spec) : 0LL;
  static const bool alternate = spec && std::strstr(spec, ":alternate") != nullptr;
  static const long long rank = [] {
    const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
    return r ? std::atoll(r) : 0LL;
  }();
  if (ms <= 0 || (alternate && (step + rank) % 2 != 0)) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

void slow_checkpoint_if_asked() {
  static const long long ms = [] {
    const char* spec = std::getenv("CNNBENCH_TEST_SLOW_CHECKPOINT_MS");
    return spec ? std::atoll(spec) : 0LL;
  }();
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace cnnbench
