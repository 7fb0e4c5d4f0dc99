// --overlap_forward under mpiexec (2, 3 and 4 ranks): leaving each bucket's update to the next
// forward pass (with or without forward-priority sending) trains bit-identically to updating
// at the end of the step, for every backend, bucket size and optimizer; taking the hook away
// (so forward reads parameters before their update) does not, which shows the comparison can
// fail.
#include <cstring>

#include "comm/communicator.h"
#include "comm/gradient_reducer.h"
#include "harness/run/step_loop.h"
#include "kernels/backend.h"
#include "models/graph_builder.h"
#include "models/model_zoo.h"
#include "test_util.h"

namespace cnnbench {
namespace {

// Batch norm (per rank statistics: fine, the comparison is rank by rank), a shortcut-free stack
// and a linear layer with bias: weights, vectors and biases in buckets of every kind.
Graph stack_net(int64_t batch) {
  GraphBuilder b("stack", {batch, 3, 8, 8});
  int x = b.relu(b.batch_norm(b.conv(b.input(), 8, 3, 1, 1, "conv1"), "bn1"), "relu1");
  x = b.relu(b.batch_norm(b.conv(x, 8, 3, 1, 1, "conv2"), "bn2"), "relu2");
  x = b.max_pool(b.relu(b.conv(x, 16, 3, 1, 1, "conv3", true), "relu3"), 2, 2, 0, "pool");
  return b.finish(b.linear(b.global_avg_pool(x, "gap"), 10, "fc"));
}

enum class Updates { end_of_step, overlap, overlap_backward_order, overlap_without_hook };

struct Setting {
  double fusion_mb = 0;
  SgdConfig sgd;
  double first_layers_mb = 0;  // --first_layers_bucket_mb
};

struct Outcome {
  std::vector<float> params, momentum;
  std::vector<double> losses;
  std::vector<StepRecord> steps;
  size_t buckets = 0;
};

Communicator& comm(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Communicator>> made;
  auto& c = made[name];
  const size_t underscore = name.find('_');
  if (!c) c = make_communicator(name.substr(0, underscore), 60, underscore != std::string::npos);
  return *c;
}

Outcome train(Communicator& c, const Graph& graph, const Setting& setting, Updates updates, int steps = 5) {
  auto plan = compile_plan("onednn", graph);
  init_parameters(plan->layout(), plan->parameters().data(), plan->buffers().data(), 17 + c.rank());
  c.broadcast(plan->parameters().data(), plan->parameters().size_bytes(), 0);
  c.broadcast(plan->buffers().data(), plan->buffers().size_bytes(), 0);
  const BucketSizes sizes(static_cast<size_t>(setting.fusion_mb * (1 << 20)),
                          static_cast<size_t>(setting.first_layers_mb * (1 << 20)));
  GradientReducer reducer(c, plan->gradients().data(), gradient_extents(*plan), sizes, WireType::f32);
  plan->set_loss_gradient_scale(1.0f / static_cast<float>(c.size()));
  plan->set_gradient_ready_hook([&reducer](int i) { reducer.tensor_ready(i); });
  std::unique_ptr<ForwardOverlap> overlap;
  if (updates != Updates::end_of_step)
    overlap = std::make_unique<ForwardOverlap>(*plan, reducer, updates != Updates::overlap_backward_order);
  if (updates == Updates::overlap_without_hook) plan->set_params_needed_hook(nullptr);  // finish() updates late

  const Shape in = graph.input().out;
  const int64_t per_image = in.c * in.h * in.w;
  Outcome out;
  for (int s = 0; s < steps; ++s) {
    // every rank its own images; the rate changes each step, as under a schedule
    const std::vector<float> images = testing::random_vector<float>(in.n * per_image, 1000 * s + c.rank());
    std::vector<int32_t> labels(in.n);
    for (int64_t i = 0; i < in.n; ++i) labels[i] = static_cast<int32_t>((i * 7 + s + c.rank()) % 10);
    plan->set_input(images.data());
    const float lr = 0.05f * static_cast<float>(steps - s) / static_cast<float>(steps);
    out.steps.push_back(train_step(*plan, &reducer, setting.sgd, lr, labels.data(), true, nullptr, nullptr, overlap.get()));
    out.losses.push_back(out.steps.back().loss);
  }
  if (overlap) overlap->finish();
  out.buckets = reducer.buckets().size();
  out.params.assign(plan->parameters().begin(), plan->parameters().end());
  out.momentum.assign(plan->momentum().begin(), plan->momentum().end());
  return out;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void expect_identical(const Outcome& reference, const Outcome& got, const std::string& what) {
  EXPECT_EQ(reference.losses, got.losses) << what;
  EXPECT_TRUE(bitwise_equal(reference.params, got.params)) << what << ": weights differ";
  EXPECT_TRUE(bitwise_equal(reference.momentum, got.momentum)) << what << ": momentum differs";
}

class ForwardOverlapTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ForwardOverlapTest, TrainsBitIdenticallyToUpdatingAtTheEndOfTheStep) {
  Communicator& c = comm(GetParam());
  const Graph graph = stack_net(4);
  SgdConfig momentum{0.9f, 1e-4f, false};
  SgdConfig nesterov{0.9f, 5e-4f, true};
  SgdConfig lars = momentum;
  lars.lars = true;
  lars.lars_eta = 0.02f;
  // one bucket per tensor, a few tensors per bucket, one bucket for all; buckets planned from the
  // input side, the first layers' 1 KiB and doubling (to 4 KiB, or to all that is left)
  const std::vector<Setting> settings = {{0, momentum},           {0.004, nesterov},       {16, momentum},
                                         {0, lars},               {0.004, momentum, 0.001}, {16, nesterov, 0.001}};
  for (const Setting& setting : settings) {
    const std::string what = GetParam() + ", fusion " + std::to_string(setting.fusion_mb) + " MiB" +
                             (setting.first_layers_mb > 0 ? ", first layers' bucket 1 KiB" : "") +
                             (setting.sgd.lars ? ", lars" : setting.sgd.nesterov ? ", nesterov" : "");
    const Outcome reference = train(c, graph, setting, Updates::end_of_step);
    if (setting.first_layers_mb > 0) {
      EXPECT_GE(reference.buckets, 3u) << what;  // split, not one or two buckets
    }
    expect_identical(reference, train(c, graph, setting, Updates::overlap), what + ", forward priority");
    expect_identical(reference, train(c, graph, setting, Updates::overlap_backward_order), what + ", backward order");
  }
}

TEST_P(ForwardOverlapTest, ForwardReadingParametersBeforeTheirUpdateShows) {
  Communicator& c = comm(GetParam());
  const Graph graph = stack_net(4);
  const Setting setting{0, {0.9f, 1e-4f, false}};
  const Outcome reference = train(c, graph, setting, Updates::end_of_step);
  const Outcome late = train(c, graph, setting, Updates::overlap_without_hook);
  EXPECT_EQ(reference.losses[0], late.losses[0]);  // the first forward has nothing pending
  EXPECT_NE(reference.losses[1], late.losses[1]);  // the second read weights one update behind
  EXPECT_FALSE(bitwise_equal(reference.params, late.params));
}

TEST_P(ForwardOverlapTest, ReportsTheExchangeTheForwardPassSaw) {
  Communicator& c = comm(GetParam());
  const Outcome run = train(c, stack_net(4), {0, {0.9f, 1e-4f, false}}, Updates::overlap, 4);
  EXPECT_EQ(run.steps[0].comm_sec, 0.0);  // nothing pending before the first step
  for (size_t s = 1; s < run.steps.size(); ++s) {
    const StepRecord& r = run.steps[s];
    EXPECT_GT(r.comm_sec, 0.0) << "step " << s;
    EXPECT_GT(r.update_sec, 0.0) << "step " << s;
    EXPECT_GE(r.exposed_sec, 0.0) << "step " << s;
    EXPECT_GE(r.hidden_by_forward_sec, 0.0) << "step " << s;
    EXPECT_LE(r.hidden_by_forward_sec, r.comm_sec) << "step " << s;
    EXPECT_GE(r.forward_sec, 0.0) << "step " << s;
  }
}

// A real model: ResNet-20's shortcuts and 59 gradient tensors, one bucket each.
// What a rank sends per step counts forward priority's votes: one float per bucket, before each bucket.
TEST(ForwardOverlap, SentBytesCountTheVotes) {
  auto plan = compile_plan("onednn", stack_net(4));
  GradientReducer reducer(comm("mpi"), plan->gradients().data(), gradient_extents(*plan), 0, WireType::f32);
  const size_t buckets = reducer.buckets().size(), gradients = reducer.gradient_elements() * sizeof(float);
  ASSERT_GT(buckets, 3u);
  EXPECT_EQ(reducer.sent_bytes_per_step(), gradients);
  reducer.set_forward_priority(true);
  EXPECT_EQ(reducer.sent_bytes_per_step(), gradients + buckets * buckets * sizeof(float));
}

TEST(ForwardOverlap, ResNet20IsBitIdenticalWithForwardPriority) {
  Communicator& c = comm("mpi");
  const Graph graph = build_model("resnet20", 2);
  const Setting setting{0, {0.9f, 1e-4f, false}};
  expect_identical(train(c, graph, setting, Updates::end_of_step, 3), train(c, graph, setting, Updates::overlap, 3),
                   "resnet20");
}

INSTANTIATE_TEST_SUITE_P(Comm, ForwardOverlapTest, ::testing::Values("mpi", "gloo", "mpi_hierarchical"));

}  // namespace
}  // namespace cnnbench
