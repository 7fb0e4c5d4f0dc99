// The cuDNN graphs with a ReLU beside the convolution (kernels/cuda/cudnn_graph.h, fp16 NHWC,
// compute capability 8.0 and later), each of the first four engines cuDNN's heuristics offer for
// them (the ones the timed search weighs), against sums on the host in double from the same fp16 values:
//   forward with bias_relu:       y = relu(conv(x, w) + bias);
//   data gradient with relu_mask: dx = (the ReLU's output > 0) ? conv_backward_data(dy, w) : 0.
// The ReLU's output is given here, so no element can fall on the other side of its boundary by
// rounding: what a plan-level comparison cannot tell apart from a wrong mask
// (scripts/emulate_relu_masks.py) is checked exactly. Skipped where no GPU is visible.
#include <gtest/gtest.h>
#include <cudnn.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "gpu_skip.h"
#include "kernels/cuda/cudnn_graph.h"
#include "test_util.h"

namespace cnnbench {
namespace {

using cuda::FusedConv;
using cuda::FusedConvSpec;

struct Shape {
  int64_t n, c, h, w, k, r, pad;  // stride 1, square filter; output h x w where pad = r / 2
  bool vgg = false;               // a shape VGG16's plan fuses: cuDNN must build a graph for it
  int64_t p() const { return h + 2 * pad - r + 1; }
  int64_t q() const { return w + 2 * pad - r + 1; }
};

const Shape kShapes[] = {
    {2, 64, 14, 14, 64, 3, 1, true},  // VGG16's conv4/conv5 sizes, channels cut
    {2, 16, 8, 8, 16, 3, 1, true},    // the op cases' vgg_convs_relu_conv
    {2, 16, 9, 7, 32, 1, 0},    // 1x1, odd map
    {1, 8, 12, 12, 16, 3, 1},   // 8 channels: one 16-byte vector a pixel
};

FusedConvSpec spec_of(const Shape& s, FusedConvSpec::Direction d) {
  FusedConvSpec spec;
  spec.direction = d;
  spec.n = s.n, spec.c = s.c, spec.h = s.h, spec.w = s.w, spec.k = s.k, spec.r = s.r, spec.s = s.r;
  spec.p = s.p(), spec.q = s.q(), spec.pad_h = s.pad, spec.pad_w = s.pad, spec.stride = 1;
  return spec;
}

std::vector<float> half_values(size_t n, uint64_t seed, float scale) {
  auto v = random_values(n, seed, scale);
  for (float& x : v) x = round_to(DType::f16, x);
  return v;
}

// y (n, p, q, k) = sum over the window of x (n, h, w, c) * w (k, r, r, c), in double
std::vector<double> host_conv(const Shape& s, const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<double> y(static_cast<size_t>(s.n * s.p() * s.q() * s.k), 0.0);
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oy = 0; oy < s.p(); ++oy)
      for (int64_t ox = 0; ox < s.q(); ++ox)
        for (int64_t k = 0; k < s.k; ++k) {
          double acc = 0;
          for (int64_t i = 0; i < s.r; ++i)
            for (int64_t j = 0; j < s.r; ++j) {
              const int64_t iy = oy + i - s.pad, ix = ox + j - s.pad;
              if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
              const float* xp = &x[((b * s.h + iy) * s.w + ix) * s.c];
              const float* wp = &w[((k * s.r + i) * s.r + j) * s.c];
              for (int64_t c = 0; c < s.c; ++c) acc += static_cast<double>(xp[c]) * wp[c];
            }
          y[((b * s.p() + oy) * s.q() + ox) * s.k + k] = acc;
        }
  return y;
}

// dx (n, h, w, c) = the adjoint of host_conv() applied to dy (n, p, q, k)
std::vector<double> host_data_gradient(const Shape& s, const std::vector<float>& dy, const std::vector<float>& w) {
  std::vector<double> dx(static_cast<size_t>(s.n * s.h * s.w * s.c), 0.0);
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t oy = 0; oy < s.p(); ++oy)
      for (int64_t ox = 0; ox < s.q(); ++ox)
        for (int64_t k = 0; k < s.k; ++k) {
          const double g = dy[((b * s.p() + oy) * s.q() + ox) * s.k + k];
          for (int64_t i = 0; i < s.r; ++i)
            for (int64_t j = 0; j < s.r; ++j) {
              const int64_t iy = oy + i - s.pad, ix = ox + j - s.pad;
              if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
              double* dp = &dx[((b * s.h + iy) * s.w + ix) * s.c];
              const float* wp = &w[((k * s.r + i) * s.r + j) * s.c];
              for (int64_t c = 0; c < s.c; ++c) dp[c] += g * wp[c];
            }
        }
  return dx;
}

