// Model zoo: parameter counts equal the published ones, output shapes, forward MACs per image.
#include "kernels/backend.h"
#include "models/model_zoo.h"
#include "test_util.h"

namespace cnnbench {
namespace {

struct Expected {
  const char* model;
  int64_t params;
  double gmacs;  // forward multiply-accumulates per image, in 1e9
};

class ModelZoo : public ::testing::TestWithParam<Expected> {};

TEST_P(ModelZoo, ParametersShapesAndMacs) {
  const Expected& e = GetParam();
  const auto info = find_model(e.model);
  ASSERT_TRUE(info.has_value());
  const Graph g = build_model(e.model, 2);
  EXPECT_EQ(g.param_count(), e.params);
  EXPECT_EQ(g.input().out, (Shape{2, info->channels, info->image_size, info->image_size}));
  EXPECT_EQ(g.logits().out, (Shape{2, info->classes, 1, 1}));
  EXPECT_NEAR(g.forward_macs_per_image() / 1e9, e.gmacs, 0.01 * e.gmacs);
}

// Published counts: torchvision for the ImageNet models; He et al. 2015 and the reference
// CIFAR implementations for option-A ResNets (resnet20 269,722 and every 6 more layers 194,432
// more: resnet56 853,018, resnet110 1,727,962); small_cnn is ours (convs 288 + 18,432, batch
// norms 192, fc 401,536 + 1,290); resnet20_fmnist is resnet20 with a 1-channel stem (288 fewer
// weights) on 28 x 28 maps: (28/32)^2 of resnet20's MACs after the stem, plus a stem of 0.11 M.
INSTANTIATE_TEST_SUITE_P(Published, ModelZoo,
                         ::testing::Values(Expected{"vgg11", 132863336, 7.61}, Expected{"vgg16", 138357544, 15.47},
                                           Expected{"vgg19", 143667240, 19.63}, Expected{"resnet18", 11689512, 1.81},
                                           Expected{"resnet34", 21797672, 3.66}, Expected{"resnet50", 25557032, 4.09},
                                           Expected{"resnet101", 44549160, 7.80}, Expected{"resnet152", 60192808, 11.51},
                                           Expected{"resnet20", 269722, 0.0405}, Expected{"resnet32", 464154, 0.0689},
                                           Expected{"resnet44", 658586, 0.0973}, Expected{"resnet56", 853018, 0.1257},
                                           Expected{"resnet110", 1727962, 0.2533}, Expected{"small_cnn", 421738, 0.0042},
                                           Expected{"resnet20_fmnist", 269434, 0.0308}),
                         [](const ::testing::TestParamInfo<Expected>& info) { return std::string(info.param.model); });

TEST(ModelZoo, UnknownModelNamesTheKnownOnes) {
  try {
    build_model("resnet51", 1);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("resnet50"), std::string::npos);
  }
}

TEST(ModelZoo, InitIsReproducible) {
  const Graph g = build_model("resnet20", 2);
  auto a = compile_plan("onednn", g), b = compile_plan("onednn", g);
  init_parameters(a->layout(), a->parameters().data(), a->buffers().data(), 3);
  init_parameters(b->layout(), b->parameters().data(), b->buffers().data(), 3);
  EXPECT_TRUE(std::equal(a->parameters().begin(), a->parameters().end(), b->parameters().begin()));
}

// A whole CIFAR ResNet through both backends: the complete graph, not only single ops.
TEST(ModelZoo, Resnet20MatchesReferenceEndToEnd) {
  const Graph g = build_model("resnet20", 4);
  auto reference = compile_plan("ref", g), fast = compile_plan("onednn", g);
  init_parameters(reference->layout(), reference->parameters().data(), reference->buffers().data(), 9);
  std::copy(reference->parameters().begin(), reference->parameters().end(), fast->parameters().begin());
  std::copy(reference->buffers().begin(), reference->buffers().end(), fast->buffers().begin());
  const auto images = testing::random_vector<float>(g.input().out.elements(), 4);
  const int32_t labels[4] = {1, 7, 3, 3};
  double losses[2];
  int i = 0;
  for (Plan* p : {reference.get(), fast.get()}) {
    p->set_input(images.data());
    p->forward(Mode::training);
    losses[i++] = p->loss(labels).loss;
    p->backward();
  }
  EXPECT_NEAR(losses[1], losses[0], 1e-4 * losses[0]);
  std::vector<float> g_ref(reference->gradients().begin(), reference->gradients().end());
  std::vector<float> g_fast(fast->gradients().begin(), fast->gradients().end());
  EXPECT_TRUE(testing::close("all gradients", g_fast, g_ref, 1e-3));
}

}  // namespace
}  // namespace cnnbench
