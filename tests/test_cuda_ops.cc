// The GPU build: what it links against (runs everywhere), and the cuda kernels for SGD, casts,
// add+ReLU and the loss against kernels/cpu_ops and top_k.h (where a GPU is visible; skipped
// with the reason elsewhere).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu_ops.h"
#include "cuda_test_util.h"
#include "gpu_skip.h"
#include "kernels/cuda/conv_bn_kernels.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/tensor_kernels.h"
#include "kernels/top_k.h"
#include "kernels/dtype.h"

namespace cnnbench {
namespace {

TEST(CudaBuild, LinksTheLibrariesItWasBuiltFor) {
  const cuda::BuildInfo info = cuda::build_info();
  std::printf("CUDA runtime %d, driver %d, cuDNN %zu, NCCL %d, %d device(s)%s%s\n", info.runtime_version,
              info.driver_version, info.cudnn_version, info.nccl_version, info.devices,
              info.no_device_reason.empty() ? "" : ": ", info.no_device_reason.c_str());
  EXPECT_GE(info.runtime_version, 12000) << "CUDA runtime";
  EXPECT_GE(info.cudnn_version, 90000u) << "cuDNN 9 or later";
  EXPECT_GE(info.nccl_version, 21800) << "NCCL 2.18 or later";
  EXPECT_EQ(info.devices == 0, !info.no_device_reason.empty()) << "a reason exactly when no device is visible";
  EXPECT_EQ(info.devices, cuda::visible_devices());
}

TEST(CudaBuild, DeviceMemoryWithoutADeviceIsAClearError) {
  if (cuda::visible_devices() > 0) GTEST_SKIP() << "a GPU is visible: allocation works";
  try {
    cuda::DeviceBuffer b(1024);
    FAIL() << "cudaMalloc succeeded without a device";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
  }
}

// Three tensors (a weight over several chunks, a batch norm's scale, a bias) with a gap between
// two, as the device arena aligns them: each tensor as the CPU's sgd_update with its own weight
// decay (none on the batch norm's unless asked), the gap untouched.
TEST(CudaOps, SgdMatchesTheCpuUpdateTensorByTensor) {
  SKIP_WITHOUT_GPU();
  const std::vector<int64_t> offsets = {0, 70016, 70080}, sizes = {70003, 64, 1000};
  const std::vector<uint8_t> batch_norm = {0, 1, 0};
  const size_t n = 71080;
  const std::vector<TensorChunk> chunks = cut_into_chunks(offsets, sizes, 32768);
  cuda::DeviceBuffer d_chunks(chunks.size() * sizeof(TensorChunk)), d_bn(batch_norm.size());
  d_chunks.upload(chunks.data(), chunks.size() * sizeof(TensorChunk));
  d_bn.upload(batch_norm.data(), batch_norm.size());
  for (bool nesterov : {false, true})
    for (bool decay_batch_norm : {false, true}) {
      SCOPED_TRACE(std::to_string(nesterov) + std::to_string(decay_batch_norm));
      std::vector<float> w = random_values(n, 1), g = random_values(n, 2), v = random_values(n, 3, 0.1f);
      cuda::DeviceBuffer dw = on_device(w), dg = on_device(g), dv = on_device(v);
      const cuda::SgdSettings settings{0.1f, 0.9f, 0.05f, 0.5f, nesterov, decay_batch_norm};
      cuda::sgd_update(dw.as<float>(), dg.as<float>(), dv.as<float>(), d_chunks.as<TensorChunk>(), 0,
                       static_cast<int64_t>(chunks.size()), d_bn.as<uint8_t>(), settings, nullptr);
      const std::vector<float> w0 = w;
      for (size_t t = 0; t < sizes.size(); ++t)
        cpu::sgd_update(w.data() + offsets[t], g.data() + offsets[t], v.data() + offsets[t], sizes[t], 0.1f, 0.9f,
                        batch_norm[t] && !decay_batch_norm ? 0.0f : 0.05f, nesterov, 0.5f);
      const std::vector<float> gw = to_host<float>(dw, n), gv = to_host<float>(dv, n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_NEAR(gw[i], w[i], 1e-6f * (1 + std::fabs(w[i]))) << i;
        ASSERT_NEAR(gv[i], v[i], 1e-6f * (1 + std::fabs(v[i]))) << i;
      }
      EXPECT_EQ(gw[70010], w0[70010]) << "the gap is no tensor's";
    }
}

TEST(CudaOps, CastsRoundToNearestEvenLikeTheCpu) {
  SKIP_WITHOUT_GPU();
  const size_t n = 65536;
  std::vector<float> x = random_values(n, 4, 100.0f);
  x[0] = 0.0f, x[1] = -0.0f, x[2] = INFINITY, x[3] = 1e-40f;
  cuda::DeviceBuffer dx = on_device(x), half(n * 2), back(n * 4);
  for (DType t : {DType::bf16, DType::f16}) {
    cuda::cast_from_f32(dx.as<float>(), half.as<uint16_t>(), n, t, nullptr);
    cuda::cast_to_f32(half.as<uint16_t>(), back.as<float>(), n, t, 2.0f, nullptr);
    const std::vector<uint16_t> bits = to_host<uint16_t>(half, n);
    const std::vector<float> wide = to_host<float>(back, n);
    for (size_t i = 0; i < n; ++i) {
      const uint16_t expected = t == DType::bf16 ? f32_to_bf16(x[i]) : f32_to_f16(x[i]);
      ASSERT_EQ(bits[i], expected) << dtype_name(t) << " of " << x[i];
      const float expected_back = 2.0f * (t == DType::bf16 ? bf16_to_f32(expected) : f16_to_f32(expected));
      ASSERT_EQ(wide[i], expected_back) << i;
    }
  }
}

TEST(CudaOps, AddAndReluInPlace) {
  SKIP_WITHOUT_GPU();
  const size_t n = 4099;
  const std::vector<float> a = random_values(n, 5), b = random_values(n, 6);
  cuda::DeviceBuffer da = on_device(a), db = on_device(b);
  cuda::add_forward(da.data(), db.data(), da.data(), n, /*relu=*/true, DType::f32, nullptr);
  const std::vector<float> out = to_host<float>(da, n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], std::max(a[i] + b[i], 0.0f)) << i;
}

// The elementwise kernels (ReLU, add, bias + ReLU, each way) move 16 bytes at a time where the
// pointers are 16-byte aligned and the count (and for the bias, the features) a multiple of the
// pack, else one element: both paths, in every type, give the CPU's values to the bit (each is
// one float operation rounded once). Cases: packed; a count that is not a multiple; a pointer one
// element off alignment; 6 features for the bias.
TEST(CudaOps, ElementwiseKernelsMatchTheCpuPackedOrNot) {
  SKIP_WITHOUT_GPU();
  struct Case {
    int64_t count, offset, features;
  };
  for (const DType type : {DType::f32, DType::f16, DType::bf16}) {
    const size_t es = dtype_size(type);
    const auto at = [es](const cuda::DeviceBuffer& b, int64_t offset) { return b.as<char>() + offset * es; };
    for (const Case c : {Case{4096, 0, 64}, Case{4099, 0, 61}, Case{4096, 1, 64}, Case{4096, 0, 6}}) {
      const std::string what = std::string(dtype_name(type)) + ", " + std::to_string(c.count) + " elements at +" +
                               std::to_string(c.offset) + ", " + std::to_string(c.features) + " features";
      const size_t n = static_cast<size_t>(c.count);
      std::vector<float> x = random_values(n, 21), y0 = random_values(n, 22), dy = random_values(n, 23);
      for (auto* v : {&x, &y0, &dy})
        for (float& e : *v) e = round_to(type, e);
      std::vector<float> bias = random_values(static_cast<size_t>(c.features), 24);
      // ReLU forward, and its backward written and accumulated
      cuda::DeviceBuffer dx_in = upload_as(type, x, c.offset), dy_in = upload_as(type, dy, c.offset);
      cuda::DeviceBuffer relu_out = upload_as(type, std::vector<float>(n, 0.0f), c.offset);
      cuda::relu_forward(at(dx_in, c.offset), at(relu_out, c.offset), c.count, type, nullptr);
      const std::vector<float> r = download_as(type, relu_out, n, c.offset);
      cuda::DeviceBuffer grad = upload_as(type, y0, c.offset);
      cuda::relu_backward(at(relu_out, c.offset), at(dy_in, c.offset), at(grad, c.offset), c.count, true, type, nullptr);
      const std::vector<float> g = download_as(type, grad, n, c.offset);
      // add with ReLU, and its backward into one gradient written and one accumulated
      cuda::DeviceBuffer sum = upload_as(type, std::vector<float>(n, 0.0f), c.offset), da = upload_as(type, y0, c.offset),
                         db = upload_as(type, y0, c.offset);
      cuda::add_forward(at(dx_in, c.offset), at(grad, c.offset), at(sum, c.offset), c.count, true, type, nullptr);
      const std::vector<float> s = download_as(type, sum, n, c.offset);
      cuda::add_backward(at(sum, c.offset), at(dy_in, c.offset), at(da, c.offset), at(db, c.offset), c.count, true,
                         false, true, type, nullptr);
      const std::vector<float> ga = download_as(type, da, n, c.offset), gb = download_as(type, db, n, c.offset);
      // bias + ReLU in place over rows x features (the rows that fit)
      const int64_t rows = c.count / c.features;
      cuda::DeviceBuffer with_bias = upload_as(type, x, c.offset), d_bias = on_device(bias);
      cuda::add_bias(at(with_bias, c.offset), d_bias.as<float>(), rows, c.features, true, type, nullptr);
      const std::vector<float> wb = download_as(type, with_bias, n, c.offset);
      for (size_t i = 0; i < n; ++i) {
        const float relu = std::max(x[i], 0.0f);
        ASSERT_EQ(r[i], relu) << what << ": relu " << i;
        ASSERT_EQ(g[i], round_to(type, y0[i] + (relu > 0.0f ? dy[i] : 0.0f))) << what << ": relu backward " << i;
        const float added = round_to(type, std::max(x[i] + g[i], 0.0f));
        ASSERT_EQ(s[i], added) << what << ": add " << i;
        const float through = added > 0.0f ? dy[i] : 0.0f;
        ASSERT_EQ(ga[i], through) << what << ": add backward, written " << i;
        ASSERT_EQ(gb[i], round_to(type, y0[i] + through)) << what << ": add backward, accumulated " << i;
        const bool biased = static_cast<int64_t>(i) < rows * c.features;
        const float b = biased ? round_to(type, std::max(x[i] + bias[i % c.features], 0.0f)) : x[i];
        ASSERT_EQ(wb[i], b) << what << ": bias " << i;
      }
    }
  }
}

// The bias gradient (a column sum of rows x features) and its ReLU-masked form, which also writes
// the masked dy back: the 16-byte kernel (features a multiple of the pack and at most 256 packs a
// row, pointers aligned) and the 2-byte one (the rest), in every type. Cases: VGG's first layer
// in small (64 features, rows over many blocks); 1000 features (a block's threads not all used);
// 4096 features (too many packs: the 2-byte kernel); 61 features; a pointer one element off; a
// few rows. The masked dy must be exact; the sums within float rounding of a double sum.
TEST(CudaOps, BiasGradientMatchesTheColumnSumsPackedOrNot) {
  SKIP_WITHOUT_GPU();
  struct Case {
    int64_t rows, features, offset;
  };
  for (const DType type : {DType::f32, DType::f16, DType::bf16})
    for (const Case c : {Case{70001, 64, 0}, Case{301, 1000, 0}, Case{40, 4096, 0}, Case{999, 61, 0}, Case{2000, 64, 1},
                         Case{3, 8, 0}}) {
      const std::string what = std::string(dtype_name(type)) + ", " + std::to_string(c.rows) + " rows x " +
                               std::to_string(c.features) + " at +" + std::to_string(c.offset);
      const size_t n = static_cast<size_t>(c.rows * c.features);
      std::vector<float> y = random_values(n, 31), dy = random_values(n, 32);
      for (auto* v : {&y, &dy})
        for (float& e : *v) e = round_to(type, e);
      for (size_t i = 0; i < n; i += 7) y[i] = 0.0f;  // a ReLU's zeros: masked, not only negatives
      for (const bool mask : {false, true}) {
        cuda::DeviceBuffer d_y = upload_as(type, y, c.offset), d_dy = upload_as(type, dy, c.offset);
        cuda::DeviceBuffer d_db(c.features * sizeof(float));
        const auto at = [&](const cuda::DeviceBuffer& b) { return b.as<char>() + c.offset * dtype_size(type); };
        if (mask)
          cuda::relu_mask_bias_gradient(at(d_y), at(d_dy), d_db.as<float>(), c.rows, c.features, type, nullptr);
        else
          cuda::bias_gradient(at(d_dy), d_db.as<float>(), c.rows, c.features, type, nullptr);
        const std::vector<float> db = to_host<float>(d_db, static_cast<size_t>(c.features));
        const std::vector<float> out = download_as(type, d_dy, n, c.offset);
        std::vector<double> sum(c.features, 0.0), magnitude(c.features, 0.0);
        for (size_t i = 0; i < n; ++i) {
          const float g = !mask || y[i] > 0.0f ? dy[i] : 0.0f;
          ASSERT_EQ(out[i], g) << what << (mask ? ", masked" : ", unmasked") << ": dy " << i;
          sum[i % c.features] += g;
          magnitude[i % c.features] += std::fabs(g);
        }
        for (int64_t f = 0; f < c.features; ++f)
          ASSERT_NEAR(db[f], sum[f], 1e-5 * magnitude[f] + 1e-6) << what << (mask ? ", masked" : ", unmasked")
                                                                 << ": feature " << f;
      }
    }
}

// The loss, top-1/5 and gradient, with and without label smoothing (the smoothed loss differs
// from the plain one by more than the tolerance, so a kernel that ignored it would fail).
TEST(CudaOps, SoftmaxCrossEntropyMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const float smoothing : {0.0f, 0.1f})
    for (int64_t classes : {10, 1000}) {
      const int64_t n = 33;
      const std::string what = std::to_string(classes) + " classes, smoothing " + std::to_string(smoothing);
      const std::vector<float> logits = random_values(n * classes, 7, 3.0f);
      std::vector<int32_t> labels(n);
      for (int64_t i = 0; i < n; ++i) labels[i] = static_cast<int32_t>((i * 7919) % classes);
      std::vector<float> dlogits(n * classes);
      const double loss =
          cpu::softmax_cross_entropy(logits.data(), labels.data(), dlogits.data(), n, classes, smoothing);
      cuda::DeviceBuffer dz = on_device(logits), dl = on_device(labels), dd(n * classes * 4),
                         totals = on_device(std::vector<float>(4, 0.0f));
      cuda::softmax_cross_entropy_totals(dz.as<float>(), dl.as<int32_t>(), dd.data(), totals.as<float>(), n, classes,
                                         1.0f, DType::f32, nullptr, smoothing);
      const std::vector<float> sums = to_host<float>(totals, 4), grad = to_host<float>(dd, n * classes);
      EXPECT_NEAR(sums[0] / n, loss, 1e-5 * (1 + loss)) << what;
      EXPECT_EQ(sums[1], count_top_k(logits.data(), labels.data(), n, classes, 1)) << what;
      EXPECT_EQ(sums[2], count_top_k(logits.data(), labels.data(), n, classes, 5)) << what;
      EXPECT_EQ(sums[3], 0.0f) << "no label is out of range";
      for (int64_t i = 0; i < n * classes; ++i) ASSERT_NEAR(grad[i], dlogits[i], 1e-6f) << what << ", " << i;
    }
}

