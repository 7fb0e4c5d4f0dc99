// Finite-difference checks of every reference op, in double precision: for L = sum(r * f(x)),
// the backward pass given dy = r must match central differences of L.
#include <cmath>
#include <functional>

#include "kernels/ref/batch_norm.h"
#include "kernels/ref/conv.h"
#include "kernels/ref/elementwise.h"
#include "kernels/ref/linear.h"
#include "kernels/ref/loss.h"
#include "kernels/ref/lrn.h"
#include "kernels/ref/pool.h"
#include "test_util.h"

namespace cnnbench {
namespace {

using testing::random_vector;
using Vec = std::vector<double>;

// Checks d(sum(r * forward()))/d(v[i]) == analytic[i] for every element of v.
void expect_gradient(const char* what, Vec& v, const Vec& analytic, const std::function<double()>& objective,
                     double tolerance = 1e-6) {
  ASSERT_EQ(v.size(), analytic.size());
  const double h = 1e-5;
  double max_err = 0, max_ref = 1e-12;
  for (size_t i = 0; i < v.size(); ++i) {
    const double saved = v[i];
    v[i] = saved + h;
    const double up = objective();
    v[i] = saved - h;
    const double down = objective();
    v[i] = saved;
    const double numeric = (up - down) / (2 * h);
    max_err = std::max(max_err, std::fabs(numeric - analytic[i]));
    max_ref = std::max(max_ref, std::fabs(numeric));
  }
  EXPECT_LT(max_err / max_ref, tolerance) << what;
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Square 3x3 kernels at strides 1 and 2, inception3's rectangular ones (1x3 padded by one column,
// 3x1 by one row) on a non-square input, a grouped one (3 groups of 2 -> 2 channels) and a
// depthwise one (MobileNet's: 6 groups of one channel, stride 2).
TEST(RefGradCheck, Conv) {
  struct Case {
    int64_t h, w, kernel_h, kernel_w, stride, pad_h, pad_w, channels = 3, out_channels = 4, groups = 1;
  };
  for (const Case& c : {Case{7, 7, 3, 3, 1, 1, 1}, Case{7, 7, 3, 3, 2, 1, 1}, Case{5, 6, 1, 3, 1, 0, 1},
                        Case{6, 5, 3, 1, 2, 1, 0}, Case{5, 5, 3, 3, 1, 1, 1, 6, 6, 3}, Case{6, 6, 3, 3, 2, 1, 1, 6, 6, 6}}) {
    const int64_t oh = (c.h + 2 * c.pad_h - c.kernel_h) / c.stride + 1, ow = (c.w + 2 * c.pad_w - c.kernel_w) / c.stride + 1;
    ref::ConvGeometry g{};
    g.n = 2, g.c = c.channels, g.h = c.h, g.w = c.w, g.k = c.out_channels, g.r = c.kernel_h, g.t = c.kernel_w;
    g.stride = c.stride, g.pad = c.pad_h, g.pad_w = c.pad_w, g.oh = oh, g.ow = ow, g.groups = c.groups;
    Vec x = random_vector<double>(g.n * g.c * g.h * g.w, 1), w = random_vector<double>(g.k * g.group_channels() * g.r * g.t, 2),
        b = random_vector<double>(g.k, 3), r = random_vector<double>(g.n * g.k * g.oh * g.ow, 4);
    Vec y(r.size()), dx(x.size(), 0.0), dw(w.size()), db(b.size());
    auto objective = [&] {
      ref::conv_forward(x.data(), w.data(), b.data(), y.data(), g);
      return dot(y, r);
    };
    ref::conv_backward_data(r.data(), w.data(), dx.data(), g);
    ref::conv_backward_weights(x.data(), r.data(), dw.data(), db.data(), g);
    expect_gradient("conv dx", x, dx, objective);
    expect_gradient("conv dw", w, dw, objective);
    expect_gradient("conv db", b, db, objective);
  }
}

TEST(RefGradCheck, BatchNormTraining) {
  const ref::BatchNormGeometry g{3, 4, 5, 1e-5};
  Vec x = random_vector<double>(g.n * g.c * g.hw, 5), scale = random_vector<double>(g.c, 6, 0.5, 1.5),
      shift = random_vector<double>(g.c, 7), r = random_vector<double>(x.size(), 8);
  Vec y(x.size()), mean(g.c), var(g.c), dx(x.size(), 0.0), dscale(g.c), dshift(g.c);
  auto objective = [&] {
    ref::batch_norm_forward_training(x.data(), scale.data(), shift.data(), y.data(), mean.data(), var.data(), g);
    return dot(y, r);
  };
  objective();
  ref::batch_norm_backward(x.data(), r.data(), scale.data(), mean.data(), var.data(), dx.data(), dscale.data(),
                           dshift.data(), g);
  expect_gradient("bn dx", x, dx, objective);
  expect_gradient("bn dscale", scale, dscale, objective);
  expect_gradient("bn dshift", shift, dshift, objective);
}

TEST(RefGradCheck, BatchNormInferenceAndRunningStats) {
  const ref::BatchNormGeometry g{2, 3, 4, 1e-5};
  Vec x = random_vector<double>(g.n * g.c * g.hw, 9), scale = random_vector<double>(g.c, 10),
      shift = random_vector<double>(g.c, 11), mean = random_vector<double>(g.c, 12),
      var = random_vector<double>(g.c, 13, 0.5, 2.0);
  Vec y(x.size());
  ref::batch_norm_forward_inference(x.data(), scale.data(), shift.data(), mean.data(), var.data(), y.data(), g);
  const int64_t i = (1 * g.c + 2) * g.hw + 3;  // n=1, c=2, p=3
  EXPECT_NEAR(y[i], (x[i] - mean[2]) / std::sqrt(var[2] + 1e-5) * scale[2] + shift[2], 1e-12);

  Vec batch_mean(g.c), batch_var(g.c), running_mean(g.c, 0.0), running_var(g.c, 1.0);
  ref::batch_norm_forward_training(x.data(), scale.data(), shift.data(), y.data(), batch_mean.data(),
                                   batch_var.data(), g);
  ref::update_running_stats(batch_mean.data(), batch_var.data(), running_mean.data(), running_var.data(), 0.1, g);
  const double m = g.n * g.hw;
  EXPECT_NEAR(running_mean[1], 0.1 * batch_mean[1], 1e-12);
  EXPECT_NEAR(running_var[1], 0.9 + 0.1 * batch_var[1] * m / (m - 1), 1e-12);
}

TEST(RefGradCheck, Relu) {
  Vec x = random_vector<double>(40, 14), r = random_vector<double>(40, 15), y(40), dx(40, 0.0);
  for (double& v : x) v += v > 0 ? 0.1 : -0.1;  // keep away from the kink
  ref::relu_backward(x.data(), r.data(), dx.data(), 40);
  expect_gradient("relu dx", x, dx, [&] {
    ref::relu_forward(x.data(), y.data(), 40);
    return dot(y, r);
  });
}

// ReLU6 over values on both kinks (0 and 6) and between: the gradient is 1 strictly inside.
TEST(RefGradCheck, Relu6) {
  Vec x = random_vector<double>(60, 16), r = random_vector<double>(60, 17), y(60), dx(60, 0.0);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 4.0 * x[i] + (i % 3 == 0 ? 6.0 : 0.0);  // some far above 6
  for (double& v : x)
    for (double kink : {0.0, 6.0})
      if (std::abs(v - kink) < 0.1) v = kink + (v > kink ? 0.1 : -0.1);
  ref::relu6_backward(x.data(), r.data(), dx.data(), 60);
  int above = 0;
  for (double v : x) above += v > 6.0;
  EXPECT_GT(above, 5) << "the upper kink is crossed";
  expect_gradient("relu6 dx", x, dx, [&] {
    ref::relu6_forward(x.data(), y.data(), 60);
    return dot(y, r);
  });
}

TEST(RefGradCheck, Pooling) {
  for (int kind = 0; kind < 3; ++kind) {
    const bool is_max = kind == 0;
    ref::PoolGeometry g{2, 3, 7, 7, 3, 2, 1, 4, 4, kind != 2};
    Vec x = random_vector<double>(g.n * g.c * g.h * g.w, 16 + kind), r = random_vector<double>(g.n * g.c * 16, 19);
    Vec y(r.size()), dx(x.size(), 0.0);
    auto objective = [&] {
      if (is_max)
        ref::max_pool_forward(x.data(), y.data(), g);
      else
        ref::avg_pool_forward(x.data(), y.data(), g);
      return dot(y, r);
    };
    if (is_max)
      ref::max_pool_backward(x.data(), r.data(), dx.data(), g);
    else
      ref::avg_pool_backward(r.data(), dx.data(), g);
    expect_gradient(is_max ? "max pool dx" : "avg pool dx", x, dx, objective);
  }
}

TEST(RefGradCheck, GlobalAvgPool) {
  Vec x = random_vector<double>(2 * 3 * 25, 20), r = random_vector<double>(6, 21), y(6), dx(x.size(), 0.0);
  ref::global_avg_pool_backward(r.data(), dx.data(), 6, 25);
  expect_gradient("gap dx", x, dx, [&] {
    ref::global_avg_pool_forward(x.data(), y.data(), 6, 25);
    return dot(y, r);
  });
}

TEST(RefGradCheck, Linear) {
  const ref::LinearGeometry g{3, 7, 5};
  Vec x = random_vector<double>(g.n * g.in, 22), w = random_vector<double>(g.out * g.in, 23),
      b = random_vector<double>(g.out, 24), r = random_vector<double>(g.n * g.out, 25);
  Vec y(r.size()), dx(x.size(), 0.0), dw(w.size()), db(b.size());
  auto objective = [&] {
    ref::linear_forward(x.data(), w.data(), b.data(), y.data(), g);
    return dot(y, r);
  };
  ref::linear_backward_data(r.data(), w.data(), dx.data(), g);
  ref::linear_backward_weights(x.data(), r.data(), dw.data(), db.data(), g);
  expect_gradient("linear dx", x, dx, objective);
  expect_gradient("linear dw", w, dw, objective);
  expect_gradient("linear db", b, db, objective);
}

TEST(RefGradCheck, AddAndShortcut) {
  Vec a = random_vector<double>(30, 26), b = random_vector<double>(30, 27), r = random_vector<double>(30, 28);
  Vec y(30), da(30, 0.0), db(30, 0.0);
  ref::add_backward(r.data(), da.data(), db.data(), 30);
  auto add_objective = [&] {
    ref::add_forward(a.data(), b.data(), y.data(), 30);
    return dot(y, r);
  };
  expect_gradient("add da", a, da, add_objective);
  expect_gradient("add db", b, db, add_objective);

  const ref::ShortcutGeometry g{2, 3, 5, 5, 7, 3, 3, 2, 2};
  Vec x = random_vector<double>(2 * 3 * 25, 29), rs = random_vector<double>(2 * 7 * 9, 30);
  Vec ys(rs.size()), dx(x.size(), 0.0);
  ref::shortcut_backward(rs.data(), dx.data(), g);
  expect_gradient("shortcut dx", x, dx, [&] {
    ref::shortcut_forward(x.data(), ys.data(), g);
    return dot(ys, rs);
  });
  ref::shortcut_forward(x.data(), ys.data(), g);
  EXPECT_EQ(ys[(1 * 7 + 0) * 9 + 4], 0.0);                                  // padded channel
  EXPECT_EQ(ys[(1 * 7 + 3) * 9 + 4], x[(1 * 3 + 1) * 25 + 2 * 5 + 2]);     // subsampled

  // NASNet's odd rows and columns (offset 1) of a 5 x 5 map: rows 1 and 3, and row 5 past the edge
  const ref::ShortcutGeometry odd{2, 3, 5, 5, 3, 3, 3, 2, 0, 1};
  Vec ro = random_vector<double>(2 * 3 * 9, 31), yo(ro.size()), dxo(x.size(), 0.0);
  ref::shortcut_backward(ro.data(), dxo.data(), odd);
  expect_gradient("shortcut from 1 dx", x, dxo, [&] {
    ref::shortcut_forward(x.data(), yo.data(), odd);
    return dot(yo, ro);
  });
  ref::shortcut_forward(x.data(), yo.data(), odd);
  EXPECT_EQ(yo[(1 * 3 + 2) * 9 + 1 * 3 + 0], x[(1 * 3 + 2) * 25 + 3 * 5 + 1]);  // (1, 0) reads (3, 1)
  EXPECT_EQ(yo[(1 * 3 + 2) * 9 + 2 * 3 + 1], 0.0);                              // (2, 1) reads row 5
  EXPECT_EQ(dxo[(0 * 3 + 1) * 25 + 0 * 5 + 1], 0.0);                            // row 0 is never read
}

// Local response normalisation (tf.nn.lrn): a strong one, so that the cross-channel term of the
// gradient counts, on 7 channels with a window of 5 (clipped at both ends).
TEST(RefGradCheck, Lrn) {
  const ref::LrnGeometry g{2, 7, 3, 2, 1.5, 0.4, 0.75};
  Vec x = random_vector<double>(g.n * g.c * g.hw, 51), r = random_vector<double>(x.size(), 52), y(x.size()),
      dx(x.size(), 0.0);
  ref::lrn_backward(x.data(), r.data(), dx.data(), g);
  expect_gradient("lrn dx", x, dx, [&] {
    ref::lrn_forward(x.data(), y.data(), g);
    return dot(y, r);
  });
  ref::lrn_forward(x.data(), y.data(), g);
  double s = 1.5;  // channel 0 of image 1 at position 2: channels 0..2 in its window
  for (int k = 0; k < 3; ++k) s += 0.4 * x[(7 + k) * 3 + 2] * x[(7 + k) * 3 + 2];
  EXPECT_NEAR(y[7 * 3 + 2], x[7 * 3 + 2] * std::pow(s, -0.75), 1e-12);
}

// Dropout with a fixed mask is linear: its gradient is the mask scaled by 1 / (1 - rate), summed
// into what dx held; about `rate` of the elements are dropped, the others doubled at rate 0.5.
TEST(RefGradCheck, Dropout) {
  const int64_t count = 4000;
  Vec x = random_vector<double>(count, 41, 0.5, 1.5), r = random_vector<double>(count, 42), y(count), dx(count, 0.0);
  ref::dropout_backward(r.data(), dx.data(), count, 7, 3, 11, 0.5f);
  expect_gradient("dropout dx", x, dx, [&] {
    ref::dropout_forward(x.data(), y.data(), count, 7, 3, 11, 0.5f);
    return dot(y, r);
  });
  ref::dropout_forward(x.data(), y.data(), count, 7, 3, 11, 0.5f);
  int64_t dropped = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (y[i] == 0.0) ++dropped;
    else EXPECT_DOUBLE_EQ(y[i], 2 * x[i]);
  }
  EXPECT_NEAR(dropped, count / 2, 4 * std::sqrt(count * 0.25)) << "dropped of " << count;  // 4 standard deviations
}

// Concatenation of 2, 3 and 1 channels over 2 images of 2x3: values land in order, and each
// input's gradient is its slice of the output's (added to what the input's gradient held).
TEST(RefGradCheck, Concat) {
  const std::vector<int64_t> channels{2, 3, 1};
  const int64_t n = 2, hw = 6, total = 6;
  std::vector<Vec> xs;
  for (int k = 0; k < 3; ++k) xs.push_back(random_vector<double>(n * channels[k] * hw, 31 + k));
  const Vec r = random_vector<double>(n * total * hw, 34);
  Vec y(r.size());
  std::vector<Vec> dxs;
  for (int k = 0; k < 3; ++k) dxs.emplace_back(xs[k].size(), 0.0);
  ref::concat_backward(r.data(), {dxs[0].data(), dxs[1].data(), dxs[2].data()}, channels, n, hw);
  auto objective = [&] {
    ref::concat_forward<double>({xs[0].data(), xs[1].data(), xs[2].data()}, channels, y.data(), n, hw);
    return dot(y, r);
  };
  for (int k = 0; k < 3; ++k) expect_gradient("concat dx", xs[k], dxs[k], objective);
  objective();
  EXPECT_EQ(y[(1 * total + 2 + 1) * hw + 4], xs[1][(1 * 3 + 1) * hw + 4]);  // image 1, input 1's channel 1
  EXPECT_EQ(y[(0 * total + 5) * hw + 0], xs[2][0]);                         // input 2 in the last channel
  Vec held(dxs[0].size(), 1.0);
  ref::concat_backward(r.data(), {held.data(), dxs[1].data(), dxs[2].data()}, channels, n, hw);
  EXPECT_EQ(held[hw + 3], 1.0 + r[hw + 3]);  // summed into, not overwritten
}

TEST(RefGradCheck, SoftmaxCrossEntropy) {
  const int64_t n = 4, classes = 6;
  Vec z = random_vector<double>(n * classes, 31, -3, 3), dz(z.size()), scratch(z.size());
  const int32_t labels[n] = {0, 5, 2, 2};
  const double loss = ref::softmax_cross_entropy(z.data(), labels, dz.data(), n, classes);
  EXPECT_GT(loss, 0.0);
  expect_gradient("softmax cross-entropy dz", z, dz,
                  [&] { return ref::softmax_cross_entropy(z.data(), labels, scratch.data(), n, classes); });
}

}  // namespace
}  // namespace cnnbench
