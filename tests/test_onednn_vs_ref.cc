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

}  // namespace
}  // namespace cnnbench
