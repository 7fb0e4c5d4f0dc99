#include "kernels/onednn/nhwc_batch_norm.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

// GCC 12 warns that the intrinsics' own _mm512_undefined placeholders "may be used uninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace cnnbench {
namespace {

#define CNNBENCH_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

constexpr int64_t kLanes = 16;      // channels per zmm of fp32
constexpr int64_t kBlockRows = 64;  // rows summed in fp32 before they join the double sums
constexpr int64_t kRowsAtOnce = 4;  // rows per pass over the fp32 sums (fewer loads and stores of them)

// Per thread: two double sums and two fp32 block sums per channel; then, shared, the per-channel
// values every thread reads in the second pass.
struct Scratch {
  double* sums;     // [threads][2][channels]
  float* block;     // [threads][2][channels]
  float* per_channel;  // [4][channels]: the forward's shift K and a; the backward's a, 1/std, p, q
};

size_t round64(size_t bytes) { return (bytes + 63) / 64 * 64; }

Scratch carve(void* scratch, int64_t channels, int threads) {
  char* p = static_cast<char*>(scratch);
  Scratch s{};
  s.sums = reinterpret_cast<double*>(p);
  p += round64(sizeof(double) * 2 * channels * threads);
  s.block = reinterpret_cast<float*>(p);
  p += round64(sizeof(float) * 2 * channels * threads);
  s.per_channel = reinterpret_cast<float*>(p);
  return s;
}

CNNBENCH_AVX512_BF16 inline __m512 load_bf16(const uint16_t* p) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
}

CNNBENCH_AVX512_BF16 inline void store_bf16(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v)));
}

// Inside a parallel region: this thread (t of n) and its rows [begin, end).
struct ThreadRows {
  int t, n;
  int64_t begin, end;
};
ThreadRows this_threads_rows(int64_t rows) {
  const int t = omp_get_thread_num(), n = omp_get_num_threads();
  return {t, n, rows * t / n, rows * (t + 1) / n};
}

// Sums over rows [begin, end) of two per-channel quantities, f(row, chunk) giving both as
// zmm pairs, into double sums[0..C) and sums[C..2C): fp32 over kBlockRows rows, double across.
// The same where a row's channels fit in registers (up to 128): the fp32 sums stay there.
template <int kChunks, typename Terms>
CNNBENCH_AVX512_BF16 void sum_narrow_rows(int64_t begin, int64_t end, float* block, double* sums, Terms terms) {
  constexpr int64_t channels = kChunks * kLanes;
  std::fill(sums, sums + 2 * channels, 0.0);
  for (int64_t first = begin; first < end; first += kBlockRows) {
    const int64_t last = std::min(end, first + kBlockRows);
    __m512 a[kChunks], b[kChunks];
    for (int j = 0; j < kChunks; ++j) a[j] = b[j] = _mm512_setzero_ps();
    for (int64_t r = first; r < last; ++r)
#pragma GCC unroll 8
      for (int j = 0; j < kChunks; ++j) terms(r, j * kLanes, a[j], b[j]);
    for (int j = 0; j < kChunks; ++j) {
      _mm512_storeu_ps(block + j * kLanes, a[j]);
      _mm512_storeu_ps(block + channels + j * kLanes, b[j]);
    }
    for (int64_t c = 0; c < 2 * channels; ++c) sums[c] += block[c];
  }
}

