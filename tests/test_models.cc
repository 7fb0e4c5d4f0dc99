// Model zoo: parameter counts equal the published ones, output shapes, forward MACs per image.
#include "kernels/backend.h"
#include "kernels/bn_add_relu.h"
#include "kernels/conv_bn_relu.h"
#include "models/graph_builder.h"
#include "op_cases.h"
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
                         [](const ::testing::TestParamInfo<Expected>& info) { return testing::param_name(info.param.model); });

// tf_cnn_benchmarks' ResNet versions, counted from its definition (models/resnet_model.py):
// - v1.5 is resnet50 under its tf_cnn_benchmarks name.
// - v1 moves each stage's stride from the first block's 3x3 to its first 1x1: the same weights,
//   and per stage 2-4 a 1x1 of 102.76 M MACs at full size that now runs at a quarter (25.69 M):
//   231.2 M fewer, 3.858 GMACs for resnet50 (the 3.86 G published for ResNet-50 v1).
// - v2 (pre-activation) keeps v1's convolutions (resnet50: 25,557,032 - 2,049,000 fc - 53,120
//   batch-norm parameters = 23,454,912 conv weights) with other batch norms: the stem's (64
//   channels), each block's pre-activation over its input channels (resnet50: 64 + 256 x 2,
//   256 + 512 x 3, 512 + 1024 x 5, 1024 + 2048 x 2 = 13,120), after each block's first two
//   convolutions (2 x width: 7,552), and the final one (2048): 22,784 channels, 45,568
//   parameters; 23,454,912 + 45,568 + 2,049,000 = 25,549,480. resnet101_v2: 42,394,816 conv
//   weights + 2 x 48,896 + 2,049,000 = 44,541,608; resnet152_v2: 57,992,384 + 2 x 71,936 +
//   2,049,000 = 60,185,256.
// - googlenet (models/googlenet_model.py there): every convolution with a bias, no batch norm, no
//   auxiliary heads: the stem's 9,472 + 4,160 + 110,784 weights and biases, the nine inception
//   modules' 5,849,136 (3a: 163,696 ... 5b: 1,444,080), the 1024 -> 1000 layer's 1,025,000:
//   6,998,552 (the paper's "about 6.8 M" without biases); 1.583 GMACs (the paper's 1.5 G).
// - inception3 (models/inception_model.py there, Inceptionv3Model): the convolutions without bias,
//   each with batch norm, no auxiliary head: torchvision's inception_v3 without its auxiliary head,
//   23,834,568 parameters, 5.713 GMACs at 299 x 299 (torchvision's published 5.71 GFLOPS). tf_cnn's
//   batch norm learns no scale (17,216 fewer: 23,817,352); cnnbench's does (models/inception.cc).
// - mobilenet (models/tf1_only/mobilenet_v2.py there, slim's V2_DEF): torchvision's mobilenet_v2
//   (3,504,872 parameters, 0.30 GMACs published) plus the classes x classes layer tf_cnn_benchmarks'
//   CNNModel puts after slim's logits: 1000 x 1000 + 1000 = 1,001,000; 4,505,872 and 0.302 GMACs.
// - alexnet (models/alexnet_model.py there): convolutions 11x11x3x64, 5x5x64x192, 3x3x192x384,
//   3x3x384x384, 3x3x384x256 with biases (2,207,104), fully connected 9216 -> 4096 -> 4096 -> 1000
//   with biases (58,631,144): 61,838,248 (torchvision's, with 384 -> 256 -> 256 channels, has
//   61,100,840); 0.839 GMACs at 227 x 227 (55, 27, 13, 13, 13 positions a side).
// - densenet40_k12, densenet100_k12, densenet100_k24 (the paper's network; models/densenet_model.py
//   there narrows each transition to 2k channels, 357,322 / 2,217,002 / 8,659,178): a stem of
//   3 x 9 x 16 + 16; each dense layer over c channels 2c (batch norm) + 9ck + k; each transition
//   over c channels 2c + c^2 + c; the final batch norm 2c and the linear layer 10c + 10, with c
//   growing from 16 by k a layer. 40_k12 (c = 160, 304, 448 after the blocks): 1,020,634; 100_k12:
//   6,981,994; 100_k24: 27,253,738 (Huang et al. 2017: 1.0 M, 7.0 M, 27.2 M). MACs: each layer
//   at 32^2, 16^2 or 8^2 positions, 0.265, 1.770 and 6.889 G.
// - trivial (models/trivial_model.py there, TrivialModel on 224 + 3): 227 x 227 x 3 = 154,587
//   inputs to 1 unit (154,588), 1 -> 4096 (8,192), 4096 -> 1000 (4,097,000): 4,259,780 parameters,
//   4,254,683 multiply-adds.
// - inception4 (models/inception_model.py there, Inceptionv4Model): the convolutions without bias,
//   each with batch norm (scale and shift), the 1536 -> 1000 layer: 42,679,816 parameters, as
//   timm's inception_v4 counts them, and 12.254 GMACs at 299 x 299; both also counted from
//   tf_cnn_benchmarks' column lists by an independent script (the convolutions' k_h k_w c_in c_out
//   at each output position).
// - overfeat (models/overfeat_model.py there): convolutions 11x11x3x96, 5x5x96x256, 3x3x256x512,
//   3x3x512x1024, 3x3x1024x1024 with biases (15,987,584), fully connected 36864 -> 3072 -> 4096 ->
//   1000 with biases (129,933,288): 145,920,872; 2.801 GMACs (56^2, 24^2 and 12^2 positions).
// - lenet (models/lenet_model.py there, on 3 x 28 x 28): 5x5x3x32 + 32, 5x5x32x64 + 64 (53,696),
//   3136 -> 512 -> 1000 with biases (2,119,144): 2,172,840; 0.0140 GMACs (28^2 and 14^2 positions).
// - resnet20_v2 ... resnet110_v2 (models/resnet_model.py there, ResnetCifar10Model 'v2'): the
//   option A network's convolutions (resnet20: 267,696 weights) and linear layer (650) with other
//   batch norms: the stem's 16 channels, each block's pre-activation over its input and the one
//   after its first convolution, the last one over 64: resnet20 16 + 3 x 32 + (16 + 32) + 2 x 64
//   + (32 + 64) + 2 x 128 + 64 = 704 channels, 1,408 parameters, 32 more than v1's 688 channels
//   (1,376): 269,754, and 32 more than v1 at every depth (each later block's two batch norms
//   cover 2 x width on both). MACs as v1.
INSTANTIATE_TEST_SUITE_P(TfCnnBenchmarks, ModelZoo,
                         ::testing::Values(Expected{"resnet50_v1.5", 25557032, 4.089},
                                           Expected{"resnet50_v1", 25557032, 3.858},
                                           Expected{"resnet101_v1", 44549160, 7.570},
                                           Expected{"resnet152_v1", 60192808, 11.283},
                                           Expected{"resnet50_v2", 25549480, 3.858},
                                           Expected{"resnet101_v2", 44541608, 7.570},
                                           Expected{"resnet152_v2", 60185256, 11.283},
                                           Expected{"googlenet", 6998552, 1.583},
                                           Expected{"inception3", 23834568, 5.7133},
                                           Expected{"mobilenet", 4505872, 0.3018},
                                           Expected{"alexnet", 61838248, 0.8388},
                                           Expected{"densenet40_k12", 1020634, 0.2648},
                                           Expected{"densenet100_k12", 6981994, 1.7695},
                                           Expected{"densenet100_k24", 27253738, 6.8893},
                                           Expected{"trivial", 4259780, 0.0042547},
                                           Expected{"inception4", 42679816, 12.254},
                                           Expected{"overfeat", 145920872, 2.8014},
                                           Expected{"lenet", 2172840, 0.014034},
                                           Expected{"resnet20_v2", 269754, 0.0405},
                                           Expected{"resnet32_v2", 464186, 0.0689},
                                           Expected{"resnet44_v2", 658618, 0.0973},
                                           Expected{"resnet56_v2", 853050, 0.1257},
                                           Expected{"resnet110_v2", 1727994, 0.2533},
                                           Expected{"nasnet", 5289978, 0.5643},
                                           Expected{"nasnetlarge", 88753150, 23.80}),
                         [](const ::testing::TestParamInfo<Expected>& info) { return testing::param_name(info.param.model); });

