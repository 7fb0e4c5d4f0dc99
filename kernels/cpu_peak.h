// kernels/cpu_peak.h — this machine's arithmetic peak, measured: every compute thread runs
// independent chains of fused multiply-adds (AVX-512, else AVX2) long enough to hide latency.
// fp32 counts 2 FLOP per FMA lane; bf16 uses AMX's tile product where the CPU has it and Linux
// lends the tiles (16x16x32 multiply-adds an instruction), else the AVX-512 BF16 dot product (4
// FLOP per lane).
#pragma once

#include <string>

#include "kernels/dtype.h"

namespace cnnbench {

struct PeakResult {
  double gflops = 0;       // all threads together
  int threads = 0;
  std::string isa;         // "avx512", "avx2", "amx_bf16", "avx512_bf16", "none"
  bool supported = true;   // false: this CPU has no fast path for the type
};

PeakResult measure_peak(DType type, int threads);

}  // namespace cnnbench
