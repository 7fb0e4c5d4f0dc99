// harness/cli/limits.h — the ranges of the numeric settings. A leaf: the flag table checks and
// names them, result readers check what a result file holds against them.
#pragma once

#include <cstdint>

namespace cnnbench {

// The ranges of the numeric settings (each flag's --help names its own). Out of range is a
// ConfigError: the upper ends keep every product and conversion further on inside its type
// (steps x global batch in int64, MiB to bytes, seconds to int) and refuse what cannot run
// (100000 OpenMP threads crash libgomp; 1000 input workers would each hold batches).
inline constexpr int64_t max_batch_size = 65536;          // images per rank per step
inline constexpr int64_t max_global_batch = 1 << 24;      // images per step over all ranks
inline constexpr int64_t max_steps = 10'000'000;          // timed steps, warm-up steps, display_every
inline constexpr double max_epochs = 10'000;              // num_epochs and the epoch counts of schedules
inline constexpr int64_t max_threads = 1024;              // num_intra_threads
inline constexpr int64_t max_data_workers = 64;           // num_data_workers
inline constexpr int64_t max_shuffle_buffer = 1'000'000;  // datasets_shuffle_buffer_size
inline constexpr int64_t max_repeats = 1000;              // repeats
inline constexpr double max_learning_rate = 1000;         // init_learning_rate and schedule rates
inline constexpr double max_loss_scale = 16777216;        // 2^24, as apex's max_loss_scale
inline constexpr double max_fusion_threshold_mb = 4096;   // fusion_threshold_mb
inline constexpr double max_timeout_sec = 86400;          // collective_timeout_sec
inline constexpr double min_timeout_sec = 1;              // below, a busy step would look like a dead rank

}  // namespace cnnbench
