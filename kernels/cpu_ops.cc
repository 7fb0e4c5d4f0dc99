#include "kernels/cpu_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/dtype.h"

namespace cnnbench::cpu {
namespace {

// y > 0 ? dx + g : 0, without a branch (the mask is data: a branch mispredicts half the time)
inline float relu_sum(float dx, float g, float y) {
  const float sum = dx + g;
  uint32_t bits;
  std::memcpy(&bits, &sum, sizeof(bits));
  bits &= 0u - static_cast<uint32_t>(y > 0.0f);
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

inline uint16_t relu_sum_bf16(uint16_t dx, uint16_t g, uint16_t y) {
  const uint16_t sum = f32_to_bf16(bf16_to_f32(dx) + bf16_to_f32(g));
  return sum & static_cast<uint16_t>(0u - static_cast<uint32_t>(static_cast<int16_t>(y) > 0));  // sign clear, not 0
}

template <class T, T (*op)(T, T, T)>
void relu_sum_loop(T* dx, const T* g, const T* y, int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) dx[i] = op(dx[i], g[i], y[i]);
}

// The same loop vectorized for AVX-512 where the CPU has it: the build targets baseline x86-64.
template <class T, T (*op)(T, T, T)>
__attribute__((target("avx512f,avx512bw"))) void relu_sum_loop_avx512(T* dx, const T* g, const T* y,
                                                                      int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) dx[i] = op(dx[i], g[i], y[i]);
}

bool has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512bw");
  return yes;
}

}  // namespace

double softmax_cross_entropy(const float* logits, const int32_t* labels, float* dlogits,
                             int64_t n, int64_t classes, float label_smoothing) {
  const float spread = label_smoothing / static_cast<float>(classes) / static_cast<float>(n);
  double total = 0;
#pragma omp parallel for reduction(+ : total) if (n * classes > 16384)
  for (int64_t i = 0; i < n; ++i) {
    const float* z = logits + i * classes;
    float* dz = dlogits + i * classes;
    const float max = *std::max_element(z, z + classes);
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) {
      dz[k] = std::exp(z[k] - max);
      sum += dz[k];
    }
    const float scale = static_cast<float>(1.0 / (sum * static_cast<double>(n)));
    for (int64_t k = 0; k < classes; ++k) dz[k] *= scale;
    const double log_sum = std::log(sum) + max;
    if (label_smoothing == 0.0f) {
      dz[labels[i]] -= 1.0f / static_cast<float>(n);
      total += log_sum - z[labels[i]];
      continue;
    }
    double mean_z = 0;
    for (int64_t k = 0; k < classes; ++k) {
      dz[k] -= spread;
      mean_z += z[k];
    }
    mean_z /= static_cast<double>(classes);
    dz[labels[i]] -= (1.0f - label_smoothing) / static_cast<float>(n);
    total += log_sum - (1.0 - label_smoothing) * z[labels[i]] - label_smoothing * mean_z;
  }
  return total / static_cast<double>(n);
}

void sgd_update(float* w, const float* g, float* v, int64_t count, float lr, float momentum,
                float weight_decay, bool nesterov, float gradient_scale) {
  if (nesterov) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      const float grad = gradient_scale * g[i] + weight_decay * w[i];
      const float vel = momentum * v[i] + grad;
      v[i] = vel;
      w[i] -= lr * (grad + momentum * vel);
    }
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      const float vel = momentum * v[i] + gradient_scale * g[i] + weight_decay * w[i];
      v[i] = vel;
      w[i] -= lr * vel;
    }
  }
}

void lars_update(float* w, const float* g, float* v, int64_t count, float lr, float momentum, float weight_decay,
                 float eta, bool adapt, bool nesterov, float gradient_scale) {
  float rate = lr, decay = 0.0f;
  if (adapt) {
    double ww = 0, gg = 0;
#pragma omp parallel for simd reduction(+ : ww, gg) schedule(static)
    for (int64_t i = 0; i < count; ++i) {
      const double gi = static_cast<double>(gradient_scale) * g[i];
      ww += static_cast<double>(w[i]) * w[i];
      gg += gi * gi;
    }
    const double w_norm = std::sqrt(ww), g_norm = std::sqrt(gg);
    if (w_norm > 0 && g_norm > 0) rate = static_cast<float>(lr * eta * w_norm / (g_norm + weight_decay * w_norm));
    decay = weight_decay;
  }
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const float grad = rate * (gradient_scale * g[i] + decay * w[i]);
    const float vel = momentum * v[i] + grad;
    v[i] = vel;
    w[i] -= nesterov ? momentum * vel + grad : vel;
  }
}

void update_running_stats(const float* batch_mean, const float* batch_var, float* running_mean,
                          float* running_var, int64_t channels, float momentum,
                          int64_t values_per_channel) {
  const double m = static_cast<double>(values_per_channel);
  const float unbias = m > 1 ? static_cast<float>(m / (m - 1)) : 1.0f;
  for (int64_t c = 0; c < channels; ++c) {
    running_mean[c] = (1 - momentum) * running_mean[c] + momentum * batch_mean[c];
    running_var[c] = (1 - momentum) * running_var[c] + momentum * batch_var[c] * unbias;
  }
}

void relu_backward_accumulate(float* dx, const float* g, const float* y, int64_t count) {
  if (has_avx512()) return relu_sum_loop_avx512<float, relu_sum>(dx, g, y, count);
  relu_sum_loop<float, relu_sum>(dx, g, y, count);
}

void relu_backward_accumulate_bf16(uint16_t* dx, const uint16_t* g, const uint16_t* y, int64_t count) {
  if (has_avx512()) return relu_sum_loop_avx512<uint16_t, relu_sum_bf16>(dx, g, y, count);
  relu_sum_loop<uint16_t, relu_sum_bf16>(dx, g, y, count);
}

}  // namespace cnnbench::cpu
