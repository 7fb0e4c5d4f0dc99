// harness/run/allreduce_bench.h — `cnnbench --mode=allreduce`: the allreduce microbenchmark in the
// form of nccl-tests (sizes 4 KB to 256 MB; time per call, algbw = bytes / time, busbw = algbw x
// 2(n-1)/n; a seeded data check with wrong elements counted), then the gradient exchange of
// --model as training runs it: one allreduce of all gradient bytes, the fused buckets at
// --fusion_threshold_mb, and one allreduce per tensor. Rank 0 prints and writes JSON and CSV.
#pragma once

#include "comm/communicator.h"
#include "harness/cli/config.h"

namespace cnnbench {

void run_allreduce_benchmark(const Config& config, Communicator& comm);

// Expected sum over `ranks` of the value rank r puts at element i (exact in fp32, fp16 and,
// up to 56 ranks, bf16), and that value.
float allreduce_check_value(int rank, size_t i);
float allreduce_expected_sum(int ranks, size_t i);

}  // namespace cnnbench
