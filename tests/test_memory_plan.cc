// The memory plan: plan_memory()'s placement (buffers live at the same time never share a byte;
// buffers that are not do share), and the oneDNN plan with shared memory training bit for bit
// as the one where every tensor has bytes of its own, on whole models.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>

#include "kernels/backend.h"
#include "kernels/device_tensors.h"
#include "kernels/memory_plan.h"
#include "models/graph_builder.h"
#include "models/model_zoo.h"
#include "test_util.h"

namespace cnnbench {
namespace {

PlannedBuffer buffer(size_t bytes, std::vector<Lifetime> lives, bool shared = true) {
  return {bytes, std::move(lives), shared};
}

// Every pair live together on some timeline (or unshared) occupies disjoint bytes.
void expect_no_clash(const std::vector<PlannedBuffer>& buffers, const MemoryPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), buffers.size());
  for (size_t a = 0; a < buffers.size(); ++a) {
    EXPECT_EQ(plan.offsets[a] % 64, 0u);
    EXPECT_LE(plan.offsets[a] + buffers[a].bytes, plan.total_bytes);
    for (size_t b = a + 1; b < buffers.size(); ++b) {
      bool together = !buffers[a].shared || !buffers[b].shared;
      for (size_t t = 0; t < buffers[a].lives.size(); ++t) together |= buffers[a].lives[t].overlaps(buffers[b].lives[t]);
      const bool disjoint = plan.offsets[a] + buffers[a].bytes <= plan.offsets[b] ||
                            plan.offsets[b] + buffers[b].bytes <= plan.offsets[a];
      if (together && buffers[a].bytes && buffers[b].bytes) {
        EXPECT_TRUE(disjoint) << "buffers " << a << " and " << b << " share bytes while both are live";
      }
    }
  }
}

TEST(MemoryPlan, BuffersLiveAtDifferentTimesShareBytes) {
  // a chain: each buffer is read by the next step only, so two slots are enough
  const std::vector<PlannedBuffer> chain = {buffer(1000, {{0, 1}}), buffer(1000, {{1, 2}}), buffer(1000, {{2, 3}}),
                                            buffer(1000, {{3, 4}})};
  const MemoryPlan plan = plan_memory(chain);
  expect_no_clash(chain, plan);
  EXPECT_EQ(plan.total_bytes, 2 * 1024u);
  EXPECT_EQ(plan.unshared_bytes, 4 * 1024u);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
}

TEST(MemoryPlan, UnsharedBuffersAndSecondTimelineKeepTheirBytes) {
  std::vector<PlannedBuffer> buffers = {buffer(64, {{0, 1}}), buffer(64, {{2, 3}}, false)};
  EXPECT_EQ(plan_memory(buffers).total_bytes, 128u);
  // apart on the training timeline, together on the inference one
  buffers = {buffer(64, {{0, 1}, {0, 5}}), buffer(64, {{2, 3}, {4, 6}})};
  EXPECT_EQ(plan_memory(buffers).total_bytes, 128u);
  buffers = {buffer(64, {{0, 1}, {0, 5}}), buffer(64, {{2, 3}, {}})};  // not used at inference
  EXPECT_EQ(plan_memory(buffers).total_bytes, 64u);
}

TEST(MemoryPlan, SmallBufferFillsAGapBetweenLiveOnes) {
  // a (0..9) at the bottom, b (0..4) above it; c (5..9) fits where b was
  const std::vector<PlannedBuffer> buffers = {buffer(4096, {{0, 9}}), buffer(1024, {{0, 4}}), buffer(512, {{5, 9}})};
  const MemoryPlan plan = plan_memory(buffers);
  expect_no_clash(buffers, plan);
  EXPECT_EQ(plan.offsets[2], plan.offsets[1]);
  EXPECT_EQ(plan.total_bytes, 4096u + 1024u);
}