template <typename Terms>
CNNBENCH_AVX512_BF16 void sum_rows(int64_t begin, int64_t end, int64_t channels, float* block, double* sums,
                                   Terms terms) {
  switch (channels / kLanes) {
    case 1: return sum_narrow_rows<1>(begin, end, block, sums, terms);
    case 2: return sum_narrow_rows<2>(begin, end, block, sums, terms);
    case 3: return sum_narrow_rows<3>(begin, end, block, sums, terms);
    case 4: return sum_narrow_rows<4>(begin, end, block, sums, terms);
    case 5: return sum_narrow_rows<5>(begin, end, block, sums, terms);
    case 6: return sum_narrow_rows<6>(begin, end, block, sums, terms);
    case 7: return sum_narrow_rows<7>(begin, end, block, sums, terms);
    case 8: return sum_narrow_rows<8>(begin, end, block, sums, terms);
    default: break;
  }
  std::fill(sums, sums + 2 * channels, 0.0);
  for (int64_t first = begin; first < end; first += kBlockRows) {
    const int64_t last = std::min(end, first + kBlockRows);
    std::fill(block, block + 2 * channels, 0.0f);
    int64_t r = first;
    for (; r + kRowsAtOnce <= last; r += kRowsAtOnce)
      for (int64_t c = 0; c < channels; c += kLanes) {
        __m512 a = _mm512_loadu_ps(block + c), b = _mm512_loadu_ps(block + channels + c);
        for (int64_t i = 0; i < kRowsAtOnce; ++i) terms(r + i, c, a, b);
        _mm512_storeu_ps(block + c, a);
        _mm512_storeu_ps(block + channels + c, b);
      }
    for (; r < last; ++r)
      for (int64_t c = 0; c < channels; c += kLanes) {
        __m512 a = _mm512_loadu_ps(block + c), b = _mm512_loadu_ps(block + channels + c);
        terms(r, c, a, b);
        _mm512_storeu_ps(block + c, a);
        _mm512_storeu_ps(block + channels + c, b);
      }
    for (int64_t c = 0; c < 2 * channels; ++c) sums[c] += block[c];
  }
}

// Every thread's sums of channel c added in thread order (the same bits whatever the timing).
void total(const double* sums, int64_t channels, int threads, int64_t c, double& first, double& second) {
  first = second = 0;
  for (int t = 0; t < threads; ++t) {
    first += sums[t * 2 * channels + c];
    second += sums[t * 2 * channels + channels + c];
  }
}

}  // namespace

bool nhwc_batch_norm_supported(const NhwcBatchNorm& s) {
  static const bool cpu = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
  return cpu && s.rows > 0 && s.channels > 0 && s.channels % kLanes == 0;
}

size_t nhwc_batch_norm_scratch_bytes(const NhwcBatchNorm& s, int threads) {
  return round64(sizeof(double) * 2 * s.channels * threads) + round64(sizeof(float) * 2 * s.channels * threads) +
         round64(sizeof(float) * 4 * s.channels);
}

CNNBENCH_AVX512_BF16 void nhwc_batch_norm_forward(const NhwcBatchNorm& s, const uint16_t* x, const float* scale,
                                                  const float* shift, uint16_t* y, float* mean, float* variance,
                                                  void* scratch, int threads) {
  const int64_t C = s.channels;
  const Scratch w = carve(scratch, C, threads);
  float* shift_k = w.per_channel;  // the first row: sums of x - K keep the variance from cancelling
  float* a = w.per_channel + C;    // scale / sqrt(var + eps)
  for (int64_t c = 0; c < C; c += kLanes) _mm512_storeu_ps(shift_k + c, load_bf16(x + c));
  const double m = static_cast<double>(s.rows);
#pragma omp parallel num_threads(threads)
  {
    const auto [t, n, begin, end] = this_threads_rows(s.rows);
    sum_rows(begin, end, C, w.block + t * 2 * C, w.sums + t * 2 * C,
             [&](int64_t r, int64_t c, __m512& sum, __m512& squares) CNNBENCH_AVX512_BF16 {
               const __m512 d = _mm512_sub_ps(load_bf16(x + r * C + c), _mm512_loadu_ps(shift_k + c));
               sum = _mm512_add_ps(sum, d);
               squares = _mm512_fmadd_ps(d, d, squares);
             });
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t c = 0; c < C; ++c) {
      double s1, s2;
      total(w.sums, C, n, c, s1, s2);
      const double d = s1 / m;
      mean[c] = static_cast<float>(shift_k[c] + d);
      variance[c] = static_cast<float>(std::max(0.0, s2 / m - d * d));
      a[c] = scale[c] / std::sqrt(variance[c] + s.epsilon);
    }
    // implicit barrier: every channel's mean and a are there
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t r = begin; r < end; ++r)
      for (int64_t c = 0; c < C; c += kLanes) {
        const __m512 centred = _mm512_sub_ps(load_bf16(x + r * C + c), _mm512_loadu_ps(mean + c));
        __m512 v = _mm512_fmadd_ps(centred, _mm512_loadu_ps(a + c), _mm512_loadu_ps(shift + c));
        if (s.relu) v = _mm512_max_ps(v, zero);
        store_bf16(y + r * C + c, v);
      }
  }
}

