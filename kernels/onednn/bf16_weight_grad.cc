#include "kernels/onednn/bf16_weight_grad.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <type_traits>

namespace cnnbench {
namespace {

// The sum runs over positions k = (n, y, x) taken in pairs, the operand order of vdpbf16ps.
// Of the two tensors, the one with fewer channels ("narrow") is interleaved chunk by chunk into
// scratch, [pair][channel][2], and broadcast one channel at a time; the other ("wide") is read
// straight from the activations, two 16-channel rows per pair, and interleaved in registers.
// Threads split the wide tensor's channel blocks (or, with too few of them, the narrow one's).
constexpr int64_t kBlock = 16;     // channels per block, in the layout and in a zmm of fp32
constexpr int kRows = 6;           // narrow channels per register tile
constexpr int kCols = 4;           // wide 16-channel blocks per register tile
constexpr int64_t kChunkBytes = 512 << 10;  // a chunk's interleaved narrow rows and a tile's wide rows, in L2

#define CNNBENCH_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

struct Side {
  const uint16_t* data;
  BlockedLayout layout;
  int64_t channels, stride;  // stride: positions are read at (y * stride, x * stride)
};

// Threads split the wide tensor's groups of kCols blocks; where there are fewer groups than
// threads, they split the narrow tensor's blocks instead.
struct Split {
  int threads;
  bool split_wide;
  int64_t wide_groups, narrow_blocks;
  int64_t positions, total_pairs, pairs;
  size_t narrow_bytes, rows_bytes, per_thread, out_bytes;
};

size_t round64(size_t bytes) { return (bytes + 63) / 64 * 64; }

int64_t narrow_channels(const WeightGrad1x1& s) { return std::min(s.ic, s.oc); }
int64_t wide_channels(const WeightGrad1x1& s) { return std::max(s.ic, s.oc); }

Split split(const WeightGrad1x1& s, int threads) {
  Split p{};
  p.wide_groups = wide_channels(s) / (kBlock * kCols);
  p.narrow_blocks = narrow_channels(s) / kBlock;
  p.split_wide = p.wide_groups >= threads || p.wide_groups >= p.narrow_blocks;
  const int64_t parts = p.split_wide ? p.wide_groups : p.narrow_blocks;
  p.threads = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, parts)));
  p.positions = s.n * s.oh * s.ow;
  p.total_pairs = (p.positions + 1) / 2;
  const int64_t bytes_per_pair = (narrow_channels(s) + kCols * kBlock) * 2 * static_cast<int64_t>(sizeof(uint16_t));
  p.pairs = std::min(p.total_pairs, std::clamp<int64_t>(static_cast<int64_t>(kChunkBytes) / bytes_per_pair, 64, 1024));
  p.narrow_bytes = round64(p.pairs * narrow_channels(s) * 2 * sizeof(uint16_t));
  p.rows_bytes = round64(p.pairs * 2 * sizeof(int64_t));
  p.per_thread = p.narrow_bytes + 2 * p.rows_bytes;
  // when the wide side is the output channels, the tile computes dW transposed: it lands here
  p.out_bytes = s.oc > s.ic ? round64(s.ic * s.oc * sizeof(float)) : 0;
  return p;
}

// Element offsets of the rows holding positions first .. first + count - 1 (a position past
// the end repeats the one before it: its partner in the other tensor is zero).
void row_offsets(const WeightGrad1x1& s, const Side& side, int64_t first, int64_t count, int64_t positions,
                 int64_t* rows) {
  const int64_t plane = s.oh * s.ow;
  int64_t k = std::min(first, positions - 1);
  int64_t n = k / plane, y = k % plane / s.ow, x = k % s.ow;
  const int64_t step_x = side.stride * side.layout.stride_w, step_y = side.stride * side.layout.stride_h;
  int64_t row = n * side.layout.stride_n + y * step_y + x * step_x;
  for (int64_t i = 0; i < count; ++i) {
    rows[i] = row;
    if (++k >= positions) continue;  // stay on the last position
    row += step_x;
    if (++x == s.ow) {
      x = 0;
      row += step_y - s.ow * step_x;
      if (++y == s.oh) {
        y = 0;
        ++n;
        row = n * side.layout.stride_n;
      }
    }
  }
}

