// kernels/dropout_mask.h — which elements a dropout step keeps: a hash of the plan's seed, the
// node, the step and the element's index, so that every backend (host or device) draws the same
// mask, backward recomputes it instead of storing it, and a run repeats under --seed.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CNNBENCH_HOST_DEVICE __host__ __device__
#else
#define CNNBENCH_HOST_DEVICE
#endif

namespace cnnbench {

// splitmix64's finaliser over the key; the top 24 bits against the rate.
CNNBENCH_HOST_DEVICE inline bool dropout_keeps(uint64_t seed, int node, uint64_t step, uint64_t index, float rate) {
  uint64_t z = seed ^ (static_cast<uint64_t>(node) * 0x9E3779B97F4A7C15ull) ^ (step * 0xD1B54A32D192ED03ull) ^
               (index * 0x94D049BB133111EBull);
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) >= rate * 16777216.0f;  // 2^24
}

}  // namespace cnnbench
