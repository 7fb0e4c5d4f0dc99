// main() for GoogleTest suites run under mpiexec: MPI is initialized once, every rank runs
// every test (collectives need all ranks), and only rank 0 prints. A failure on any rank
// makes that rank exit non-zero, which fails the mpiexec run and so the ctest.
#include <gtest/gtest.h>
#include <malloc.h>
#include <mpi.h>

#include "comm/communicator.h"

int main(int argc, char** argv) {
  mallopt(M_ARENA_MAX, 1);
  ::testing::InitGoogleTest(&argc, argv);
  cnnbench::init_mpi(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int result = RUN_ALL_TESTS();
  int worst = result;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  cnnbench::finalize_mpi();
  return worst;
}
