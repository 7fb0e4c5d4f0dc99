// kernels/cpu_ops.h — the fast host kernels the CPU backend runs between oneDNN primitives:
// softmax cross-entropy with its gradient, the SGD update, batch-norm running statistics, a
// ReLU's backward fused with a gradient sum. OpenMP-parallel and vectorized; tested against
// kernels/ref/.
#pragma once

#include <cstdint>

namespace cnnbench::cpu {

// Returns the mean loss; writes d(mean loss)/d(logits) into dlogits (may alias nothing). With
// label_smoothing s, the target is (1 - s) on the label and s / classes on every class.
double softmax_cross_entropy(const float* logits, const int32_t* labels, float* dlogits,
                             int64_t n, int64_t classes, float label_smoothing = 0.0f);

// g is multiplied by gradient_scale first (the inverse loss scale).
void sgd_update(float* w, const float* g, float* v, int64_t count, float lr, float momentum,
                float weight_decay, bool nesterov, float gradient_scale = 1.0f);

// LARS on one tensor (SgdConfig::lars): g' = gradient_scale * g (+ weight_decay * w when
// `adapt`), rate = lr * (adapt ? trust ratio : 1) with trust ratio = eta |w| / (|g| + wd |w|)
// (1 when either norm is 0), v = momentum * v + rate * g', w -= nesterov ? momentum * v + rate * g' : v.
void lars_update(float* w, const float* g, float* v, int64_t count, float lr, float momentum, float weight_decay,
                 float eta, bool adapt, bool nesterov, float gradient_scale = 1.0f);

// running = (1 - momentum) * running + momentum * batch; the variance unbiased by m / (m - 1).
void update_running_stats(const float* batch_mean, const float* batch_var, float* running_mean,
                          float* running_var, int64_t channels, float momentum,
                          int64_t values_per_channel);

// dx = y > 0 ? dx + g : 0 — the in-place backward of a ReLU (y its output) whose gradient
// still had g to be summed into it: one pass instead of a sum and a mask.
void relu_backward_accumulate(float* dx, const float* g, const float* y, int64_t count);
// The same on bf16 bit patterns, the sum rounded to nearest even.
void relu_backward_accumulate_bf16(uint16_t* dx, const uint16_t* g, const uint16_t* y, int64_t count);

}  // namespace cnnbench::cpu
