// Tensor fusion's bucket plan: filled in backward order up to the threshold (a larger tensor
// alone, threshold 0 one bucket per tensor), or with --first_layers_bucket_mb planned from the
// input side with the first layers' bucket small and each next one twice as large.
#include <gtest/gtest.h>

#include <stdexcept>

#include "comm/bucket_plan.h"

namespace cnnbench {
namespace {

// Tensors of these sizes in backward order (the last is the network's first layer), contiguous.
std::vector<TensorExtent> tensors_of(const std::vector<size_t>& counts) {
  std::vector<TensorExtent> out;
  size_t offset = 0;
  for (size_t count : counts) {
    out.push_back({offset, count});
    offset += count;
  }
  return out;
}

// Each bucket as its (first tensor, last tensor), checking that they tile the arena in order.
std::vector<std::pair<int, int>> layout(const std::vector<TensorExtent>& tensors, const std::vector<Bucket>& buckets) {
  std::vector<std::pair<int, int>> out;
  size_t offset = 0;
  int next = 0;
  for (const Bucket& b : buckets) {
    EXPECT_EQ(b.offset, offset);
    EXPECT_EQ(b.first_tensor, next);
    EXPECT_EQ(b.offset, tensors[b.first_tensor].offset);
    EXPECT_EQ(b.offset + b.count, tensors[b.last_tensor].offset + tensors[b.last_tensor].count);
    offset += b.count;
    next = b.last_tensor + 1;
    out.emplace_back(b.first_tensor, b.last_tensor);
  }
  EXPECT_EQ(next, static_cast<int>(tensors.size()));
  return out;
}

using Layout = std::vector<std::pair<int, int>>;

const std::vector<TensorExtent> net = tensors_of({30, 30, 8, 8, 4, 2, 1, 1});  // one byte an element below

TEST(BucketPlan, FillsInBackwardOrderUpToTheThreshold) {
  EXPECT_EQ(layout(net, plan_buckets(net, 32, 1)), (Layout{{0, 0}, {1, 1}, {2, 7}}));
  EXPECT_EQ(layout(net, plan_buckets(net, 0, 1)), (Layout{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 6}, {7, 7}}));
  EXPECT_EQ(layout(net, plan_buckets(net, 1000, 1)), (Layout{{0, 7}}));
  EXPECT_EQ(layout(net, plan_buckets(net, 16, 1)), (Layout{{0, 0}, {1, 1}, {2, 3}, {4, 7}}));  // 30 > 16: alone
}

TEST(BucketPlan, FirstLayersBucketIsSmallAndTheNextOnesDouble) {
  // from the input: {7, 6} within 2, {5} within 4 (5 and 4 would be 6), {4} within 8, {3, 2} within
  // 16, then 30 and 30 each within 32
  EXPECT_EQ(layout(net, plan_buckets(net, {32, 2}, 1)), (Layout{{0, 0}, {1, 1}, {2, 3}, {4, 4}, {5, 5}, {6, 7}}));
  // the doubling stops at the threshold, 8: {3} and {2} each alone
  EXPECT_EQ(layout(net, plan_buckets(net, {8, 2}, 1)), (Layout{{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 7}}));
  // a first bucket as large as the threshold: the threshold throughout, counted from the input
  EXPECT_EQ(layout(net, plan_buckets(net, {32, 64}, 1)), (Layout{{0, 0}, {1, 1}, {2, 7}}));
  EXPECT_EQ(layout(net, plan_buckets(net, {60, 60}, 1)), (Layout{{0, 0}, {1, 7}}));  // backward order: {0, 1}, {2..7}
  // in elements of 4 bytes: 8 bytes first is two elements
  EXPECT_EQ(layout(net, plan_buckets(net, {128, 8})), (Layout{{0, 0}, {1, 1}, {2, 3}, {4, 4}, {5, 5}, {6, 7}}));
}

TEST(BucketPlan, WithoutAThresholdEveryTensorIsABucket) {
  EXPECT_EQ(plan_buckets(net, {0, 2}, 1).size(), net.size());
}

TEST(BucketPlan, RefusesTensorsThatAreNotContiguous) {
  std::vector<TensorExtent> gap = tensors_of({4, 4});
  gap[1].offset += 1;
  EXPECT_THROW(plan_buckets(gap, 16, 1), std::invalid_argument);
  EXPECT_THROW(plan_buckets(gap, {16, 4}, 1), std::invalid_argument);
}

}  // namespace
}  // namespace cnnbench
