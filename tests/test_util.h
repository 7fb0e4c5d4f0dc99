// tests/test_util.h — helpers shared by the tests: seeded random fills and a comparison that
// reports the largest error relative to the largest reference magnitude.
#pragma once

#include <gtest/gtest.h>

#include "kernels/backend.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

// bf16 on the CPU needs AVX-512: elsewhere the bf16 tests skip, saying why (as GPU tests do).
#define SKIP_WITHOUT_CPU_BF16()                                                                     \
  if (!::cnnbench::cpu_computes_bf16())                                                           \
  GTEST_SKIP() << "this CPU has no AVX-512: oneDNN has no bf16 kernels for it"

namespace cnnbench::testing {

template <class T>
std::vector<T> random_vector(size_t n, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

// The message of the exception `f` throws, or "" if it throws none.
// A name as a test parameter's (letters, digits and '_'): "resnet50_v1.5" -> "resnet50_v1_5".
inline std::string param_name(std::string name) {
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// max |a - b| / max |b|: the error on the scale of the reference tensor.
inline double scaled_max_error(const std::vector<float>& actual, const std::vector<float>& expected) {
  double max_err = 0, max_ref = 1e-30;
  for (size_t i = 0; i < expected.size(); ++i) {
    max_err = std::max(max_err, std::fabs(static_cast<double>(actual[i]) - expected[i]));
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(expected[i])));
  }
  return max_err / max_ref;
}

inline ::testing::AssertionResult close(const std::string& what, const std::vector<float>& actual,
                                        const std::vector<float>& expected, double tolerance) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << what << ": sizes differ " << actual.size() << " vs " << expected.size();
  for (size_t i = 0; i < actual.size(); ++i)
    if (!std::isfinite(actual[i])) return ::testing::AssertionFailure() << what << ": element " << i << " is " << actual[i];
  const double err = scaled_max_error(actual, expected);
  if (err <= tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": scaled max error " << err << " > " << tolerance;
}

// ||a - b|| / ||b||, infinite where a holds a non-finite value (or the sizes differ).
inline double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, norm = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return std::numeric_limits<double>::infinity();
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / norm);
}

// relative_l2() within `tolerance`: for low-precision types, where a few elements may legitimately
// differ more (a max-pool window whose two largest values round to the same bf16).
inline ::testing::AssertionResult close_l2(const std::string& what, const std::vector<float>& actual,
                                           const std::vector<float>& expected, double tolerance) {
  if (actual.size() != expected.size()) return ::testing::AssertionFailure() << what << ": sizes differ";
  for (size_t i = 0; i < actual.size(); ++i)
    if (!std::isfinite(actual[i])) return ::testing::AssertionFailure() << what << ": element " << i << " is " << actual[i];
  const double err = relative_l2(actual, expected);
  if (err <= tolerance) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": relative L2 error " << err << " > " << tolerance;
}

}  // namespace cnnbench::testing
