// comm/bucket_plan.h — tensor fusion: gradient tensors, contiguous in the gradient arena in
// the order backward produces them, are grouped into buckets of at most the fusion threshold
// (Horovod's rule; all fp32). A tensor larger than the threshold is a bucket of its own;
// threshold 0 gives one bucket per tensor. Planned once: the ranks run the same graph, so they
// agree on the buckets without negotiating.
#pragma once

#include <cstddef>
#include <vector>

namespace cnnbench {

struct TensorExtent {
  size_t offset = 0, count = 0;  // in elements of the gradient arena
  // The tensor as a matrix, its first dimension by the rest (PowerSGD); rows 0: a vector.
  size_t rows = 0, cols = 0;
};

struct Bucket {
  size_t offset = 0, count = 0;
  int first_tensor = 0, last_tensor = 0;  // inclusive
};

// Throws std::invalid_argument if the tensors are not contiguous and in order.
std::vector<Bucket> plan_buckets(const std::vector<TensorExtent>& tensors, size_t threshold_bytes,
                                 size_t element_bytes = 4);

}  // namespace cnnbench
