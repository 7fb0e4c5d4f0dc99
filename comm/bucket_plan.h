// comm/bucket_plan.h — tensor fusion: gradient tensors, contiguous in the gradient arena in
// the order backward produces them, are grouped into buckets of at most the fusion threshold
// (Horovod's rule; all fp32). A tensor larger than the threshold is a bucket of its own;
// threshold 0 gives one bucket per tensor. Planned once: the ranks run the same graph, so they
// agree on the buckets without negotiating.
//
// --first_layers_bucket_mb: the buckets are planned from the network's input side instead, the
// first (the one the next forward pass needs first) at most that size and each next one twice
// the one before, up to the threshold. With the updates in the next forward, backward's last
// bucket then no longer holds the first layers behind megabytes of later ones: forward starts
// once a small bucket is back and computes while the larger ones travel.
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

struct BucketSizes {
  BucketSizes(size_t fusion = 0, size_t first_layers = 0) : fusion_bytes(fusion), first_layers_bytes(first_layers) {}
  size_t fusion_bytes;        // 0: one bucket per tensor
  size_t first_layers_bytes;  // 0: buckets filled in backward order
};

// Buckets in backward order. Throws std::invalid_argument if the tensors are not contiguous and
// in order.
std::vector<Bucket> plan_buckets(const std::vector<TensorExtent>& tensors, const BucketSizes& sizes,
                                 size_t element_bytes = 4);

}  // namespace cnnbench