CNNBENCH_AVX512_BF16 void nhwc_batch_norm_backward(const NhwcBatchNorm& s, const uint16_t* x, const uint16_t* dy,
                                                   const float* mean, const float* variance, const float* scale,
                                                   const float* shift, uint16_t* dx, float* diff_scale,
                                                   float* diff_shift, void* scratch, int threads) {
  const int64_t C = s.channels;
  const Scratch w = carve(scratch, C, threads);
  float* a = w.per_channel;                // scale / sqrt(var + eps), as the forward computed it
  float* inv_std = w.per_channel + C;      // 1 / sqrt(var + eps)
  float* p = w.per_channel + 2 * C;        // dx's coefficient of (x - mean)
  float* q = w.per_channel + 3 * C;        // and its constant
  for (int64_t c = 0; c < C; ++c) {
    a[c] = scale[c] / std::sqrt(variance[c] + s.epsilon);
    inv_std[c] = 1.0f / std::sqrt(variance[c] + s.epsilon);
  }
  const double m = static_cast<double>(s.rows);
  const bool relu = s.relu;
  // dy where the forward's ReLU passed it (bn(x) > 0, recomputed with the forward's arithmetic)
  auto passed = [=](int64_t r, int64_t c, __m512 centred) CNNBENCH_AVX512_BF16 {
    const __m512 g = load_bf16(dy + r * C + c);
    if (!relu) return g;
    const __m512 v = _mm512_fmadd_ps(centred, _mm512_loadu_ps(a + c), _mm512_loadu_ps(shift + c));
    return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), g);
  };
#pragma omp parallel num_threads(threads)
  {
    const auto [t, n, begin, end] = this_threads_rows(s.rows);
    sum_rows(begin, end, C, w.block + t * 2 * C, w.sums + t * 2 * C,
             [&](int64_t r, int64_t c, __m512& sum, __m512& products) CNNBENCH_AVX512_BF16 {
               const __m512 centred = _mm512_sub_ps(load_bf16(x + r * C + c), _mm512_loadu_ps(mean + c));
               const __m512 g = passed(r, c, centred);
               sum = _mm512_add_ps(sum, g);
               products = _mm512_fmadd_ps(g, centred, products);
             });
#pragma omp barrier
#pragma omp for schedule(static)
    for (int64_t c = 0; c < C; ++c) {
      double s1, s2;
      total(w.sums, C, n, c, s1, s2);
      diff_shift[c] = static_cast<float>(s1);
      diff_scale[c] = static_cast<float>(s2 * inv_std[c]);
      p[c] = static_cast<float>(-a[c] * inv_std[c] * (s2 * inv_std[c]) / m);
      q[c] = static_cast<float>(-a[c] * s1 / m);
    }
    for (int64_t r = begin; r < end; ++r)
      for (int64_t c = 0; c < C; c += kLanes) {
        const __m512 centred = _mm512_sub_ps(load_bf16(x + r * C + c), _mm512_loadu_ps(mean + c));
        const __m512 g = passed(r, c, centred);
        const __m512 v = _mm512_fmadd_ps(centred, _mm512_loadu_ps(p + c),
                                         _mm512_fmadd_ps(g, _mm512_loadu_ps(a + c), _mm512_loadu_ps(q + c)));
        store_bf16(dx + r * C + c, v);
      }
  }
}

}  // namespace cnnbench
