// Allreduce correctness under mpiexec (2, 3 and 4 ranks): each backend, flat and hierarchical,
// x wire type against the closed-form sum of seeded data, on sizes that do not divide evenly; the
// gradient reducer for every fusion threshold and compression; broadcast and scalar reductions.
// All ranks share one host here, so hierarchical sums within the host only (its shares cross no
// host); tests/test_netns_cluster.sh runs it across 2 hosts of 2 ranks.
#include <cmath>
#include <map>
#include <numeric>

#include "comm/communicator.h"
#include "comm/gradient_reducer.h"
#include "comm/wire_cast.h"
#include "harness/run/allreduce_bench.h"
#include "test_util.h"

namespace cnnbench {
namespace {

class Backends : public ::testing::TestWithParam<std::string> {
 protected:
  // "mpi", "gloo", "mpi_hierarchical", "gloo_hierarchical"
  static Communicator& comm(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Communicator>> made;
    auto& c = made[name];
    const size_t underscore = name.find('_');
    if (!c) c = make_communicator(name.substr(0, underscore), 300, underscore != std::string::npos);
    return *c;
  }
};

TEST_P(Backends, AllreduceMatchesClosedForm) {
  Communicator& c = comm(GetParam());
  for (WireType wire : {WireType::f32, WireType::f16, WireType::bf16})
    for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, size_t{12345}, (size_t{1} << 20) + 3}) {
      std::vector<float> values(count);
      for (size_t i = 0; i < count; ++i) values[i] = allreduce_check_value(c.rank(), i);
      std::vector<uint16_t> wire16(count);
      void* data = values.data();
      if (wire != WireType::f32) {
        cast_to_wire(values.data(), wire16.data(), count, wire);
        data = wire16.data();
      }
      c.allreduce_sum(data, count, wire);
      if (wire != WireType::f32) cast_from_wire(wire16.data(), values.data(), count, wire, 1.0f);
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i) wrong += values[i] != allreduce_expected_sum(c.size(), i);
      EXPECT_EQ(wrong, 0u) << GetParam() << " " << wire_type_name(wire) << " count " << count;
    }
}

// The check data has no short period: shifted by any 1..8192 elements it differs (as i % 4 did
// not for shifts of 4, 8, ...), so a sum written at the wrong offset counts as wrong; its values
// stay 1-4 (+1 on odd ranks), exact in every wire type.
TEST(AllreduceCheckData, AShiftedBufferDiffers) {
  const size_t n = 1 << 16;
  std::vector<float> v(n + 8192);
  for (size_t i = 0; i < v.size(); ++i) v[i] = allreduce_check_value(0, i);
  for (size_t shift = 1; shift <= 8192; ++shift) {
    size_t differing = 0;
    for (size_t i = 0; i < n; ++i) differing += v[i] != v[i + shift];
    ASSERT_GT(differing, n / 2) << "shift " << shift;
  }
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(v[i] >= 1 && v[i] <= 4 && v[i] == std::floor(v[i])) << i << " " << v[i];
    ASSERT_EQ(allreduce_check_value(3, i), v[i] + 1);
    ASSERT_EQ(allreduce_expected_sum(3, i), 3 * v[i] + 1);
  }
}

TEST_P(Backends, ReducerAveragesEveryBucketLayout) {
  Communicator& c = comm(GetParam());
  // uneven tensor sizes, contiguous in "backward order"
  std::vector<TensorExtent> tensors;
  size_t offset = 0;
  for (size_t n : {1000, 3, 50000, 17, 262144, 9, 4096, 1}) {
    tensors.push_back({offset, n});
    offset += n;
  }
  for (double threshold_kb : {0.0, 4.0, 100.0, 1024.0, 1e9})
    for (WireType wire : {WireType::f32, WireType::f16, WireType::bf16}) {
      std::vector<float> grads(offset);
      GradientReducer reducer(c, grads.data(), tensors, static_cast<size_t>(threshold_kb * 1024), wire);
      for (int step = 0; step < 2; ++step) {
        for (size_t i = 0; i < offset; ++i) grads[i] = allreduce_check_value(c.rank(), i) / c.size();
        for (int t = 0; t < static_cast<int>(tensors.size()); ++t) reducer.tensor_ready(t);
        size_t covered = 0;
        reducer.wait_for_buckets([&](const Bucket& b) {
          EXPECT_EQ(b.offset, covered);
          covered += b.count;
        });
        EXPECT_EQ(covered, offset);
        size_t wrong = 0;
        const double tolerance = wire == WireType::f32 ? 1e-6 : wire == WireType::f16 ? 3e-3 : 2.4e-2;
        for (size_t i = 0; i < offset; ++i) {
          const double expected = allreduce_expected_sum(c.size(), i) / c.size();
          wrong += !(std::fabs(grads[i] - expected) <= tolerance * expected);
        }
        EXPECT_EQ(wrong, 0u) << GetParam() << " threshold " << threshold_kb << " KiB, " << wire_type_name(wire)
                             << ", " << reducer.buckets().size() << " buckets";
      }
      if (threshold_kb == 0) {
        EXPECT_EQ(reducer.buckets().size(), tensors.size());
      }
      if (threshold_kb == 1e9) {
        EXPECT_EQ(reducer.buckets().size(), 1u);
      }
    }
}