CNNBENCH_AVX512_BF16 __m512i pair_order() {
  alignas(64) uint16_t order[32];
  for (int j = 0; j < 16; ++j) {
    order[2 * j] = static_cast<uint16_t>(j);
    order[2 * j + 1] = static_cast<uint16_t>(32 + j);
  }
  return _mm512_load_si512(order);
}

// Rows r0 and r1 of 16 channels, interleaved: c0 of r0, c0 of r1, c1 of r0, ...
CNNBENCH_AVX512_BF16 inline __m512i interleave_rows(const uint16_t* r0, const uint16_t* r1, __m512i order) {
  return _mm512_permutex2var_epi16(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0))),
                                   order,
                                   _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1))));
}

// out[q][c][2] for every narrow channel c; positions past the end (odd count) are zeros.
CNNBENCH_AVX512_BF16 void interleave_narrow(const Side& side, int64_t b0, int64_t b1, const int64_t* rows,
                                            int64_t pairs, int64_t valid, uint16_t* out) {
  const __m512i order = pair_order();
  for (int64_t q = 0; q < pairs; ++q)
    for (int64_t b = b0; b < b1; ++b) {
      const uint16_t* base = side.data + b * side.layout.stride_cb;
      __m512i v = interleave_rows(base + rows[2 * q], base + rows[2 * q + 1], order);
      if (2 * q + 1 >= valid) v = _mm512_maskz_mov_epi16(0x55555555u, v);  // keep only the first position
      _mm512_storeu_si512(out + (q * side.channels + b * kBlock) * 2, v);
    }
}

// out[r][c*16 + j] (+)= sum over pairs q of narrow(q, r) . wide(q, block c, channel j).
template <int R>
CNNBENCH_AVX512_BF16 void tile(const uint16_t* narrow, int64_t narrow_pair_stride, const uint16_t* wide,
                               int64_t block_stride, const int64_t* rows, int64_t pairs, float* out, int64_t ldo,
                               bool first) {
  const __m512i order = pair_order();
  __m512 acc[R][kCols];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < kCols; ++c)
      acc[r][c] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(out + r * ldo + c * kBlock);
  for (int64_t q = 0; q < pairs; ++q) {
    const uint16_t* r0 = wide + rows[2 * q];
    const uint16_t* r1 = wide + rows[2 * q + 1];
    __m512bh w[kCols];
#pragma GCC unroll 4
    for (int c = 0; c < kCols; ++c)
      w[c] = reinterpret_cast<__m512bh>(interleave_rows(r0 + c * block_stride, r1 + c * block_stride, order));
    const int32_t* a = reinterpret_cast<const int32_t*>(narrow + q * narrow_pair_stride);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512bh v = reinterpret_cast<__m512bh>(_mm512_set1_epi32(a[r]));
#pragma GCC unroll 4
      for (int c = 0; c < kCols; ++c) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], v, w[c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < kCols; ++c) _mm512_storeu_ps(out + r * ldo + c * kBlock, acc[r][c]);
}

template <int R>
void tile_rows(int rows_left, const uint16_t* narrow, int64_t narrow_pair_stride, const uint16_t* wide,
               int64_t block_stride, const int64_t* rows, int64_t pairs, float* out, int64_t ldo, bool first) {
  if constexpr (R > 0) {
    if (rows_left == R) return tile<R>(narrow, narrow_pair_stride, wide, block_stride, rows, pairs, out, ldo, first);
    tile_rows<R - 1>(rows_left, narrow, narrow_pair_stride, wide, block_stride, rows, pairs, out, ldo, first);
  }
}

