// kernels/memory_plan.cc — greedy-by-size placement of buffers with known lifetimes.
#include "kernels/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace cnnbench {

namespace {

size_t round_up(size_t bytes, size_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

bool live_together(const PlannedBuffer& a, const PlannedBuffer& b) {
  if (!a.shared || !b.shared) return true;
  const size_t timelines = std::min(a.lives.size(), b.lives.size());
  for (size_t t = 0; t < timelines; ++t)
    if (a.lives[t].overlaps(b.lives[t])) return true;
  return false;
}

}  // namespace

MemoryPlan plan_memory(const std::vector<PlannedBuffer>& buffers, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw std::invalid_argument("plan_memory: alignment must be a power of two");
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // largest first; equal sizes in the order they were asked for, so the plan is deterministic
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });

  std::vector<size_t> placed;  // indices already given an offset
  std::vector<std::pair<size_t, size_t>> taken;  // [begin, end) of the placed buffers live with this one
  for (size_t i : order) {
    const size_t bytes = round_up(buffers[i].bytes, alignment);
    plan.unshared_bytes += bytes;
    taken.clear();
    for (size_t j : placed)
      if (live_together(buffers[i], buffers[j]))
        taken.push_back({plan.offsets[j], plan.offsets[j] + round_up(buffers[j].bytes, alignment)});
    std::sort(taken.begin(), taken.end());
    size_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (begin >= offset + bytes) break;  // the gap before this one fits
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.total_bytes = std::max(plan.total_bytes, offset + bytes);
    placed.push_back(i);
  }
  return plan;
}

int64_t largest_batch_that_fits(int64_t batch, double batch_bytes, double room) {
  if (batch <= 0 || batch_bytes <= 0 || room <= 0) return 0;
  return static_cast<int64_t>(room / (batch_bytes / static_cast<double>(batch)));
}

std::string gib_text(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1 << 30));
  return text;
}

}  // namespace cnnbench
