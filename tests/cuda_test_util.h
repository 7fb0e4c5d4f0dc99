// tests/cuda_test_util.h — what the tests of the cuda kernels share: drawn values, host vectors
// to and from device buffers, and values in the device's element types (fp32, fp16, bf16).
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/dtype.h"

namespace cnnbench {

inline std::vector<float> random_values(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

template <typename T>
inline cuda::DeviceBuffer on_device(const std::vector<T>& host) {
  cuda::DeviceBuffer b(host.size() * sizeof(T));
  b.upload(host.data(), host.size() * sizeof(T));
  return b;
}

template <typename T>
inline std::vector<T> to_host(const cuda::DeviceBuffer& b, size_t n) {
  std::vector<T> host(n);
  b.download(host.data(), n * sizeof(T));
  return host;
}

// host floats <-> the device's elements of `type`, `offset` elements into a buffer
inline cuda::DeviceBuffer upload_as(DType type, const std::vector<float>& v, int64_t offset) {
  const size_t es = dtype_size(type);
  cuda::DeviceBuffer b((v.size() + offset) * es);
  std::vector<uint8_t> bytes((v.size() + offset) * es, 0);
  for (size_t i = 0; i < v.size(); ++i) {
    if (type == DType::f32) std::memcpy(&bytes[(i + offset) * es], &v[i], 4);
    const uint16_t h = type == DType::f16 ? f32_to_f16(v[i]) : f32_to_bf16(v[i]);
    if (type != DType::f32) std::memcpy(&bytes[(i + offset) * es], &h, 2);
  }
  b.upload(bytes.data(), bytes.size());
  return b;
}

inline std::vector<float> download_as(DType type, const cuda::DeviceBuffer& b, size_t n, int64_t offset) {
  const size_t es = dtype_size(type);
  std::vector<uint8_t> bytes((n + offset) * es);
  b.download(bytes.data(), bytes.size());
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    uint16_t h = 0;
    if (type == DType::f32) std::memcpy(&v[i], &bytes[(i + offset) * es], 4);
    if (type != DType::f32) std::memcpy(&h, &bytes[(i + offset) * es], 2);
    if (type == DType::f16) v[i] = f16_to_f32(h);
    if (type == DType::bf16) v[i] = bf16_to_f32(h);
  }
  return v;
}

inline float round_to(DType type, float x) {
  return type == DType::f16 ? f16_to_f32(f32_to_f16(x)) : type == DType::bf16 ? bf16_to_f32(f32_to_bf16(x)) : x;
}

}  // namespace cnnbench