TEST(MemoryPlan, RandomLifetimesNeverClash) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 50; ++round) {
    std::vector<PlannedBuffer> buffers;
    const int count = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < count; ++i) {
      std::vector<Lifetime> lives(2);
      for (Lifetime& l : lives)
        if (rng() % 5) {
          const int first = static_cast<int>(rng() % 40);
          l = {first, first + static_cast<int>(rng() % 12)};
        }
      buffers.push_back(buffer(rng() % 5000, lives, rng() % 10 != 0));
    }
    const MemoryPlan plan = plan_memory(buffers);
    expect_no_clash(buffers, plan);
    EXPECT_LE(plan.total_bytes, plan.unshared_bytes);
  }
}

TEST(MemoryPlan, AlignmentMustBeAPowerOfTwo) {
  EXPECT_THROW(plan_memory({}, 48), std::invalid_argument);
  EXPECT_EQ(plan_memory({}).total_bytes, 0u);
}

struct ModelCase {
  std::string model;
  int64_t batch;
  DType compute;
};

std::ostream& operator<<(std::ostream& os, const ModelCase& c) {
  return os << c.model << "_b" << c.batch << (c.compute == DType::bf16 ? "_bf16" : "_fp32");
}

// Three SGD steps and an inference pass of two plans of one model: whether every loss, parameter,
// running statistic and logit is the same to the bit.
::testing::AssertionResult train_alike(const ModelCase& c, const PlanOptions& first, const PlanOptions& second,
                                        std::vector<std::unique_ptr<Plan>>& plans) {
  const Graph graph = build_model(c.model, c.batch);
  for (PlanOptions options : {first, second}) {
    options.compute = c.compute;
    plans.push_back(compile_plan("onednn", graph, options));
    init_parameters(plans.back()->layout(), plans.back()->parameters().data(), plans.back()->buffers().data(), 3);
  }
  const Shape in = graph.input().out;
  const int64_t classes = graph.logits().out.c;
  std::vector<int32_t> labels(static_cast<size_t>(c.batch));
  for (int64_t i = 0; i < c.batch; ++i) labels[i] = static_cast<int32_t>((i * 7) % classes);
  const SgdConfig sgd{0.9f, 1e-4f, false};
  for (int step = 0; step < 3; ++step) {
    const auto images = testing::random_vector<float>(in.elements(), 40 + step);
    double losses[2];
    for (int p = 0; p < 2; ++p) {
      plans[p]->set_input(images.data());
      plans[p]->forward(Mode::training);
      losses[p] = plans[p]->loss(labels.data()).loss;
      plans[p]->backward();
      plans[p]->sgd_step(sgd, 0.05f);
    }
    if (losses[0] != losses[1])
      return ::testing::AssertionFailure() << "step " << step << ": loss " << losses[0] << " against " << losses[1];
  }
  auto same_bits = [](std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
  };
  for (const ArenaEntry& e : plans[0]->layout().params)
    if (!same_bits(plans[0]->parameters().subspan(e.offset, e.elements), plans[1]->parameters().subspan(e.offset, e.elements)))
      return ::testing::AssertionFailure() << "parameter " << e.spec->name << " differs after 3 steps";
  if (!same_bits(plans[0]->buffers(), plans[1]->buffers()))
    return ::testing::AssertionFailure() << "running statistics differ";
  std::vector<float> logits[2];
  for (int p = 0; p < 2; ++p) {
    plans[p]->forward(Mode::inference);
    logits[p].resize(graph.logits().out.elements());
    plans[p]->read_output(graph.output, logits[p].data());
  }
  if (!same_bits(logits[0], logits[1])) return ::testing::AssertionFailure() << "inference logits differ";
  return ::testing::AssertionSuccess();
}

class OnednnMemoryPlan : public ::testing::TestWithParam<ModelCase> {
 protected:
  void SetUp() override {
    if (GetParam().compute == DType::bf16) SKIP_WITHOUT_CPU_BF16();
  }
};

// Shared bytes train as bytes of their own, and the shared plan is smaller.
TEST_P(OnednnMemoryPlan, SharedTensorsTrainBitForBitAsUnshared) {
  PlanOptions shared, own;
  own.share_memory = false;
  std::vector<std::unique_ptr<Plan>> plans;
  EXPECT_TRUE(train_alike(GetParam(), shared, own, plans));
  EXPECT_EQ(plans[1]->working_memory_bytes(), plans[1]->unshared_working_memory_bytes());
  EXPECT_EQ(plans[0]->unshared_working_memory_bytes(), plans[1]->unshared_working_memory_bytes());
  EXPECT_LT(plans[0]->working_memory_bytes(), plans[1]->working_memory_bytes() * 3 / 4) << "the plan shares too little";
}

