// Every op of the oneDNN backend against the reference backend, forward (training and
// inference) and backward (parameter and input gradients), over the real layer shapes of
// ResNet50, VGG16 and CIFAR ResNet-20 with the batch reduced.
#include "op_cases.h"

namespace cnnbench {
namespace {

class OnednnVsRef : public ::testing::TestWithParam<OpCase> {};

TEST_P(OnednnVsRef, ForwardBackwardMatch) { compare_with_reference(GetParam(), DType::f32, 1.0); }

// bf16 keeps 8 significant bits (relative rounding 2^-9 per value): 2% relative L2 error,
// and 15% for the gradients that flow back through batch norm, whose backward subtracts batch
// means of dy and dy * x-hat from dy: a small difference of large bf16-rounded terms; 25% for
// the small network that chains five of them.
class OnednnBf16VsRef : public ::testing::TestWithParam<OpCase> {};

TEST_P(OnednnBf16VsRef, ForwardBackwardMatch) {
  const OpCase& c = GetParam();
  const bool through_batch_norm = c.name.find("_bn") != std::string::npos;
  compare_with_reference(c, DType::bf16, c.name == "tiny_resnet_block" ? 2500.0 : through_batch_norm ? 1500.0 : 200.0);
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
  GraphBuilder b("nhwc", {2, 3, 9, 9});
  const Graph g = b.finish(b.conv(b.input(), 8, 3, 2, 1, "conv", true));
  PlanOptions nchw_options, nhwc_options;
  nchw_options.input_grad = nhwc_options.input_grad = true;
  nhwc_options.input_nhwc = true;
  for (const std::string backend : {"ref", "onednn"}) {
    auto nchw = compile_plan("ref", g, nchw_options);
    auto nhwc = compile_plan(backend, g, nhwc_options);
    randomize(*nchw, 5);
    std::copy(nchw->parameters().begin(), nchw->parameters().end(), nhwc->parameters().begin());
    const auto x = random_vector<float>(2 * 3 * 81, 6);
    std::vector<float> x_nhwc(x.size());
    for (int n = 0; n < 2; ++n)
      for (int c = 0; c < 3; ++c)
        for (int p = 0; p < 81; ++p) x_nhwc[(n * 81 + p) * 3 + c] = x[(n * 3 + c) * 81 + p];
    nchw->set_input(x.data());
    nhwc->set_input(x_nhwc.data());
    const auto dy = random_vector<float>(g.logits().out.elements(), 7);
    for (Plan* p : {nchw.get(), nhwc.get()}) {
      p->forward(Mode::training);
      p->set_output_grad(dy.data());
      p->backward();
    }
    EXPECT_TRUE(testing::close(backend + " output", output_of(*nhwc), output_of(*nchw), 1e-5));
    std::vector<float> dx(x.size()), dx_nhwc(x.size()), dx_expected(x.size());
    nchw->read_input_grad(dx.data());
    nhwc->read_input_grad(dx_nhwc.data());
    for (int n = 0; n < 2; ++n)
      for (int c = 0; c < 3; ++c)
        for (int p = 0; p < 81; ++p) dx_expected[(n * 81 + p) * 3 + c] = dx[(n * 3 + c) * 81 + p];
    EXPECT_TRUE(testing::close(backend + " input gradient", dx_nhwc, dx_expected, 1e-5));
  }
}

}  // namespace
}  // namespace cnnbench
