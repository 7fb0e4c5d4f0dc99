// The fast fp32 host kernels of the CPU backend against the double-precision reference.
#include <limits>

#include "kernels/cpu_ops.h"
#include "kernels/tensor_chunks.h"
#include "kernels/dtype.h"
#include "kernels/ref/batch_norm.h"
#include "kernels/ref/loss.h"
#include "kernels/ref/sgd.h"
#include "kernels/top_k.h"
#include "test_util.h"

namespace cnnbench {
namespace {

using testing::close;
using testing::random_vector;

TEST(CpuOps, SoftmaxCrossEntropyMatchesReference) {
  const int64_t n = 32, classes = 1000;
  auto z = random_vector<float>(n * classes, 1, -8, 8);
  std::vector<int32_t> labels(n);
  for (int64_t i = 0; i < n; ++i) labels[i] = static_cast<int32_t>((i * 37) % classes);
  std::vector<float> dz(z.size()), dz_ref(z.size());
  const double loss = cpu::softmax_cross_entropy(z.data(), labels.data(), dz.data(), n, classes);
  const double loss_ref = ref::softmax_cross_entropy(z.data(), labels.data(), dz_ref.data(), n, classes);
  EXPECT_NEAR(loss, loss_ref, 1e-5 * loss_ref);
  EXPECT_TRUE(close("dlogits", dz, dz_ref, 1e-5));
}

TEST(CpuOps, TopK) {
  const float logits[2 * 6] = {0.1f, 0.9f, 0.3f, 0.2f, 0.0f, 0.5f,  // ranks: 1, 5, 2, 3, 0, 4
                               1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  const int32_t right[2] = {1, 0}, third[2] = {2, 0}, last[2] = {4, 1};
  EXPECT_EQ(count_top_k(logits, right, 2, 6, 1), 2);
  EXPECT_EQ(count_top_k(logits, third, 2, 6, 1), 1);
  EXPECT_EQ(count_top_k(logits, third, 2, 6, 5), 2);
  EXPECT_EQ(count_top_k(logits, last, 2, 6, 5), 1);  // label 4 is the smallest of row 0
  const int32_t bad[2] = {0, 6};
  EXPECT_THROW(count_top_k(logits, bad, 2, 6, 1), std::out_of_range);
  // a diverged network's NaN logits are never right (NaN compares false: without the check
  // every label would count as the largest)
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float diverged[2 * 3] = {nan, nan, nan, 0.5f, nan, 0.1f};
  const int32_t labels[2] = {0, 0};
  EXPECT_EQ(count_top_k(diverged, labels, 2, 3, 1), 0);
  EXPECT_EQ(count_top_k(diverged, labels, 2, 3, 3), 0);
  // all logits equal (a dead network, or one saturated at +inf): ties go to the lower class, so
  // only label 0 is top-1, labels 0-1 top-2; counting ties for the label scored 100%
  const float inf = std::numeric_limits<float>::infinity();
  for (const float v : {0.0f, inf}) {
    const float flat[4 * 3] = {v, v, v, v, v, v, v, v, v, v, v, v};
    const int32_t spread[4] = {0, 1, 2, 1};
    EXPECT_EQ(count_top_k(flat, spread, 4, 3, 1), 1) << v;
    EXPECT_EQ(count_top_k(flat, spread, 4, 3, 2), 3) << v;
    EXPECT_EQ(count_top_k(flat, spread, 4, 3, 3), 4) << v;
  }
}

TEST(CpuOps, SgdMatchesReference) {
  for (bool nesterov : {false, true}) {
    const int64_t count = 1000;
    auto w = random_vector<float>(count, 2), g = random_vector<float>(count, 3), v = random_vector<float>(count, 4);
    auto w_ref = w, v_ref = v;
    for (int step = 0; step < 3; ++step) {
      cpu::sgd_update(w.data(), g.data(), v.data(), count, 0.1f, 0.9f, 1e-4f, nesterov);
      ref::sgd_update(w_ref.data(), g.data(), v_ref.data(), count, 0.1, 0.9, 1e-4, nesterov);
    }
    EXPECT_TRUE(close("weights", w, w_ref, 1e-6));
    EXPECT_TRUE(close("velocity", v, v_ref, 1e-6));
  }
  // one step by hand: v = 0.9 * 1 + (2 + 0.5 * 4) = 4.9;  w = 4 - 0.1 * 4.9 = 3.51
  float w = 4, g = 2, v = 1;
  cpu::sgd_update(&w, &g, &v, 1, 0.1f, 0.9f, 0.5f, false);
  EXPECT_FLOAT_EQ(v, 4.9f);
  EXPECT_FLOAT_EQ(w, 3.51f);
}

// Label smoothing against NumPy (float64, s = 0.1 on 2 x 4 logits): target (1 - s) one-hot + s / 4.
TEST(CpuOps, LabelSmoothingMatchesNumpy) {
  const float logits[8] = {1.0f, 2.0f, 0.5f, -1.0f, 0.3f, -0.2f, 2.5f, 0.0f};
  const int32_t labels[2] = {1, 3};
  const double loss = 1.6494339786692254;
  const double grad[8] = {0.09960390902410059,  -0.15776998120056146, 0.055494457896752766, 0.0026716142797081135,
                          0.03146623879018014,  0.014166871818491134, 0.38429589860071994,  -0.42992900920939126};
  float dz[8];
  double dz_ref[8];
  const double logits_ref[8] = {1.0, 2.0, 0.5, -1.0, 0.3, -0.2, 2.5, 0.0};
  EXPECT_NEAR(cpu::softmax_cross_entropy(logits, labels, dz, 2, 4, 0.1f), loss, 1e-6);
  EXPECT_NEAR(ref::softmax_cross_entropy(logits_ref, labels, dz_ref, 2, 4, 0.1), loss, 1e-7);
  for (int i = 0; i < 8; ++i) {
    EXPECT_NEAR(dz[i], grad[i], 1e-6) << i;
    EXPECT_NEAR(dz_ref[i], grad[i], 1e-7) << i;
  }
  // no smoothing is the plain loss
  EXPECT_NEAR(cpu::softmax_cross_entropy(logits, labels, dz, 2, 4, 0.0f),
              ref::softmax_cross_entropy(logits_ref, labels, dz_ref, 2, 4), 1e-6);
}

// LARS against NumPy: the values below are MLPerf's ResNet-50 LARS formula run in NumPy (float64)
// on these inputs (trust = eta |w| / (|g| + wd |w|), g halved first as the inverse loss scale).
TEST(CpuOps, LarsMatchesNumpyAndReference) {
  struct Case {
    bool adapt, nesterov;
    double w[4], v[4];
  };
  const Case cases[] = {
      {true, false, {0.49093895556225353, -1.0001218449416758, 2.018182706429059, 0.22296947778112677},
       {0.009061044437746444, 0.00012184494167571694, -0.018182706429059284, 0.02703052221887322}},
      {true, true, {0.4917840155682818, -1.000231505389184, 2.0165471422152126, 0.2256420077841409},
       {0.009061044437746444, 0.00012184494167571694, -0.018182706429059284, 0.02703052221887322}},
      {false, false, {0.486, -1.01, 2.033, 0.2205}, {0.014, 0.01, -0.033, 0.0295}},
      {false, true, {0.4824, -1.019, 2.0447, 0.22095}, {0.014, 0.01, -0.033, 0.0295}},
  };
  for (const Case& c : cases) {
    std::vector<float> w = {0.5f, -1.0f, 2.0f, 0.25f}, v = {0.01f, 0.0f, -0.02f, 0.03f};
    const std::vector<float> g = {0.1f, 0.2f, -0.3f, 0.05f};
    std::vector<double> w_ref(w.begin(), w.end()), v_ref(v.begin(), v.end()), g_ref(g.begin(), g.end());
    cpu::lars_update(w.data(), g.data(), v.data(), 4, 0.1f, 0.9f, 1e-4f, 0.001f, c.adapt, c.nesterov, 0.5f);
    ref::lars_update(w_ref.data(), g_ref.data(), v_ref.data(), 4, 0.1, 0.9, 1e-4, 0.001, c.adapt, c.nesterov, 0.5);
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR(w[i], c.w[i], 1e-6) << c.adapt << c.nesterov << " w" << i;
      EXPECT_NEAR(v[i], c.v[i], 1e-6) << c.adapt << c.nesterov << " v" << i;
      EXPECT_NEAR(w_ref[i], c.w[i], 1e-8);  // its inputs are the floats nearest the case's
      EXPECT_NEAR(v_ref[i], c.v[i], 1e-8);
    }
  }
  // large tensors (the parallel norm) against the reference, over three steps
  const int64_t count = 100000;
  auto w = random_vector<float>(count, 7), g = random_vector<float>(count, 8), v = random_vector<float>(count, 9);
  auto w_ref = w, v_ref = v;
  for (int step = 0; step < 3; ++step) {
    cpu::lars_update(w.data(), g.data(), v.data(), count, 0.5f, 0.9f, 5e-5f, 0.001f, true, false);
    ref::lars_update(w_ref.data(), g.data(), v_ref.data(), count, 0.5, 0.9, 5e-5, 0.001, true, false);
  }
  EXPECT_TRUE(close("weights", w, w_ref, 1e-6));
  EXPECT_TRUE(close("velocity", v, v_ref, 1e-6));
  // a zero tensor (or zero gradient) keeps the plain rate: v = 0 + 0.1 x (1 + 0)
  float zero_w = 0, one_g = 1, zero_v = 0;
  cpu::lars_update(&zero_w, &one_g, &zero_v, 1, 0.1f, 0.9f, 0.5f, 0.001f, true, false);
  EXPECT_FLOAT_EQ(zero_v, 0.1f);
}

// The chunks a GPU's LARS launches over: every element of every tensor in exactly one chunk, no
// chunk across a tensor's end or larger than asked; a bucket's range gives its tensors' chunks
// and a range that cuts a tensor is refused.
TEST(TensorChunks, CoverEachTensorAndRespectItsEnds) {
  const std::vector<int64_t> offsets = {0, 64, 128, 2048}, sizes = {10, 64, 1900, 0};
  const std::vector<TensorChunk> chunks = cut_into_chunks(offsets, sizes, 512);
  ASSERT_EQ(chunks.size(), 1u + 1u + 4u);  // 1900 = 3 x 512 + 364; the empty tensor has none
  std::vector<int> covered(2048, 0);
  for (const TensorChunk& c : chunks) {
    EXPECT_LE(c.elements, 512);
    EXPECT_GE(c.start, offsets[c.tensor]);
    EXPECT_LE(c.start + c.elements, offsets[c.tensor] + sizes[c.tensor]);
    for (int64_t i = c.start; i < c.start + c.elements; ++i) ++covered[i];
  }
  for (int64_t i = 0; i < 2048; ++i) {
    const bool in_tensor = i < 10 || (i >= 64 && i < 128) || (i >= 128 && i < 2028);
    ASSERT_EQ(covered[i], in_tensor ? 1 : 0) << i;
  }
  EXPECT_EQ(chunks_within(chunks, 0, 2048), std::make_pair(size_t{0}, size_t{6}));
  EXPECT_EQ(chunks_within(chunks, 64, 64), std::make_pair(size_t{1}, size_t{2}));
  EXPECT_EQ(chunks_within(chunks, 64, 2048 - 64), std::make_pair(size_t{1}, size_t{6}));
  EXPECT_EQ(chunks_within(chunks, 10, 54), std::make_pair(size_t{1}, size_t{1}));  // the gap alone: nothing
  EXPECT_THROW(chunks_within(chunks, 64, 32), std::logic_error);      // half of tensor 1
  EXPECT_THROW(chunks_within(chunks, 128, 1024), std::logic_error);   // two of tensor 2's four chunks
  EXPECT_THROW(chunks_within(chunks, 128, 1000), std::logic_error);   // ends inside a chunk
  EXPECT_THROW(chunks_within(chunks, 5, 100), std::logic_error);      // starts inside tensor 0
  EXPECT_THROW(chunks_within(chunks, 5, 50), std::logic_error);       // the end of tensor 0 and the gap
  EXPECT_THROW(cut_into_chunks({0, 5}, {10, 1}, 4), std::invalid_argument);
  EXPECT_EQ(first_chunks(chunks, 4), (std::vector<int32_t>{0, 1, 2, 6, 6}));
  EXPECT_EQ(first_chunks(cut_into_chunks({0, 8, 8}, {8, 0, 20}, 8), 3), (std::vector<int32_t>{0, 1, 1, 4}));
}

TEST(CpuOps, RunningStatsMatchReference) {
  auto mean = random_vector<float>(16, 5), var = random_vector<float>(16, 6, 0.1, 2.0);
  auto rm = random_vector<float>(16, 7), rv = random_vector<float>(16, 8, 0.5, 1.5);
  auto rm_ref = rm, rv_ref = rv;
  cpu::update_running_stats(mean.data(), var.data(), rm.data(), rv.data(), 16, 0.1f, 50);
  ref::update_running_stats(mean.data(), var.data(), rm_ref.data(), rv_ref.data(), 0.1, ref::BatchNormGeometry{2, 16, 25, 1e-5});
  EXPECT_TRUE(close("running mean", rm, rm_ref, 1e-6));
  EXPECT_TRUE(close("running variance", rv, rv_ref, 1e-6));
}

// The ReLU output y: zeros (masked), -0 (masked), positives; an odd count for the vector tails.
std::vector<float> relu_outputs(size_t n) {
  auto y = random_vector<float>(n, 9, -1.0, 1.0);
  for (size_t i = 0; i < n; ++i) y[i] = i % 7 == 3 ? -0.0f : std::max(y[i], 0.0f);
  return y;
}

TEST(CpuOps, ReluBackwardAccumulate) {
  const size_t n = 100003;
  auto dx = random_vector<float>(n, 10), g = random_vector<float>(n, 11);
  const auto y = relu_outputs(n);
  std::vector<float> expected(n);
  for (size_t i = 0; i < n; ++i) expected[i] = y[i] > 0 ? dx[i] + g[i] : 0.0f;
  cpu::relu_backward_accumulate(dx.data(), g.data(), y.data(), static_cast<int64_t>(n));
  EXPECT_EQ(dx, expected);
}

TEST(CpuOps, ReluBackwardAccumulateBf16) {
  const size_t n = 100003;
  auto to_bf16 = [](const std::vector<float>& v) {
    std::vector<uint16_t> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = f32_to_bf16(v[i]);
    return out;
  };
  auto dx = to_bf16(random_vector<float>(n, 10)), g = to_bf16(random_vector<float>(n, 11));
  const auto y = to_bf16(relu_outputs(n));
  g[5] = f32_to_bf16(std::nanf(""));  // NaN stays NaN where the ReLU passes it
  std::vector<float> expected(n);
  for (size_t i = 0; i < n; ++i)
    expected[i] = bf16_to_f32(y[i]) > 0 ? static_cast<float>(static_cast<double>(bf16_to_f32(dx[i])) + bf16_to_f32(g[i]))
                                        : 0.0f;
  cpu::relu_backward_accumulate_bf16(dx.data(), g.data(), y.data(), static_cast<int64_t>(n));
  const bool passed5 = bf16_to_f32(y[5]) > 0;
  EXPECT_EQ(std::isnan(bf16_to_f32(dx[5])), passed5);
  dx[5] = f32_to_bf16(expected[5] = 0.0f);
  size_t masked = 0;
  for (size_t i = 0; i < n; ++i) {
    const float actual = bf16_to_f32(dx[i]);
    if (expected[i] == 0.0f) {
      masked += actual == 0.0f;
      continue;
    }
    // rounded to nearest bf16: within half a unit in the last place (2^-8 relative)
    ASSERT_LE(std::fabs(actual - expected[i]), std::ldexp(std::fabs(expected[i]), -8)) << "element " << i;
  }
  EXPECT_EQ(masked, static_cast<size_t>(std::count(expected.begin(), expected.end(), 0.0f)));
}

}  // namespace
}  // namespace cnnbench
