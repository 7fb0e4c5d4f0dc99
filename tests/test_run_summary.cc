// The end-of-run summary's memory line (harness/report/run_summary.cc): a CPU plan's working
// memory is part of its peak RSS; a GPU plan's is the device's, and the line must not say it is
// part of an RSS smaller than itself.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/cli/run_settings.h"
#include "harness/report/run_summary.h"

namespace cnnbench {
namespace {

std::string summary_text(const RunSummary& s) {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  RunSettings settings;
  settings.ranks = 1;
  settings.threads = 16;
  print_summary(out, s, settings);
  std::fclose(out);
  std::string result(text, size);
  std::free(text);
  return result;
}

RunSummary with_memory(bool on_device) {
  RunSummary s;
  s.timed_steps = 60;
  s.images_per_sec = 5588.55;
  s.step_mean_sec = 0.0458;
  s.peak_rss_bytes = int64_t{3} << 30;
  s.working_memory_bytes = int64_t{8} << 30;
  s.unshared_working_memory_bytes = int64_t{15} << 30;
  s.working_memory_on_device = on_device;
  if (on_device) s.peak_device_memory_bytes = int64_t{11} << 30;
  return s;
}

TEST(RunSummaryMemory, CpuWorkingMemoryIsPartOfTheRss) {
  const std::string text = summary_text(with_memory(false));
  EXPECT_NE(text.find("peak RSS 3.00 GiB per rank, of which working memory 8.00 GiB (15.00 GiB without sharing)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("GPU"), std::string::npos) << text;
}

TEST(RunSummaryMemory, GpuWorkingMemoryIsTheDevicesNotTheRss) {
  const std::string text = summary_text(with_memory(true));
  EXPECT_EQ(text.find("of which"), std::string::npos) << text;
  EXPECT_NE(text.find("peak RSS 3.00 GiB per rank; working memory on the GPU 8.00 GiB (15.00 GiB without sharing); "
                      "GPU memory in use at most 11.00 GiB"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace cnnbench
