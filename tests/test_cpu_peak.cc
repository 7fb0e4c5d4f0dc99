// kernels/cpu_peak: each type's peak is measured on the unit its kernels run on, so that a run's
// "% of the measured peak" compares like with like (a bf16 run on AMX against AVX-512 BF16's
// peak once reported 478 GFLOP/s "above the peak", blaming a busy machine).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "kernels/cpu_peak.h"

namespace cnnbench {
namespace {

// The kernel's view: /proc/cpuinfo lists a feature only where the CPU has it and Linux enables it.
std::set<std::string> cpu_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::set<std::string> flags;
      for (std::string w; words >> w;) flags.insert(w);
      return flags;
    }
  return {};
}

TEST(CpuPeak, Bf16IsMeasuredOnTheTileUnitWhereTheCpuHasOne) {
  const std::set<std::string> flags = cpu_flags();
  const PeakResult peak = measure_peak(DType::bf16, 1);
  if (flags.count("amx_bf16") && flags.count("amx_tile")) {
    EXPECT_EQ(peak.isa, "amx_bf16");
  } else if (flags.count("avx512_bf16")) {
    EXPECT_EQ(peak.isa, "avx512_bf16");
  } else {
    EXPECT_FALSE(peak.supported);
    EXPECT_EQ(peak.isa, "none");
    return;
  }
  EXPECT_TRUE(peak.supported);
  EXPECT_EQ(peak.threads, 1);
  EXPECT_TRUE(std::isfinite(peak.gflops) && peak.gflops > 0) << peak.gflops;
}

TEST(CpuPeak, Fp32IsMeasuredWithTheWidestFma) {
  const std::set<std::string> flags = cpu_flags();
  const PeakResult peak = measure_peak(DType::f32, 2);
  if (flags.count("avx512f"))
    EXPECT_EQ(peak.isa, "avx512");
  else if (flags.count("avx2") && flags.count("fma"))
    EXPECT_EQ(peak.isa, "avx2");
  else
    EXPECT_FALSE(peak.supported);
  if (peak.supported) EXPECT_TRUE(std::isfinite(peak.gflops) && peak.gflops > 0) << peak.gflops;
}

}  // namespace
}  // namespace cnnbench