// Whatever the placement: NaNs in every tensor outside its lifetime change nothing, so no step
// reads a tensor before it is written or after the plan let another tensor take its bytes.
TEST_P(OnednnMemoryPlan, NoStepReadsATensorOutsideItsLifetime) {
  PlanOptions own, poisoned;
  own.share_memory = poisoned.share_memory = false;
  poisoned.poison_dead_tensors = true;
  std::vector<std::unique_ptr<Plan>> plans;
  EXPECT_TRUE(train_alike(GetParam(), own, poisoned, plans));
}

INSTANTIATE_TEST_SUITE_P(Models, OnednnMemoryPlan,
                         ::testing::Values(ModelCase{"resnet20", 8, DType::f32}, ModelCase{"resnet20", 8, DType::bf16},
                                           ModelCase{"resnet20_fmnist", 4, DType::f32},
                                           ModelCase{"resnet50", 2, DType::f32}, ModelCase{"resnet50", 2, DType::bf16},
                                           ModelCase{"vgg16", 1, DType::f32},
                                           // channels padded to oneDNN's blocks (11, 22, 44, 88): shared, their
                                           // padding zeroed at each lifetime's start
                                           ModelCase{"nasnet", 1, DType::f32}, ModelCase{"nasnet", 1, DType::bf16}),
                         [](const auto& info) {
                           std::ostringstream s;
                           s << info.param;
                           return s.str();
                         });

// The device plans' host-side decisions (kernels/device_tensors.h), here without a GPU: in fp16
// resnet50's 16 block ends run as batch norm + add + ReLU with the batch norm's output in the
// add's buffer, which the arena shows (smaller than with every op alone); the fused op's three
// inputs and outputs, all in use at the add's place, never share bytes; the RGB input is stored
// with 4 channels in 16-bit types only, and only when convolutions alone read it.
TEST(DeviceTensors, FusionsShareBuffersAndShrinkTheArena) {
  const Graph g = build_model("resnet50", 8);
  DeviceTensorOptions options;
  options.compute = DType::f16;
  const DeviceTensors fused = plan_device_tensors(g, options);
  options.fuse = false;
  const DeviceTensors alone = plan_device_tensors(g, options);
  int fusions = 0;
  for (const Node& bn : g.nodes) {
    const int add = fused.fused_into_add[bn.id];
    if (add < 0) continue;
    ++fusions;
    EXPECT_EQ(fused.fused_bn_of[add], bn.id);
    EXPECT_EQ(fused.out_offset[bn.id], fused.out_offset[add]) << bn.name << " is stored in its add's buffer";
    const Node& a = g.nodes[add];
    const int residual = a.inputs[0] == bn.id ? a.inputs[1] : a.inputs[0];
    const int64_t outs[] = {fused.out_offset[bn.inputs[0]], fused.out_offset[residual], fused.out_offset[add]};
    const int64_t diffs[] = {fused.diff_offset[bn.inputs[0]], fused.diff_offset[residual], fused.diff_offset[add]};
    for (int i = 0; i < 3; ++i)
      for (int j = i + 1; j < 3; ++j) {
        EXPECT_NE(outs[i], outs[j]) << a.name;
        EXPECT_NE(diffs[i], diffs[j]) << a.name;
      }
  }
  EXPECT_EQ(fusions, 16);
  EXPECT_LT(fused.arena_bytes, alone.arena_bytes);
  for (const Node& n : g.nodes) EXPECT_EQ(alone.alias_of[n.id], n.id);
  std::printf("resnet50 fp16 batch 8, device arena: %.1f MiB fused, %.1f MiB with every op alone\n",
              fused.arena_bytes / 1048576.0, alone.arena_bytes / 1048576.0);

  options.fuse = true;
  options.compute = DType::bf16;  // ReLUs in place, but cuDNN fuses BN+add+ReLU in fp16 only
  const DeviceTensors bf16 = plan_device_tensors(g, options);
  EXPECT_EQ(std::count(bf16.fused_bn_of.begin(), bf16.fused_bn_of.end(), -1), static_cast<long>(g.nodes.size()));
  EXPECT_EQ(bf16.input_channels, 4);
  options.compute = DType::f32;
  EXPECT_EQ(plan_device_tensors(g, options).input_channels, 3);
  options.compute = DType::f16;
  options.pad_input_channels = false;
  EXPECT_EQ(plan_device_tensors(g, options).input_channels, 3);
  options.pad_input_channels = true;
  const DeviceTensors padded = plan_device_tensors(g, options);
  EXPECT_EQ(padded.stored_shape(g, 0).c, 4);
  EXPECT_EQ(padded.stored_shape(g, 0).elements(), g.input().out.elements() / 3 * 4);
  options.padded_channels = 8;  // the width the GPU's search may choose
  const DeviceTensors eight = plan_device_tensors(g, options);
  EXPECT_EQ(eight.stored_shape(g, 0).c, 8);
  EXPECT_GT(eight.arena_bytes, padded.arena_bytes);
  options.padded_channels = 4;
  GraphBuilder b("pool_first", {2, 3, 8, 8});
  const Graph pooled = b.finish(b.linear(b.global_avg_pool(b.input(), "gap"), 2, "fc"));
  EXPECT_EQ(plan_device_tensors(pooled, options).input_channels, 3) << "a pool reads the input";
}