// The folded batch norm's kernels take 8 channels a thread: a chain of 2056 channels, or a tensor
// off 16 bytes, is refused when the plan is compiled (no GPU needed: nothing is launched).
TEST(CudaConvBn, KernelsRefuseChannelsAndTensorsTheyCannotTake) {
  alignas(16) static char tensor[64];
  EXPECT_NO_THROW(cuda::bn_relu_check(2048, {tensor, tensor + 16}));
  EXPECT_THROW(cuda::bn_relu_check(2056, {tensor}), std::logic_error);
  EXPECT_THROW(cuda::bn_relu_check(12, {tensor}), std::logic_error);
  EXPECT_THROW(cuda::bn_relu_check(64, {tensor, tensor + 2}), std::logic_error);
}

// The folded batch norm's backward (kernels/cuda/conv_bn_kernels.h) against the formula in double
// on the same fp16 inputs, for channel counts whose 8-channel groups divide the block's 256
// threads or not (24, 96), fill it (2048), and row counts of one split, uneven splits and all 1024
// (20000, 100000); written and accumulated, and the same bits twice. The mask is x * scale + bias
// > 0 in float, as the kernels (and cuDNN's prologue) compute it. Sums are held to 1e-5 of the sum
// of |terms| (fp32 against double in another order), dx to fp16's rounding.
TEST(CudaConvBn, BackwardAndApplyMatchTheFormula) {
  SKIP_WITHOUT_GPU();
  const std::pair<int64_t, int64_t> shapes[] = {{8, 1}, {24, 63}, {96, 20000}, {512, 5000}, {2048, 130}, {64, 100000}};
  for (const auto& [channels, rows] : shapes) {
    SCOPED_TRACE(std::to_string(channels) + " channels, " + std::to_string(rows) + " rows");
    const int64_t n = rows * channels;
    const auto half_of = [](const std::vector<float>& v) {
      std::vector<uint16_t> h(v.size());
      for (size_t i = 0; i < v.size(); ++i) h[i] = f32_to_f16(v[i]);
      return h;
    };
    std::vector<float> xs = random_values(n, 1 + channels), dzs = random_values(n, 2 + channels), prev = random_values(n, 3);
    for (float& v : xs) v += 0.3f;  // a mean to subtract
    const std::vector<uint16_t> x = half_of(xs), dz = half_of(dzs), dx_before = half_of(prev);
    std::vector<float> mean(channels), inv_std(channels), gamma = random_values(channels, 4), scale_f(channels);
    std::vector<uint16_t> scale_bias(2 * channels);
    for (int64_t c = 0; c < channels; ++c) {
      double s = 0, ss = 0;
      for (int64_t r = 0; r < rows; ++r) s += f16_to_f32(x[r * channels + c]), ss += std::pow(f16_to_f32(x[r * channels + c]), 2);
      mean[c] = static_cast<float>(s / rows);
      inv_std[c] = static_cast<float>(1 / std::sqrt(std::max(ss / rows - mean[c] * static_cast<double>(mean[c]), 0.0) + 1e-3));
      scale_bias[c] = f32_to_f16(gamma[c] * inv_std[c]);
      scale_bias[channels + c] = f32_to_f16(0.1f - mean[c] * gamma[c] * inv_std[c]);
    }
    const auto mask = [&](int64_t i) {
      const int64_t c = i % channels;
      return std::fma(f16_to_f32(x[i]), f16_to_f32(scale_bias[c]), f16_to_f32(scale_bias[channels + c])) > 0.0f;
    };
    // the formula in double
    std::vector<double> g_sum(channels), gx_sum(channels), g_abs(channels), gx_abs(channels);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = i % channels;
      const double g = mask(i) ? f16_to_f32(dz[i]) : 0.0, xhat = (f16_to_f32(x[i]) - mean[c]) * static_cast<double>(inv_std[c]);
      g_sum[c] += g, gx_sum[c] += g * xhat, g_abs[c] += std::abs(g), gx_abs[c] += std::abs(g * xhat);
    }
    auto dx_of = [&](int64_t i) {
      const int64_t c = i % channels;
      const double g = mask(i) ? f16_to_f32(dz[i]) : 0.0, xhat = (f16_to_f32(x[i]) - mean[c]) * static_cast<double>(inv_std[c]);
      return gamma[c] * static_cast<double>(inv_std[c]) * (g - g_sum[c] / rows - xhat * gx_sum[c] / rows);
    };
    cuda::DeviceBuffer d_x = on_device(x), d_dz = on_device(dz), d_sb = on_device(scale_bias), d_mean = on_device(mean),
                       d_inv = on_device(inv_std), d_gamma = on_device(gamma), d_dgamma(channels * 4), d_dbeta(channels * 4),
                       d_scratch(cuda::bn_relu_backward_scratch_bytes(rows, channels)), d_z(n * 2);
    const char* sb = d_sb.as<char>();
    ASSERT_NO_THROW(cuda::bn_relu_check(channels, {d_x.data(), d_dz.data(), sb, sb + channels * 2, d_z.data()}));
    for (const bool accumulate : {false, true}) {
      SCOPED_TRACE(accumulate ? "accumulated" : "written");
      cuda::DeviceBuffer d_dx = on_device(dx_before);
      cuda::bn_relu_backward(d_x.data(), d_dz.data(), sb, sb + channels * 2, d_mean.as<float>(), d_inv.as<float>(),
                             d_gamma.as<float>(), d_dgamma.as<float>(), d_dbeta.as<float>(), d_dx.data(), rows, channels,
                             accumulate, d_scratch.data(), nullptr);
      const auto dgamma = to_host<float>(d_dgamma, channels), dbeta = to_host<float>(d_dbeta, channels);
      const auto dx = to_host<uint16_t>(d_dx, n);
      {  // the same bits a second time (fixed-order sums)
        cuda::DeviceBuffer again = on_device(dx_before);
        cuda::bn_relu_backward(d_x.data(), d_dz.data(), sb, sb + channels * 2, d_mean.as<float>(), d_inv.as<float>(),
                               d_gamma.as<float>(), d_dgamma.as<float>(), d_dbeta.as<float>(), again.data(), rows,
                               channels, accumulate, d_scratch.data(), nullptr);
        EXPECT_EQ(to_host<float>(d_dgamma, channels), dgamma);
        EXPECT_EQ(to_host<float>(d_dbeta, channels), dbeta);
        EXPECT_EQ(to_host<uint16_t>(again, n), dx);
      }
      for (int64_t c = 0; c < channels; ++c) {
        EXPECT_NEAR(dbeta[c], g_sum[c], 1e-5 * g_abs[c] + 1e-6) << "channel " << c;
        EXPECT_NEAR(dgamma[c], gx_sum[c], 1e-5 * gx_abs[c] + 1e-6) << "channel " << c;
      }
      double diff = 0, norm = 1e-30, worst = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double want = dx_of(i) + (accumulate ? f16_to_f32(dx_before[i]) : 0.0), got = f16_to_f32(dx[i]);
        diff += (got - want) * (got - want), norm += want * want;
        worst = std::max(worst, std::abs(got - want) / (std::abs(want) + 1e-2));
      }
      // with one row every dx is 0 in exact arithmetic and float(k) g - float(k g) leaves ~1e-6:
      // the norm floored at 1e-2 per element (dx is of order 1 elsewhere)
      EXPECT_LE(std::sqrt(diff / std::max(norm, 1e-2 * static_cast<double>(n))), 1e-3);
      EXPECT_LE(worst, 4e-3);  // fp16 keeps 11 bits: 2^-11 of the value, with room for A g + B x + C's fp32
    }
    cuda::bn_relu_apply(d_x.data(), sb, sb + channels * 2, d_z.data(), rows, channels, nullptr);
    const auto z = to_host<uint16_t>(d_z, n);
    int64_t off = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = i % channels;
      const float want = std::max(std::fma(f16_to_f32(x[i]), f16_to_f32(scale_bias[c]), f16_to_f32(scale_bias[channels + c])), 0.0f);
      off += std::abs(f16_to_f32(z[i]) - want) > std::abs(want) * 1e-3f + 1e-7f;
    }
    EXPECT_EQ(off, 0) << "of " << n << " recomputed ReLU outputs";
  }
}

}  // namespace
}  // namespace cnnbench