std::vector<float> as_floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }

class CudnnHandle {
 public:
  CudnnHandle() { ok_ = cudnnCreate(&h_) == CUDNN_STATUS_SUCCESS; }
  ~CudnnHandle() {
    if (ok_) cudnnDestroy(h_);
  }
  bool ok() const { return ok_; }
  cudnnHandle_t get() const { return h_; }

 private:
  cudnnHandle_t h_ = nullptr;
  bool ok_ = false;
};

// Every engine of `spec` this device builds, up to the four the plan's timed search weighs, each
// run once on `p` into an output of stale values. An engine that fails to run is a failure named
// by its engine, and the others still run (the plan's search skips such an engine). A shape the
// plan never fuses may get no engine from cuDNN: that is said, not failed.
template <typename Check>
void for_each_engine(const Shape& shape, const FusedConvSpec& spec, FusedConv::Pointers p, FusedConv::Role out,
                     size_t out_elements, const Check& check) {
  CudnnHandle handle;
  ASSERT_TRUE(handle.ok());
  std::string why;
  const auto engines = FusedConv::build_all(handle.get(), spec, 4, 10.0, &why);
  if (engines.empty() && !shape.vgg) {
    std::printf("%s: cuDNN builds no engine (%s); no plan fuses this shape\n", spec.key().c_str(), why.c_str());
    return;
  }
  ASSERT_FALSE(engines.empty()) << spec.key() << ": " << why;
  for (const auto& engine : engines) {
    SCOPED_TRACE(spec.key() + " " + engine->engine());
    cuda::DeviceBuffer workspace(std::max<size_t>(engine->workspace_bytes(), 256));
    cuda::DeviceBuffer result = upload_as(DType::f16, std::vector<float>(out_elements, 7.0f), 0);  // stale values
    p[out] = result.data();
    cuda::FusedConvCall call;
    call.conv = engine;
    try {
      call.run(handle.get(), p, workspace.data());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "engine " << engine->engine() << " failed to run: " << e.what();
      continue;
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    check(download_as(DType::f16, result, out_elements, 0));
  }
}

// y = relu(conv + bias): within fp16's rounding of the exact value in relative L2, exactly 0 where
// the exact value is clearly negative, positive where it is clearly positive. Also printed: how
// far y is from the conv's sum rounded to fp16 before the bias is added (the plain way's rounding).
TEST(CudaReluGraphs, ForwardAddsTheBiasAndAppliesTheRelu) {
  SKIP_WITHOUT_GPU();
  if (cuda::compute_capability() < 80) GTEST_SKIP() << "cuDNN fuses an output bias and ReLU from compute capability 8.0";
  for (const Shape& s : kShapes) {
    const auto x = half_values(s.n * s.h * s.w * s.c, 1, 1.0f);
    const auto w = half_values(s.k * s.r * s.r * s.c, 2, 1.0f / std::sqrt(static_cast<float>(s.c * s.r * s.r)));
    const auto bias = half_values(s.k, 3, 0.5f);
    const auto conv = host_conv(s, x, w);
    std::vector<double> exact(conv.size()), rounded_first(conv.size());
    double rms = 0;
    for (size_t i = 0; i < conv.size(); ++i) {
      const double b = bias[i % s.k];
      exact[i] = std::max(0.0, conv[i] + b);
      rounded_first[i] = std::max(0.0, static_cast<double>(round_to(DType::f16, static_cast<float>(conv[i]))) + b);
      rms += (conv[i] + b) * (conv[i] + b);
    }
    rms = std::sqrt(rms / static_cast<double>(conv.size()));
    const cuda::DeviceBuffer xd = upload_as(DType::f16, x, 0), wd = upload_as(DType::f16, w, 0),
                             bd = upload_as(DType::f16, bias, 0);
    FusedConv::Pointers p{};
    p[FusedConv::x] = xd.data();
    p[FusedConv::w] = wd.data();
    p[FusedConv::out_bias] = bd.data();
    FusedConvSpec spec = spec_of(s, FusedConvSpec::forward);
    spec.bias_relu = true;
    for_each_engine(s, spec, p, FusedConv::y, conv.size(), [&](const std::vector<float>& y) {
      EXPECT_TRUE(testing::close_l2("y", y, as_floats(exact), 2e-3));
      int64_t wrong_side = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        const double pre = conv[i] + bias[i % s.k];
        if (pre < -1e-2 * rms && y[i] != 0.0f) ++wrong_side;
        if (pre > 1e-2 * rms && !(y[i] > 0.0f)) ++wrong_side;
      }
      EXPECT_EQ(wrong_side, 0);
      std::printf("%s: relative L2 from exact %.2e, from the sum rounded before the bias %.2e\n", spec.key().c_str(),
                  testing::relative_l2(y, as_floats(exact)), testing::relative_l2(y, as_floats(rounded_first)));
    });
  }
}