// conv -> batch norm -> ReLU -> conv folded into the convolutions (fp16): resnet50's 32 chains
// store neither the batch norm's nor the ReLU's output, but the gradient they share; the arena
// shrinks by them; what the next convolution reads and writes in either direction (the first
// convolution's output, its own output, the batch norm's gradient) never shares bytes. The
// device is asked about each chain in graph order, told when the chain's first convolution
// already applies an earlier chain's batch norm (a bottleneck's middle convolution), and a chain
// it refuses stays three ops.
TEST(DeviceTensors, ConvBnChainsStoreNoBatchNormOutput) {
  const Graph g = build_model("resnet50", 8);
  DeviceTensorOptions options;
  options.compute = DType::f16;
  int asked = 0, with_prologue = 0;
  options.conv_bn_supported = [&](const ConvBnRelu&, bool has_prologue) {
    ++asked;
    with_prologue += has_prologue;
    return true;
  };
  const DeviceTensors folded = plan_device_tensors(g, options);
  EXPECT_EQ(asked, 32);
  EXPECT_EQ(with_prologue, 16);
  const auto bytes = [&](int n) { return g.nodes[n].out.elements() * 2; };
  const auto apart = [&](int64_t a, int na, int64_t b, int nb) { return a + bytes(na) <= b || b + bytes(nb) <= a; };
  int chains = 0;
  for (const Node& bn : g.nodes) {
    const int next = folded.bn_into_conv[bn.id];
    if (next < 0) continue;
    ++chains;
    const int conv = bn.inputs[0], relu = folded.fused_relu_of[bn.id];
    EXPECT_EQ(folded.prologue_bn[next], bn.id);
    EXPECT_EQ(folded.stats_bn[conv], bn.id);
    EXPECT_EQ(folded.out_offset[bn.id], -1) << bn.name;
    EXPECT_EQ(folded.out_offset[relu], -1) << bn.name;
    EXPECT_GE(folded.diff_offset[bn.id], 0) << bn.name;
    EXPECT_EQ(folded.diff_offset[relu], folded.diff_offset[bn.id]) << bn.name;
    EXPECT_TRUE(apart(folded.out_offset[conv], conv, folded.out_offset[next], next)) << bn.name;
    EXPECT_TRUE(apart(folded.out_offset[conv], conv, folded.diff_offset[bn.id], bn.id)) << bn.name;
    EXPECT_TRUE(apart(folded.diff_offset[next], next, folded.diff_offset[bn.id], bn.id)) << bn.name;
    EXPECT_TRUE(apart(folded.out_offset[conv], conv, folded.diff_offset[next], next)) << bn.name;
  }
  EXPECT_EQ(chains, 32);
  options.conv_bn_supported = [](const ConvBnRelu&, bool has_prologue) { return !has_prologue; };
  const DeviceTensors first_only = plan_device_tensors(g, options);
  EXPECT_EQ(std::count_if(first_only.bn_into_conv.begin(), first_only.bn_into_conv.end(), [](int c) { return c >= 0; }),
            16);
  options.conv_bn_supported = [](const ConvBnRelu&, bool) { return false; };
  const DeviceTensors refused = plan_device_tensors(g, options);
  for (const Node& n : g.nodes) {
    EXPECT_EQ(refused.bn_into_conv[n.id], -1);
    EXPECT_GE(refused.out_offset[n.id], 0) << n.name;
  }
  EXPECT_LT(first_only.arena_bytes, refused.arena_bytes);
  EXPECT_LT(folded.arena_bytes, first_only.arena_bytes);
  std::printf("resnet50 fp16 batch 8, device arena: %.1f MiB with the 32 chains folded, %.1f MiB without\n",
              folded.arena_bytes / 1048576.0, refused.arena_bytes / 1048576.0);
  options.conv_bn_supported = nullptr;
  options.compute = DType::bf16;
  const DeviceTensors bf16 = plan_device_tensors(g, options);
  EXPECT_EQ(std::count(bf16.bn_into_conv.begin(), bf16.bn_into_conv.end(), -1), static_cast<long>(g.nodes.size()));
  options.compute = DType::f16;
  options.fuse = false;
  const DeviceTensors alone = plan_device_tensors(g, options);
  EXPECT_EQ(std::count(alone.stats_bn.begin(), alone.stats_bn.end(), -1), static_cast<long>(g.nodes.size()));
}

