// kernels/top_k.h — counts images whose label is among the k largest logits (plain n x classes).
// An image with a NaN logit counts as wrong (a diverged run must not score 100%: NaN compares
// false, so it would never be "larger"). Ties go to the lower class, as a sort that keeps order
// (PyTorch's topk) ranks them: a network whose logits are all equal (dead, or saturated at +inf)
// scores the share of label 0, not 100%. Throws std::out_of_range for a label outside [0, classes).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace cnnbench {

inline int64_t count_top_k(const float* logits, const int32_t* labels, int64_t n, int64_t classes,
                           int64_t k) {
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= classes)
      throw std::out_of_range("label " + std::to_string(labels[i]) + " of image " +
                              std::to_string(i) + " is outside [0, " + std::to_string(classes) + ")");
    const float* z = logits + i * classes;
    const float target = z[labels[i]];
    int64_t larger = 0;  // ranked ahead of the label: larger, or equal and of a lower class
    bool nan = false;
    for (int64_t c = 0; c < classes; ++c) {
      larger += z[c] > target || (z[c] == target && c < labels[i]);
      nan |= z[c] != z[c];
    }
    correct += larger < k && !nan;
  }
  return correct;
}

}  // namespace cnnbench