// NASNet-A against an independent build of the same network: Keras's keras.applications
// NASNetMobile and NASNetLarge (a port of slim's, 1000 classes, no auxiliary head), counted with
// weights=None: 5,289,978 and 88,753,150 trainable parameters, and 36,738 and 196,668 batch-norm
// running statistics (two per channel: the same batch norms in the same places). MACs: the
// paper's 564 M and 23.8 G (Zoph et al. 2018, Table 2).
TEST(ModelZoo, NasnetBatchNormsAsKeras) {
  for (const auto& [model, statistics] : {std::pair<std::string, int64_t>{"nasnet", 36738}, {"nasnetlarge", 196668}}) {
    const Graph g = build_model(model, 1);
    int64_t counted = 0;
    for (const Node& node : g.nodes)
      for (const ParamSpec& buffer : node.buffers) counted += buffer.elements();
    EXPECT_EQ(counted, statistics) << model;
  }
}

// --model=nasnet --data_name=cifar10: 32 filters, 18 normal cells, 6 @ 768 before the linear
// layer (the paper's 3.3 M parameters: 3,346,538 counted here, where the mobile and large models
// match Keras's to the parameter); the 3x3 stem at 32 x 32, cells at 32, 16 and 8.
TEST(ModelZoo, NasnetForCifar10) {
  const auto info = find_model("nasnet", "cifar10");
  ASSERT_TRUE(info.has_value());
  const Graph g = build_model(*info, 2);
  EXPECT_EQ(g.input().out, (Shape{2, 3, 32, 32}));
  EXPECT_EQ(g.logits().out, (Shape{2, 10, 1, 1}));
  const Node& pool = g.nodes[g.logits().inputs[0]];
  EXPECT_EQ(pool.kind, OpKind::global_avg_pool);
  EXPECT_EQ(g.nodes[pool.inputs[0]].out, (Shape{2, 768, 8, 8}));
  EXPECT_EQ(g.param_count(), 3346538);
}