// A chain's batch norm of more than 2048 channels stays three ops (its folded backward reads
// 8 channels a thread, one block a range of rows); 2048 folds.
TEST(DeviceTensors, ConvBnChainsFoldUpTo2048Channels) {
  for (const int64_t channels : {2048, 2056}) {
    GraphBuilder b("wide", {2, 8, 4, 4});
    const int x = b.relu(b.batch_norm(b.conv(b.input(), channels, 1, 1, 0, "a"), "a_bn"), "a_relu");
    const Graph g = b.finish(b.linear(b.global_avg_pool(b.conv(x, 8, 1, 1, 0, "b"), "gap"), 10, "fc"));
    DeviceTensorOptions options;
    options.compute = DType::f16;
    const DeviceTensors t = plan_device_tensors(g, options);
    EXPECT_EQ(std::count_if(t.bn_into_conv.begin(), t.bn_into_conv.end(), [](int c) { return c >= 0; }),
              channels <= 2048 ? 1 : 0)
        << channels;
  }
}

// A chain whose first convolution reads the RGB input stored with 8 channels does not fold: the
// folded graphs read the graph's 3 channels, not the stored 8 (the 8 would pass the channel test).
// An 8-channel input of the graph's own folds.
TEST(DeviceTensors, NoChainStartsAtThePaddedInput) {
  for (const int64_t channels : {3, 8}) {
    GraphBuilder b("stem", {2, channels, 8, 8});
    const int x = b.relu(b.batch_norm(b.conv(b.input(), 16, 3, 1, 1, "a"), "a_bn"), "a_relu");
    const Graph g = b.finish(b.linear(b.global_avg_pool(b.conv(x, 16, 3, 1, 1, "b"), "gap"), 10, "fc"));
    DeviceTensorOptions options;
    options.compute = DType::f16;
    options.padded_channels = 8;
    const DeviceTensors t = plan_device_tensors(g, options);
    EXPECT_EQ(t.input_channels, 8);
    EXPECT_EQ(std::count_if(t.bn_into_conv.begin(), t.bn_into_conv.end(), [](int c) { return c >= 0; }),
              channels == 8 ? 1 : 0)
        << channels;
  }
}

}  // namespace
}  // namespace cnnbench
