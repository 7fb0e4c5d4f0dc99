// The compute threads: configure_threads() pins one thread a CPU where the process was given
// exactly that many, and available_cpus() still says what the process was given afterwards (the
// calling thread, the team's first, is pinned to one CPU: its own mask says 1).
#include <gtest/gtest.h>
#include <sched.h>

#include "kernels/threads.h"

namespace cnnbench {
namespace {

TEST(Threads, PinningKeepsTheCpusTheProcessWasGiven) {
  const int given = available_cpus();
  ASSERT_GE(given, 1);
  EXPECT_EQ(configure_threads(0), given) << "one thread a CPU by default";
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  EXPECT_EQ(CPU_COUNT(&mine), 1) << "the calling thread is pinned to one CPU";
  EXPECT_EQ(available_cpus(), given) << "what the process was given, not the pinned thread's one CPU";
  EXPECT_EQ(compute_thread_ids().size(), static_cast<size_t>(given));
}

}  // namespace
}  // namespace cnnbench
