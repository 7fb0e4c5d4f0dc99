// --layer_timing on the CPU backends: each convolution's and linear layer's weight gradient is
// timed as a part of its backward time (the GPU case is in test_cuda_vs_ref.cc).
#include "kernels/onednn/bf16_weight_grad.h"
#include "layer_timing_check.h"
#include "test_util.h"

namespace cnnbench {
namespace {

TEST(LayerTiming, ReferenceSplitsWeightGradients) {
  auto plan = compile_plan("ref", testing::layer_timing_graph());
  testing::check_weight_grad_split(*plan);
}

TEST(LayerTiming, OnednnSplitsWeightGradients) {
  auto plan = compile_plan("onednn", testing::layer_timing_graph());
  testing::check_weight_grad_split(*plan);
}

TEST(LayerTiming, OnednnBf16SplitsOwnWeightGradients) {
  SKIP_WITHOUT_CPU_BF16();
  PlanOptions options;
  options.compute = DType::bf16;
  auto plan = compile_plan("onednn", testing::layer_timing_graph(), options);
  if (plan->kernel_notes().empty()) GTEST_SKIP() << "this CPU has no AVX-512 BF16: oneDNN's kernels ran";
  testing::check_weight_grad_split(*plan);  // two 1x1 convolutions: cnnbench's kernel, or with AMX matmuls
}

}  // namespace
}  // namespace cnnbench
