#include "comm/wire_cast.h"

#include <immintrin.h>

#include "kernels/dtype.h"

namespace cnnbench {
namespace {

bool has_f16c() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
  }();
  return yes;
}

__attribute__((target("avx,f16c"))) void to_f16_f16c(const float* src, uint16_t* dst, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < count; ++i) dst[i] = f32_to_f16(src[i]);
}

__attribute__((target("avx,f16c"))) void from_f16_f16c(const uint16_t* src, float* dst, size_t count, float scale) {
  size_t i = 0;
  const __m256 s = _mm256_set1_ps(scale);
  for (; i + 8 <= count; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_mul_ps(s, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)))));
  for (; i < count; ++i) dst[i] = scale * f16_to_f32(src[i]);
}

__attribute__((target("avx,f16c"))) void sum_f16_f16c(const uint16_t* in, uint16_t* inout, size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(inout + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(inout + i),
                     _mm256_cvtps_ph(_mm256_add_ps(a, b), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < count; ++i) inout[i] = f32_to_f16(f16_to_f32(in[i]) + f16_to_f32(inout[i]));
}

}  // namespace

void cast_to_wire(const float* src, uint16_t* dst, size_t count, WireType type) {
  if (type == WireType::f16 && has_f16c()) return to_f16_f16c(src, dst, count);
  if (type == WireType::f16) {
    for (size_t i = 0; i < count; ++i) dst[i] = f32_to_f16(src[i]);
    return;
  }
#pragma omp simd
  for (size_t i = 0; i < count; ++i) dst[i] = f32_to_bf16(src[i]);
}

void cast_from_wire(const uint16_t* src, float* dst, size_t count, WireType type, float scale) {
  if (type == WireType::f16 && has_f16c()) return from_f16_f16c(src, dst, count, scale);
  if (type == WireType::f16) {
    for (size_t i = 0; i < count; ++i) dst[i] = scale * f16_to_f32(src[i]);
    return;
  }
#pragma omp simd
  for (size_t i = 0; i < count; ++i) dst[i] = scale * bf16_to_f32(src[i]);
}

void sum_wire16(const uint16_t* in, uint16_t* inout, size_t count, WireType type) {
  if (type == WireType::f16 && has_f16c()) return sum_f16_f16c(in, inout, count);
  if (type == WireType::f16) {
    for (size_t i = 0; i < count; ++i) inout[i] = f32_to_f16(f16_to_f32(in[i]) + f16_to_f32(inout[i]));
    return;
  }
#pragma omp simd
  for (size_t i = 0; i < count; ++i) inout[i] = f32_to_bf16(bf16_to_f32(in[i]) + bf16_to_f32(inout[i]));
}

}  // namespace cnnbench