// --model=alexnet --data_name=cifar10 is tf_cnn_benchmarks' CIFAR-10 AlexNet (models/alexnet_model.py
// there): 5x5x3x64 + 64 and 5x5x64x64 + 64 convolutions (107,328), fully connected 4096 -> 384 ->
// 192 -> 10 with biases (1,649,098): 1,756,426 parameters; 0.0328 GMACs (32^2 and 16^2 positions).
TEST(ModelZoo, AlexnetForCifar10) {
  const auto info = find_model("alexnet", "cifar10");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->dataset, "cifar10");
  const Graph g = build_model(*info, 2);
  EXPECT_EQ(g.param_count(), 1756426);
  EXPECT_EQ(g.input().out, (Shape{2, 3, 32, 32}));
  EXPECT_EQ(g.logits().out, (Shape{2, 10, 1, 1}));
  EXPECT_NEAR(g.forward_macs_per_image() / 1e9, 0.0328, 0.0003);
  EXPECT_EQ(find_model("alexnet", "imagenet")->image_size, 227);
  EXPECT_EQ(find_model("alexnet")->dataset, "imagenet") << "the name alone is ImageNet's, as in tf_cnn_benchmarks";
  EXPECT_EQ(find_model("resnet50", "cifar10")->dataset, "imagenet") << "one model per name: that one";
}

// --model=trivial --data_name=cifar10 is tf_cnn_benchmarks' TrivialCifar10Model: 3,072 inputs to
// 1 unit (3,073), 1 -> 4096 (8,192), 4096 -> 10 (40,970): 52,235 parameters.
TEST(ModelZoo, TrivialForCifar10) {
  const auto info = find_model("trivial", "cifar10");
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->dataset, "cifar10");
  const Graph g = build_model(*info, 2);
  EXPECT_EQ(g.param_count(), 52235);
  EXPECT_EQ(g.input().out, (Shape{2, 3, 32, 32}));
  EXPECT_EQ(g.logits().out, (Shape{2, 10, 1, 1}));
  EXPECT_EQ(find_model("trivial")->image_size, 227);
  // tf_cnn_benchmarks' affine() puts a ReLU after its two hidden layers (found by an audit: none here)
  int relus = 0;
  for (const Node& n : g.nodes) relus += n.kind == OpKind::relu;
  EXPECT_EQ(relus, 2);
}

// Found by an audit: the densenets are the paper's, which tf_cnn_benchmarks' code is not (its
// transitions narrowed to 2k channels): the log header says what its names build there.
TEST(ModelZoo, TheHeaderSaysWhereTfCnnBenchmarksBuildsAnotherNetwork) {
  EXPECT_EQ(tf_cnn_benchmarks_network("densenet40_k12"),
            "the paper's; tf_cnn_benchmarks' code narrows each transition to 2 x growth channels: 357,322 "
            "parameters, 0.57x the multiply-adds");
  EXPECT_NE(tf_cnn_benchmarks_network("densenet100_k24").find("8,659,178 parameters"), std::string::npos);
  EXPECT_EQ(tf_cnn_benchmarks_network("resnet50"), "v1.5; tf_cnn_benchmarks' resnet50 is --model=resnet50_v1");
  EXPECT_EQ(tf_cnn_benchmarks_network("vgg16"), "");
}

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

