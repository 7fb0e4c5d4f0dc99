#include "harness/fault_injection.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace cnnbench {

void exit_here_if_asked(int rank, int64_t step) {
  static const auto target = [] {
    struct {
      int rank = -1;
      long long step = -1;
    } t;
    if (const char* spec = std::getenv("CNNBENCH_TEST_EXIT_AT")) std::sscanf(spec, "%d:%lld", &t.rank, &t.step);
    return t;
  }();
  if (rank != target.rank || step != target.step) return;
  std::fprintf(stderr, "cnnbench: rank %d stops dead after step %lld (CNNBENCH_TEST_EXIT_AT)\n", rank, target.step);
  std::fflush(stderr);
  std::_Exit(3);
}

void slow_step_if_asked() {
  static const long long ms = [] {
    const char* spec = std::getenv("CNNBENCH_TEST_SLOW_STEP_MS");
    return spec ? std::atoll(spec) : 0LL;
  }();
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace cnnbench
