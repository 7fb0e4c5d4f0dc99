// harness/run/fault_injection.h — for the tests: CNNBENCH_TEST_EXIT_AT=R:S makes rank R die right
// after its step S (counted from 1), as a crashed or killed rank would: no MPI_Finalize, no
// message to the other ranks, exit code 3. CNNBENCH_TEST_HANG_AT=R:S makes rank R hang after
// its step S, alive but never reaching the next collective (as a rank stuck in a loop or in I/O
// would be); S = 0: while setting up, before the plan is built. CNNBENCH_TEST_SLOW_STEP_MS=N makes every timed step
// of every rank N ms longer, as a deliberately slowed build would be (what compare must catch);
// N:alternate makes rank r's steps s with s + r even longer, so that ranks that never wait for
// each other are slow at different steps (the rank is Open MPI's OMPI_COMM_WORLD_RANK).
// CNNBENCH_TEST_SLOW_CHECKPOINT_MS=N makes every checkpoint write N ms longer, as a slow shared
// file system would (what the epochs' training seconds must leave out).
#pragma once

#include <cstdint>

namespace cnnbench {

// Both CNNBENCH_TEST_EXIT_AT and CNNBENCH_TEST_HANG_AT.
void exit_here_if_asked(int rank, int64_t step);
// Sleeps CNNBENCH_TEST_SLOW_STEP_MS milliseconds, if set; called inside each timed step (`step`
// counted from 0).
void slow_step_if_asked(int64_t step);
// Sleeps CNNBENCH_TEST_SLOW_CHECKPOINT_MS milliseconds, if set; called as a checkpoint is written.
void slow_checkpoint_if_asked();

}  // namespace cnnbench