void run_thread(const WeightGrad1x1& s, const Split& p, int t, const Side& narrow, const Side& wide, float* out,
                int64_t ldo, char* scratch) {
  int64_t g0 = 0, g1 = p.wide_groups, b0 = 0, b1 = p.narrow_blocks;
  if (p.split_wide) {
    g0 = p.wide_groups * t / p.threads;
    g1 = p.wide_groups * (t + 1) / p.threads;
  } else {
    b0 = p.narrow_blocks * t / p.threads;
    b1 = p.narrow_blocks * (t + 1) / p.threads;
  }
  if (g0 >= g1 || b0 >= b1) return;
  char* mine = scratch + p.per_thread * t;
  auto* interleaved = reinterpret_cast<uint16_t*>(mine);
  auto* narrow_rows = reinterpret_cast<int64_t*>(mine + p.narrow_bytes);
  auto* wide_rows = reinterpret_cast<int64_t*>(mine + p.narrow_bytes + p.rows_bytes);
  const int64_t r0 = b0 * kBlock, r1 = b1 * kBlock;
  for (int64_t q0 = 0; q0 < p.total_pairs; q0 += p.pairs) {
    const int64_t pairs = std::min(p.pairs, p.total_pairs - q0);
    row_offsets(s, narrow, 2 * q0, 2 * pairs, p.positions, narrow_rows);
    row_offsets(s, wide, 2 * q0, 2 * pairs, p.positions, wide_rows);
    interleave_narrow(narrow, b0, b1, narrow_rows, pairs, p.positions - 2 * q0, interleaved);
    for (int64_t g = g0; g < g1; ++g) {
      const int64_t block = g * kCols;
      const uint16_t* w = wide.data + block * wide.layout.stride_cb;
      for (int64_t r = r0; r < r1; r += kRows)
        tile_rows<kRows>(static_cast<int>(std::min<int64_t>(kRows, r1 - r)), interleaved + 2 * r,
                         narrow.channels * 2, w, wide.layout.stride_cb, wide_rows, pairs,
                         out + r * ldo + block * kBlock, ldo, q0 == 0);
    }
  }
}

bool fits(const BlockedLayout& l) { return l.block == kBlock && l.stride_w == kBlock; }

}  // namespace

bool weight_grad_1x1_supported(const WeightGrad1x1& s) {
  static const bool cpu = __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw");
  return cpu && s.n > 0 && s.oh > 0 && s.ow > 0 && s.stride >= 1 && s.ic > 0 && s.oc > 0 && s.ic % kBlock == 0 &&
         s.oc % kBlock == 0 && wide_channels(s) % (kBlock * kCols) == 0 && fits(s.src) && fits(s.diff_dst);
}

size_t weight_grad_1x1_scratch_bytes(const WeightGrad1x1& shape, int threads) {
  const Split p = split(shape, threads);
  return p.per_thread * p.threads + p.out_bytes;
}

void weight_grad_1x1(const WeightGrad1x1& s, const uint16_t* src, const uint16_t* diff_dst, float* diff_weights,
                     void* scratch, int threads) {
  const Split p = split(s, threads);
  const Side x{src, s.src, s.ic, s.stride}, dy{diff_dst, s.diff_dst, s.oc, 1};
  const bool wide_is_dy = s.oc > s.ic;
  char* bytes = static_cast<char*>(scratch);
  // the tile's output: dW itself (rows oc, columns ic), or dW transposed (rows ic, columns oc)
  float* out = wide_is_dy ? reinterpret_cast<float*>(bytes + p.per_thread * p.threads) : diff_weights;
  const int64_t ldo = wide_is_dy ? s.oc : s.ic;
#pragma omp parallel num_threads(p.threads)
  {
    for (int t = omp_get_thread_num(); t < p.threads; t += omp_get_num_threads())
      run_thread(s, p, t, wide_is_dy ? x : dy, wide_is_dy ? dy : x, out, ldo, bytes);
    if (wide_is_dy) {
#pragma omp barrier
#pragma omp for schedule(static)
      for (int64_t o = 0; o < s.oc; ++o)
        for (int64_t i = 0; i < s.ic; ++i) diff_weights[o * s.ic + i] = out[i * s.oc + o];
    }
  }
}

}  // namespace cnnbench
