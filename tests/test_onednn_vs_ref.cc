// Every op of the oneDNN backend against the reference backend, forward (training and
// inference) and backward (parameter and input gradients), over the real layer shapes of
// ResNet50, VGG16 and CIFAR ResNet-20 with the batch reduced.
#include "op_cases.h"
#include "test_util.h"

namespace cnnbench {
namespace {

class OnednnVsRef : public ::testing::TestWithParam<OpCase> {};

TEST_P(OnednnVsRef, ForwardBackwardMatch) { compare_with_reference(GetParam(), DType::f32, 1.0); }

// bf16 keeps 8 significant bits (relative rounding 2^-9 per value): 2% relative L2 error,
// and 15% for the gradients that flow back through batch norm, whose backward subtracts batch
// means of dy and dy * x-hat from dy: a small difference of large bf16-rounded terms; 25% for
// the small network that chains five of them.
class OnednnBf16VsRef : public ::testing::TestWithParam<OpCase> {
 protected:
  void SetUp() override { SKIP_WITHOUT_CPU_BF16(); }
};

TEST_P(OnednnBf16VsRef, ForwardBackwardMatch) {
  compare_with_reference(GetParam(), DType::bf16, bf16_tolerance_scale(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Shapes, OnednnVsRef, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(Shapes, OnednnBf16VsRef, ::testing::ValuesIn(bf16_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; });

}  // namespace
}  // namespace cnnbench

namespace cnnbench {
namespace {

// NHWC input (--data_format=NHWC) gives the same logits and input gradient as NCHW input.
TEST(OnednnVsRefLayouts, NhwcInputMatchesNchw) {
  for (const std::string backend : {"ref", "onednn"}) check_nhwc_input_matches_nchw(backend, 1e-5);
}

// oneDNN 2.6 has no JIT weight gradient for depthwise filters past 3x3: cnnbench's kernel takes
// them (the op cases above check its values), and leaves the 3x3 ones to oneDNN.
TEST(OnednnDepthwiseWeightGrad, TakesTheFiltersOnednnLoopsOver) {
  for (const auto& [name, taken] : {std::pair<std::string, bool>{"nasnet_depthwise_k5s1p2_44x14", true},
                                    {"nasnet_depthwise_k7s2p3_22x15", true}}) {
    auto plan = compile_plan("onednn", op_case(name).build(), PlanOptions{});
    EXPECT_EQ(plan->kernel_notes().find("depthwise weight-gradient kernel on 1 convolution") != std::string::npos, taken)
        << name << ": " << plan->kernel_notes();
  }
  GraphBuilder b("dw3", {2, 32, 14, 14});
  auto plan = compile_plan("onednn", b.finish(b.depthwise_conv(b.input(), 3, 1, 1, "depthwise")), PlanOptions{});
  EXPECT_EQ(plan->kernel_notes().find("depthwise"), std::string::npos) << plan->kernel_notes();
}

}  // namespace
}  // namespace cnnbench
