// harness/run/input_bench.h — `cnnbench --mode=input --data_dir=DIR`: the input pipeline alone,
// with no model to feed. Each rank's --num_data_workers threads read, decode and augment the
// training split for --model's input (JPEG folders, TFRecord shards, CIFAR-10, Fashion-MNIST) as
// training would, and the rank takes each batch the moment it is ready: what comes out is the
// most images/sec the pipeline can deliver. Warm-up batches first, then --num_batches timed ones;
// rank 0 prints the rate every --display_every batches and the total, and writes JSON and a CSV
// row (input.csv). Run it under `taskset` to measure a given number of cores.
#pragma once

#include "comm/communicator.h"
#include "harness/cli/config.h"

namespace cnnbench {

void run_input_benchmark(const Config& config, Communicator& comm);

}  // namespace cnnbench