// PowerSGD through the reducer: the warm-up step is the exact average; after it, gradients
// whose sum over ranks has rank 1 (each rank a different multiple of u v^T) come back exactly
// at rank 1, although each rank's own matrix differs; vectors always come back exact. The
// steps repeat, so the error feedback of one step must not spoil the next.
TEST_P(Backends, PowerSgdReducerIsExactOnRankOneSums) {
  Communicator& c = comm(GetParam());
  std::vector<TensorExtent> tensors = {{0, 64 * 36, 64, 36}, {64 * 36, 64}, {64 * 36 + 64, 50 * 20, 50, 20}};
  const size_t total = 64 * 36 + 64 + 50 * 20;
  auto local = [&](size_t i) {  // this rank's gradient, already divided by the ranks
    const double scale = (1.0 + c.rank()) / c.size();
    if (i >= 64 * 36 && i < 64 * 36 + 64) return static_cast<float>(scale * std::sin(0.1 * i));
    const size_t j = i < 64 * 36 ? i : i - 64 * 36 - 64, cols = i < 64 * 36 ? 36 : 20;
    return static_cast<float>(scale * std::cos(0.3 * (j / cols) + 1) * (1.0 + (j % cols)) * 0.01);
  };
  auto expected = [&](size_t i) {  // the sum of local() over ranks: f(i) (1 + 2 + ... + ranks) / ranks
    const double f = static_cast<double>(local(i)) / ((1.0 + c.rank()) / c.size());
    return f * (c.size() + 1) / 2.0;
  };
  PowerSgdSettings settings;
  settings.rank = 1;
  settings.warmup_steps = 1;
  for (size_t threshold : {size_t{0}, size_t{1} << 30}) {
    std::vector<float> grads(total);
    GradientReducer reducer(c, grads.data(), tensors, threshold, WireType::f32, &settings);
    ASSERT_NE(reducer.powersgd(), nullptr);
    EXPECT_EQ(reducer.powersgd()->compressed_tensors(), 2u);
    EXPECT_LT(reducer.powersgd()->wire_elements(), total / 10);
    for (int step = 0; step < 4; ++step) {
      for (size_t i = 0; i < total; ++i) grads[i] = local(i);
      for (int t = 0; t < static_cast<int>(tensors.size()); ++t) reducer.tensor_ready(t);
      reducer.wait_for_buckets(nullptr);
      double worst = 0;
      for (size_t i = 0; i < total; ++i) worst = std::max(worst, std::fabs(grads[i] - expected(i)));
      EXPECT_LT(worst, 2e-6) << GetParam() << " step " << step << ", threshold " << threshold;
    }
  }
  std::vector<float> grads(total);
  EXPECT_THROW(GradientReducer(c, grads.data(), tensors, 0, WireType::f16, &settings), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Comm, Backends, ::testing::Values("mpi", "gloo", "mpi_hierarchical", "gloo_hierarchical"));

TEST(ControlPlane, BroadcastScalarsAndGather) {
  auto c = make_communicator("mpi");
  std::vector<float> data(1000, static_cast<float>(c->rank()));
  if (c->rank() == 0) std::iota(data.begin(), data.end(), 0.0f);
  c->broadcast(data.data(), data.size() * sizeof(float), 0);
  EXPECT_EQ(data[999], 999.0f);
  double v[2] = {static_cast<double>(c->rank()), static_cast<double>(c->rank())};
  c->allreduce_max(v, 1);
  c->allreduce_sum(v + 1, 1);
  EXPECT_EQ(v[0], c->size() - 1);
  EXPECT_EQ(v[1], c->size() * (c->size() - 1) / 2.0);
  const auto names = c->gather_strings("rank" + std::to_string(c->rank()));
  ASSERT_EQ(static_cast<int>(names.size()), c->size());
  EXPECT_EQ(names.back(), "rank" + std::to_string(c->size() - 1));
  EXPECT_EQ(c->hosts(), 1);
}

}  // namespace
}  // namespace cnnbench
