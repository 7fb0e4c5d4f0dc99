#include "comm/bucket_plan.h"

#include <algorithm>
#include <stdexcept>

namespace cnnbench {

std::vector<Bucket> plan_buckets(const std::vector<TensorExtent>& tensors, const BucketSizes& sizes,
                                 size_t element_bytes) {
  const int n = static_cast<int>(tensors.size());
  for (int i = 1; i < n; ++i)
    if (tensors[i].offset != tensors[i - 1].offset + tensors[i - 1].count)
      throw std::invalid_argument("gradient tensors are not contiguous in backward order");
  const bool from_input = sizes.fusion_bytes > 0 && sizes.first_layers_bytes > 0;
  std::vector<Bucket> buckets;
  size_t limit = from_input ? std::min(sizes.first_layers_bytes, sizes.fusion_bytes) : sizes.fusion_bytes;
  for (int k = 0; k < n; ++k) {
    const int i = from_input ? n - 1 - k : k;  // from the input side: forward order
    const TensorExtent& t = tensors[i];
    const bool fits = !buckets.empty() && limit > 0 && (buckets.back().count + t.count) * element_bytes <= limit;
    if (fits && from_input) {
      buckets.back().offset = t.offset;
      buckets.back().count += t.count;
      buckets.back().first_tensor = i;
    } else if (fits) {
      buckets.back().count += t.count;
      buckets.back().last_tensor = i;
    } else {
      if (from_input && !buckets.empty()) limit = std::min(2 * limit, sizes.fusion_bytes);
      buckets.push_back({t.offset, t.count, i, i});
    }
  }
  if (from_input) std::reverse(buckets.begin(), buckets.end());
  return buckets;
}

}  // namespace cnnbench
