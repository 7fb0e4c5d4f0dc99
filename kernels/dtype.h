// kernels/dtype.h — DType (f32, bf16, f16): names, sizes and scalar conversions.
// The 16-bit conversions round to nearest even, as the hardware does.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

namespace cnnbench {

enum class DType { f32, bf16, f16 };

const char* dtype_name(DType t);
std::optional<DType> parse_dtype(const std::string& name);  // "fp32"/"f32", "bf16", "fp16"/"f16"
size_t dtype_size(DType t);

inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16_to_f32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f);
float f16_to_f32(uint16_t h);

}  // namespace cnnbench