// A whole CIFAR ResNet, v1 and pre-activation, through both backends: the complete graph, not
// only single ops.
class CifarResnetEndToEnd : public ::testing::TestWithParam<const char*> {};

TEST_P(CifarResnetEndToEnd, MatchesReference) {
  const Graph g = build_model(GetParam(), 4);
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

INSTANTIATE_TEST_SUITE_P(ModelZoo, CifarResnetEndToEnd, ::testing::Values("resnet20", "resnet20_v2"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return testing::param_name(info.param); });

// The batch norm + add + ReLU triples a GPU plan fuses: one at the end of every v1 block (the
// projection blocks' too), none in pre-activation blocks or networks without residual sums;
// each triple as the graph has it.
TEST(ModelZoo, BnAddReluTriplesEndEveryV1Block) {
  const std::pair<const char*, size_t> expected[] = {{"resnet50", 16}, {"resnet50_v1", 16}, {"resnet101", 33},
                                                     {"resnet18", 8},  {"resnet20", 9},     {"resnet20_fmnist", 9},
                                                     {"resnet50_v2", 0}, {"vgg16", 0},      {"mobilenet", 0},
                                                     {"inception3", 0}, {"densenet40_k12", 0}};
  for (const auto& [model, count] : expected) {
    const Graph g = build_model(model, 2);
    const std::vector<BnAddRelu> found = find_bn_add_relu(g);
    EXPECT_EQ(found.size(), count) << model;
    for (const BnAddRelu& f : found) {
      EXPECT_EQ(g.nodes[f.batch_norm].kind, OpKind::batch_norm) << model;
      EXPECT_EQ(g.nodes[f.relu].kind, OpKind::relu) << model;
      EXPECT_EQ(g.nodes[f.relu].inputs, std::vector<int>{f.add}) << model;
      const std::vector<int>& in = g.nodes[f.add].inputs;
      EXPECT_TRUE((in == std::vector<int>{f.batch_norm, f.residual}) || (in == std::vector<int>{f.residual, f.batch_norm}))
          << model << " " << g.nodes[f.add].name;
    }
  }
  // what must not fuse: the residual read again after the add (its gradient would be summed),
  // the batch norm's own input as the residual, a batch norm read twice, no ReLU after the add
  GraphBuilder b("cases", {2, 8, 4, 4});
  const int x = b.input();
  const int late = b.relu(b.add(b.batch_norm(b.conv(x, 8, 3, 1, 1, "c0"), "bn0"), x, "add0"), "relu0");
  const int again = b.conv(x, 8, 1, 1, 0, "reads_x_after_add0");
  const int c1 = b.conv(b.add(late, again, "join"), 8, 3, 1, 1, "c1");
  const int self = b.relu(b.add(b.batch_norm(c1, "bn1"), c1, "add1"), "relu1");
  const int bn2 = b.batch_norm(self, "bn2");
  const int twice = b.relu(b.add(bn2, b.relu(bn2, "bn2_relu"), "add2"), "relu2");
  const int bn3 = b.batch_norm(b.conv(twice, 8, 3, 1, 1, "c3"), "bn3");
  const int no_relu = b.add(bn3, twice, "add3");
  const int bn4 = b.batch_norm(b.conv(no_relu, 8, 3, 1, 1, "c4"), "bn4");
  const int fused = b.relu(b.add(no_relu, bn4, "add4"), "relu4");
  // a bare batch norm of the block input as the shortcut, its input read again by the main
  // branch between it and the add: not that one (its moved backward would write its input's
  // gradient before the branch's), but the branch's last batch norm, its input's only reader
  const int bare = b.batch_norm(fused, "bn5_bare");
  const int bn6 = b.batch_norm(b.conv(fused, 8, 3, 1, 1, "c6"), "bn6");
  const int last = b.relu(b.add(bare, bn6, "add6"), "relu6");
  const Graph g = b.finish(b.linear(b.global_avg_pool(last, "gap"), 3, "fc"));
  const std::vector<BnAddRelu> found = find_bn_add_relu(g);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(g.nodes[found[0].batch_norm].name, "bn4");
  EXPECT_EQ(found[0].residual, no_relu);
  EXPECT_EQ(g.nodes[found[1].batch_norm].name, "bn6");
  EXPECT_EQ(found[1].residual, bare);
  // the op cases the GPU suites run the fused op on: both sums of each block case
  for (const OpCase& c : all_cases()) {
    if (c.name == "tiny_resnet_block" || c.name == "tiny_bottleneck_blocks") {
      EXPECT_EQ(find_bn_add_relu(c.build()).size(), 2u) << c.name;
    }
  }
}


// The conv -> batch norm -> ReLU -> conv chains a GPU plan folds into their two convolutions:
// two in every bottleneck (v1 and v2), one in every basic block, none where a convolution has a
// bias (VGG) or is grouped (MobileNet's depthwise ones); each chain as the graph has it.
TEST(ModelZoo, ConvBnReluChainsOpenEveryBlock) {
  const std::pair<const char*, size_t> expected[] = {{"resnet50", 32}, {"resnet50_v1", 32}, {"resnet101", 66},
                                                     {"resnet18", 8},  {"resnet20", 9},     {"vgg16", 0},
                                                     {"mobilenet", 0}};
  for (const auto& [model, count] : expected) {
    const Graph g = build_model(model, 2);
    const std::vector<ConvBnRelu> found = find_conv_bn_relu(g);
    EXPECT_EQ(found.size(), count) << model;
    for (const ConvBnRelu& f : found) {
      EXPECT_EQ(g.nodes[f.batch_norm].inputs, std::vector<int>{f.conv}) << model;
      EXPECT_EQ(g.nodes[f.relu].inputs, std::vector<int>{f.batch_norm}) << model;
      EXPECT_EQ(g.nodes[f.next_conv].inputs, std::vector<int>{f.relu}) << model;
      EXPECT_EQ(g.nodes[f.relu].kind, OpKind::relu) << model;
    }
  }
  // what must not fold: a convolution read by more than its batch norm, a batch norm or ReLU read
  // twice, ReLU6, a convolution with bias or grouped on either side
  GraphBuilder b("cases", {2, 8, 4, 4});
  const int x = b.input();
  const int c0 = b.conv(x, 8, 3, 1, 1, "c0");
  const int r0 = b.relu(b.batch_norm(c0, "bn0"), "r0");
  const int c1 = b.conv(b.add(r0, c0, "conv_read_twice"), 8, 3, 1, 1, "c1");
  const int bn1 = b.batch_norm(c1, "bn1");
  const int c2 = b.conv(b.add(b.relu(bn1, "r1"), bn1, "bn_read_twice"), 8, 3, 1, 1, "c2");
  const int r2 = b.relu(b.batch_norm(c2, "bn2"), "r2");
  const int c3 = b.conv(b.add(b.conv(r2, 8, 1, 1, 0, "c3a"), r2, "relu_read_twice"), 8, 3, 1, 1, "c3");
  const int c4 = b.conv(b.relu6(b.batch_norm(c3, "bn3"), "r3_six"), 8, 3, 1, 1, "c4");
  const int c5 = b.conv(b.relu(b.batch_norm(c4, "bn4"), "r4"), 8, 3, 1, 1, "c5", /*bias=*/true);
  const int c6 = b.conv(b.relu(b.batch_norm(c5, "bn5"), "r5"), 8, 3, 1, 1, "c6");
  const int c7 = b.conv(b.relu(b.batch_norm(c6, "bn6"), "r6"), 8, 3, 1, 1, "c7");
  const Graph g = b.finish(b.linear(b.global_avg_pool(c7, "gap"), 3, "fc"));
  const std::vector<ConvBnRelu> found = find_conv_bn_relu(g);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(g.nodes[found[0].batch_norm].name, "bn6");
  EXPECT_EQ(found[0].conv, c6);
  EXPECT_EQ(found[0].next_conv, c7);
  // the op cases the GPU suites fold chains in (channels multiples of 8)
  for (const OpCase& c : all_cases()) {
    if (c.name == "tiny_resnet_block") {
      EXPECT_EQ(find_conv_bn_relu(c.build()).size(), 2u);
    }
    if (c.name == "tiny_bottleneck_blocks") {
      EXPECT_EQ(find_conv_bn_relu(c.build()).size(), 4u);
    }
  }
}

}  // namespace
}  // namespace cnnbench
