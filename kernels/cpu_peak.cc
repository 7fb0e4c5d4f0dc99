#include "kernels/cpu_peak.h"

#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>

namespace cnnbench {
namespace {

constexpr int kChains = 16;  // independent accumulators: more than latency x FMA units
// AVX2 has 16 vector registers: 16 accumulators and the 2 constants spilled 3 of them to the stack
// every iteration, their chains then running through memory (58.7 GFLOP/s measured against the
// 71.9 oneDNN reached on one thread). 12 cover latency 4 x 2 FMA units with room to spare.
constexpr int kChainsAvx2 = 12;
constexpr long kIterations = 8'000'000;  // ~30 ms a trial at 2 FMA/cycle
constexpr int kTrials = 4;              // the best trial counts: clocks ramp, threads start
volatile float g_sink;  // keeps the compiler from dropping the loops

__attribute__((target("avx512f"))) double fma_avx512() {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < kIterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  alignas(64) float lanes[16];
  float sink = 0;
  for (int i = 0; i < kChains; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    sink += lanes[0];
  }
  g_sink = sink;
  return static_cast<double>(kIterations) * kChains * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fma_avx2() {
  __m256 acc[kChainsAvx2];
  for (int i = 0; i < kChainsAvx2; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < kIterations; ++it)
    for (int i = 0; i < kChainsAvx2; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  alignas(32) float lanes[8];
  float sink = 0;
  for (int i = 0; i < kChainsAvx2; ++i) {
    _mm256_store_ps(lanes, acc[i]);
    sink += lanes[0];
  }
  g_sink = sink;
  return static_cast<double>(kIterations) * kChainsAvx2 * 8 * 2;
}

__attribute__((target("avx512f,avx512bf16"))) double dot_bf16_avx512() {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_setzero_ps();
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3380);
  for (long it = 0; it < kIterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  alignas(64) float lanes[16];
  float sink = 0;
  for (int i = 0; i < kChains; ++i) {
    _mm512_store_ps(lanes, acc[i]);
    sink += lanes[0];
  }
  g_sink = sink;
  // each of 16 lanes does two bf16 multiply-adds: 4 FLOP
  return static_cast<double>(kIterations) * kChains * 16 * 4;
}

// AMX: Linux lends a process the tile registers only once it asks (oneDNN asks too); a kernel
// or hypervisor that refuses leaves the AVX-512 BF16 peak.
bool amx_bf16_permitted() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;  // CPUID 7.0 EDX: bit 22 AMX-BF16, bit 24 AMX-TILE
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 22)) || !(edx & (1u << 24))) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

constexpr long kAmxIterations = 600'000;  // 4 tile products an iteration, ~16 cycles each: ~20 ms

// Four independent 16x16 fp32 accumulator tiles, each += a 16x32 bf16 tile times a 32x16 one:
// 16 x 16 x 32 multiply-adds (16,384 FLOP) an instruction, as oneDNN's AMX convolutions issue them.
__attribute__((target("amx-tile,amx-bf16"))) double dot_bf16_amx() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.bytes_per_row[t] = 64;
  }
  _tile_loadconfig(&config);
  alignas(64) static const auto operands = [] {
    std::array<uint16_t, 16 * 32> a{};
    a.fill(0x3380);  // 6e-8 in bf16: the sums stay small and normal
    return a;
  }();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operands.data(), 64);
  _tile_loadd(5, operands.data(), 64);
  _tile_loadd(6, operands.data(), 64);
  _tile_loadd(7, operands.data(), 64);
  for (long it = 0; it < kAmxIterations; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float sums[16 * 16];
  _tile_stored(0, sums, 64);
  _tile_release();
  g_sink = sums[0];
  return static_cast<double>(kAmxIterations) * 4 * 16 * 16 * 32 * 2;
}

}  // namespace

PeakResult measure_peak(DType type, int threads) {
  __builtin_cpu_init();
  PeakResult result;
  result.threads = threads;
  double (*kernel)() = nullptr;
  if (type == DType::bf16) {
    // the tile unit where there is one: oneDNN's bf16 convolutions and matmuls run on it
    if (amx_bf16_permitted()) {
      kernel = dot_bf16_amx;
      result.isa = "amx_bf16";
    } else if (__builtin_cpu_supports("avx512bf16")) {
      kernel = dot_bf16_avx512;
      result.isa = "avx512_bf16";
    }
  } else if (type == DType::f32) {
    if (__builtin_cpu_supports("avx512f")) {
      kernel = fma_avx512;
      result.isa = "avx512";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      kernel = fma_avx2;
      result.isa = "avx2";
    }
  }
  if (!kernel) {
    result.supported = false;
    result.isa = "none";
    return result;
  }
  for (int trial = 0; trial < kTrials; ++trial) {
    double flops = 0;
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    flops += kernel();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result.gflops = std::max(result.gflops, flops / seconds / 1e9);
  }
  return result;
}

}  // namespace cnnbench
