// The end-of-run summary (harness/report/run_summary.cc): its memory line (a CPU plan's working
// memory is part of its peak RSS; a GPU plan's is the device's, and the line must not say it is
// part of an RSS smaller than itself), and the layer table's GFLOP/s (what each layer computes).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/cli/run_settings.h"
#include "harness/report/run_summary.h"
#include "models/graph_builder.h"

namespace cnnbench {
namespace {

template <typename Print>
std::string printed(const Print& print) {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  print(out);
  std::fclose(out);
  std::string result(text, size);
  std::free(text);
  return result;
}

std::string summary_text(const RunSummary& s) {
  RunSettings settings;
  settings.ranks = 1;
  settings.threads = 16;
  return printed([&](FILE* out) { print_summary(out, s, settings); });
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

// The first convolution computes no data gradient (its input is the images): its backward is the
// weight gradient alone, 2 passes of its multiply-adds with the forward, not 3 (it was counted as
// 3, 1.5x the rate it ran at).
TEST(RunSummaryLayers, TheFirstConvolutionsRateCountsNoDataGradient) {
  GraphBuilder b("two_convs", {1, 3, 8, 8});
  const int first = b.conv(b.input(), 4, 3, 1, 1, "first");
  const int second = b.conv(first, 4, 3, 1, 1, "second");
  const Graph g = b.finish(second);
  std::vector<LayerTime> times(g.nodes.size());
  for (const int id : {first, second}) times[id] = {1e-3, 2e-3, 1e-3};  // a step each: 3 ms
  const std::string text = printed([&](FILE* out) { print_layer_table(out, g, times, 1, {}); });
  const auto rate = [&](int id, double passes) {
    return fmt::format("{:.1f}", 2.0 * static_cast<double>(g.nodes[id].forward_macs) * passes / 3e-3 / 1e9);
  };
  const auto line_of = [&](const std::string& name) {
    const size_t at = text.find("\n" + name + " ");
    return at == std::string::npos ? std::string() : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  // the line ends in its GFLOP/s: forward + weight gradient for the first; + the data gradient for the second
  EXPECT_GT(g.nodes[first].forward_macs, 0);
  EXPECT_TRUE(line_of("first").ends_with(" " + rate(first, 2))) << text;
  EXPECT_TRUE(line_of("second").ends_with(" " + rate(second, 3))) << text;
}

}  // namespace
}  // namespace cnnbench
