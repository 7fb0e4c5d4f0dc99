#include "comm/bucket_plan.h"

#include <stdexcept>

namespace cnnbench {

std::vector<Bucket> plan_buckets(const std::vector<TensorExtent>& tensors, size_t threshold_bytes,
                                 size_t element_bytes) {
  std::vector<Bucket> buckets;
  for (int i = 0; i < static_cast<int>(tensors.size()); ++i) {
    const TensorExtent& t = tensors[i];
    if (i > 0 && t.offset != tensors[i - 1].offset + tensors[i - 1].count)
      throw std::invalid_argument("gradient tensors are not contiguous in backward order");
    const bool fits = !buckets.empty() && threshold_bytes > 0 &&
                      (buckets.back().count + t.count) * element_bytes <= threshold_bytes;
    if (fits) {
      buckets.back().count += t.count;
      buckets.back().last_tensor = i;
    } else {
      buckets.push_back({t.offset, t.count, i, i});
    }
  }
  return buckets;
}

}  // namespace cnnbench