// dx = dgrad(dy, w) where the ReLU's output is positive, exactly 0 elsewhere.
TEST(CudaReluGraphs, DataGradientAppliesTheReluMask) {
  SKIP_WITHOUT_GPU();
  if (cuda::compute_capability() < 80) GTEST_SKIP() << "cuDNN fuses a ReLU's backward into a data gradient from 8.0";
  for (const Shape& s : kShapes) {
    const auto dy = half_values(s.n * s.p() * s.q() * s.k, 4, 1.0f);
    const auto w = half_values(s.k * s.r * s.r * s.c, 5, 1.0f / std::sqrt(static_cast<float>(s.k * s.r * s.r)));
    auto relu_out = half_values(s.n * s.h * s.w * s.c, 6, 1.0f);
    for (float& v : relu_out) v = std::max(v, 0.0f);  // about half zeros, as a ReLU leaves them
    const auto unmasked = host_data_gradient(s, dy, w);
    std::vector<double> want(unmasked.size());
    for (size_t i = 0; i < want.size(); ++i) want[i] = relu_out[i] > 0.0f ? unmasked[i] : 0.0;
    const cuda::DeviceBuffer dyd = upload_as(DType::f16, dy, 0), wd = upload_as(DType::f16, w, 0),
                             rd = upload_as(DType::f16, relu_out, 0);
    FusedConv::Pointers p{};
    p[FusedConv::w] = wd.data();
    p[FusedConv::y] = dyd.data();
    p[FusedConv::relu_out] = rd.data();
    FusedConvSpec spec = spec_of(s, FusedConvSpec::data_gradient);
    spec.relu_mask = true;
    for_each_engine(s, spec, p, FusedConv::x, want.size(), [&](const std::vector<float>& dx) {
      EXPECT_TRUE(testing::close_l2("dx", dx, as_floats(want), 2e-3));
      int64_t leaked = 0, dropped = 0;
      for (size_t i = 0; i < dx.size(); ++i) {
        if (relu_out[i] == 0.0f && dx[i] != 0.0f) ++leaked;
        if (relu_out[i] > 0.0f && std::abs(unmasked[i]) > 1e-2 && dx[i] == 0.0f) ++dropped;
      }
      EXPECT_EQ(leaked, 0) << "gradients where the ReLU's output was 0";
      EXPECT_EQ(dropped, 0) << "no gradient where the ReLU's output was positive";
    });
  }
}

}  // namespace
}  // namespace cnnbench
