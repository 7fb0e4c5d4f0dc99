// Max pooling with overlapping windows on the GPU (kernels/cuda/pool_kernels.h), against a loop
// on the host in the reference's rule (kernels/ref/pool.h: padding never wins, the first maximum
// in row-major order takes the gradient, a window of NaN and -inf passes none), on NHWC tensors
// of the three element types, 16 bytes of channels a thread and one element a thread. Where a GPU
// is visible; skipped with the reason elsewhere. (The plan's use of them: the op cases of
// test_cuda_vs_ref with ResNet's and Inception's pools.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "gpu_skip.h"
#include "kernels/cuda/pool_kernels.h"

namespace cnnbench {
namespace {

struct PoolCase {
  int64_t n, c, h, w, k, s, pad;
  int64_t oh() const { return (h + 2 * pad - k) / s + 1; }
  int64_t ow() const { return (w + 2 * pad - k) / s + 1; }
};

// The host's answer on NHWC values: each window's maximum and its first place (-1: none), and dx
// summed in window order onto `dx`.
void host_pool(const PoolCase& g, const std::vector<float>& x, const std::vector<float>& dy, std::vector<float>& y,
               std::vector<float>& dx) {
  y.assign(static_cast<size_t>(g.n * g.oh() * g.ow() * g.c), 0.0f);
  for (int64_t img = 0; img < g.n; ++img)
    for (int64_t oy = 0; oy < g.oh(); ++oy)
      for (int64_t ox = 0; ox < g.ow(); ++ox)
        for (int64_t c = 0; c < g.c; ++c) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t at = -1;
          for (int64_t iy = oy * g.s - g.pad; iy < oy * g.s - g.pad + g.k; ++iy)
            for (int64_t ix = ox * g.s - g.pad; ix < ox * g.s - g.pad + g.k; ++ix) {
              if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
              const int64_t i = ((img * g.h + iy) * g.w + ix) * g.c + c;
              if (x[i] > best) best = x[i], at = i;
            }
          const int64_t o = ((img * g.oh() + oy) * g.ow() + ox) * g.c + c;
          y[o] = best;
          if (at >= 0) dx[at] += dy[o];
        }
}

TEST(CudaPool, OverlappingMaxPoolMatchesTheHostPackedOrNot) {
  SKIP_WITHOUT_GPU();
  const PoolCase cases[] = {
      {2, 64, 13, 11, 3, 2, 1},  // ResNet's stem pool, odd sizes: the last windows cut by the edge
      {3, 12, 9, 9, 3, 1, 1},    // Inception's 3x3/1: every element in up to 9 windows; 12 channels
      {2, 8, 9, 7, 3, 2, 0},     // Inception's 3x3/2 without padding
      {1, 16, 6, 6, 2, 1, 0},    // 2x2/1
      {2, 3, 5, 5, 3, 2, 1},     // 3 channels: one element a thread in every type
      {1, 8, 11, 10, 2, 3, 0},   // stride beyond the window: rows and columns no window reads
  };
  for (const DType type : {DType::f32, DType::f16, DType::bf16})
    for (const PoolCase& g : cases) {
      const std::string what = std::string(dtype_name(type)) + " " + std::to_string(g.n) + "x" + std::to_string(g.c) +
                               "x" + std::to_string(g.h) + "x" + std::to_string(g.w) + " k" + std::to_string(g.k) +
                               "s" + std::to_string(g.s) + "p" + std::to_string(g.pad);
      ASSERT_TRUE(cuda::max_pool_indexed_fits(g.n, g.c, g.h, g.w, g.oh(), g.ow(), g.k)) << what;
      const size_t in = static_cast<size_t>(g.n * g.h * g.w * g.c), out = static_cast<size_t>(g.n * g.oh() * g.ow() * g.c);
      std::vector<float> x = random_values(in, 7), dy = random_values(out, 8), prior = random_values(in, 9);
      for (size_t i = 0; i < in; i += 3) x[i] = 0.0f;  // a ReLU's zeros: ties the first one wins
      for (size_t i = g.c; i < in; i += 5) x[i] = x[i - g.c];  // the pixel before's value: a tie in a row
      x[0] = -std::numeric_limits<float>::infinity();
      x[in / 2] = std::numeric_limits<float>::quiet_NaN();
      for (auto* v : {&x, &dy, &prior})
        for (float& e : *v) e = round_to(type, e);
      if (g.c == 3)  // one window all -inf: no gradient, output -inf
        for (int64_t iy = 0; iy < 2; ++iy)
          for (int64_t ix = 0; ix < 2; ++ix)
            for (int64_t c = 0; c < g.c; ++c) x[(iy * g.w + ix) * g.c + c] = -std::numeric_limits<float>::infinity();
      std::vector<float> want_y, want_dx(in, 0.0f), want_acc = prior;
      host_pool(g, x, dy, want_y, want_dx);
      std::vector<float> ignored;
      host_pool(g, x, dy, ignored, want_acc);
      cuda::DeviceBuffer d_x = upload_as(type, x, 0), d_y = upload_as(type, std::vector<float>(out), 0),
                         d_dy = upload_as(type, dy, 0), d_dx = upload_as(type, std::vector<float>(in, 5.0f), 0),
                         d_acc = upload_as(type, prior, 0), index(out);
      cuda::max_pool_forward_indexed(d_x.data(), d_y.data(), index.as<uint8_t>(), g.n, g.c, g.h, g.w, g.oh(), g.ow(),
                                     g.k, g.s, g.pad, type, nullptr);
      cuda::max_pool_backward_indexed(index.as<uint8_t>(), d_dy.data(), d_dx.data(), g.n, g.c, g.h, g.w, g.oh(),
                                      g.ow(), g.k, g.s, g.pad, false, type, nullptr);
      cuda::max_pool_backward_indexed(index.as<uint8_t>(), d_dy.data(), d_acc.data(), g.n, g.c, g.h, g.w, g.oh(),
                                      g.ow(), g.k, g.s, g.pad, true, type, nullptr);
      const std::vector<float> y = download_as(type, d_y, out, 0), dx = download_as(type, d_dx, in, 0),
                               acc = download_as(type, d_acc, in, 0);
      for (size_t i = 0; i < out; ++i) ASSERT_EQ(y[i], want_y[i]) << what << ": y " << i;
      // one rounding of a float sum in the same order: equal but for the last bit of the type
      const double eps = type == DType::f32 ? 2e-6 : type == DType::f16 ? 1e-3 : 8e-3;
      for (size_t i = 0; i < in; ++i) {
        ASSERT_NEAR(dx[i], round_to(type, want_dx[i]), eps * std::fabs(want_dx[i]) + 1e-7) << what << ": dx " << i;
        // added to what dx held: the host adds the terms one by one, the kernel their sum
        const double terms = std::fabs(want_acc[i]) + std::fabs(prior[i]) + std::fabs(want_dx[i]);
        ASSERT_NEAR(acc[i], round_to(type, want_acc[i]), eps * terms + 1e-6) << what << ": dx+ " << i;
      }
    }
}

TEST(CudaPool, IndexedPoolsRefuseWindowsTheirBytesCannotName) {
  EXPECT_TRUE(cuda::max_pool_indexed_fits(256, 64, 112, 112, 56, 56, 3));
  EXPECT_TRUE(cuda::max_pool_indexed_fits(1, 8, 40, 40, 26, 26, 15));
  EXPECT_FALSE(cuda::max_pool_indexed_fits(1, 8, 40, 40, 25, 25, 16));  // 256 places: 255 is "none"
  EXPECT_FALSE(cuda::max_pool_indexed_fits(4096, 64, 112, 112, 56, 56, 3));  // 3.3G input elements
}

}  // namespace
}  // namespace cnnbench
