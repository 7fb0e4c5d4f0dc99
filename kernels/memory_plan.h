// kernels/memory_plan.h — plan_memory(): byte offsets for a step's buffers from their lifetimes.
//   Lifetime (first and last use on one timeline), PlannedBuffer, MemoryPlan, plan_memory().
// A plan's graph is static, so every buffer's lifetime is known when the plan is compiled. Two
// buffers may share bytes when their lifetimes do not overlap on any of the plan's timelines
// (a training step; an inference step). Buffers are placed largest first, each at the lowest
// offset where it overlaps no placed buffer it shares a time with (TFLite's greedy-by-size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace cnnbench {

// Inclusive [first, last] on one timeline; empty (first > last) when the buffer is not used there.
struct Lifetime {
  int first = std::numeric_limits<int>::max();
  int last = std::numeric_limits<int>::min();
  bool empty() const { return first > last; }
  void use(int time) {
    if (time < first) first = time;
    if (time > last) last = time;
  }
  bool overlaps(const Lifetime& o) const { return !empty() && !o.empty() && first <= o.last && o.first <= last; }
};

struct PlannedBuffer {
  size_t bytes = 0;
  std::vector<Lifetime> lives;  // one per timeline
  bool shared = true;           // false: bytes of its own (held across steps, or unsafe to share)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per buffer, multiples of `alignment`
  size_t total_bytes = 0;       // the arena the plan needs
  size_t unshared_bytes = 0;    // what every buffer in bytes of its own would need
};

MemoryPlan plan_memory(const std::vector<PlannedBuffer>& buffers, size_t alignment = 64);

// For the one-line refusal of a plan that does not fit (CPU host memory, GPU device memory): the
// largest batch whose activations and gradients (`batch_bytes` at `batch`, growing with it) fit in
// `room` bytes (0 where none does), and bytes as "15.2 GiB".
int64_t largest_batch_that_fits(int64_t batch, double batch_bytes, double room);
std::string gib_text(double bytes);

}  // namespace cnnbench
