// Data-parallel training under mpiexec (2, 3 and 4 ranks): after several steps every rank
// holds bitwise-identical weights, and N ranks x batch B make the same update as one process
// with batch N x B.
#include <cstring>

#include "comm/communicator.h"
#include "comm/gradient_reducer.h"
#include "kernels/backend.h"
#include "models/graph_builder.h"
#include "test_util.h"

namespace cnnbench {
namespace {

// No batch norm: its statistics are per rank by design, so only a BN-free net makes the
// same update on N x B as on one N*B batch.
Graph small_net(int64_t batch) {
  GraphBuilder b("small", {batch, 3, 8, 8});
  int x = b.relu(b.conv(b.input(), 8, 3, 1, 1, "conv1", true), "relu1");
  x = b.max_pool(b.relu(b.conv(x, 16, 3, 1, 1, "conv2", true), "relu2"), 2, 2, 0, "pool");
  return b.finish(b.linear(b.global_avg_pool(x, "gap"), 10, "fc"));
}

Graph net_with_batch_norm(int64_t batch) {
  GraphBuilder b("bn", {batch, 3, 8, 8});
  int x = b.relu(b.batch_norm(b.conv(b.input(), 8, 3, 1, 1, "conv1"), "bn1"), "relu1");
  return b.finish(b.linear(b.global_avg_pool(x, "gap"), 10, "fc"));
}

struct Data {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

Data global_batch(int64_t n, uint64_t seed) {
  Data d;
  d.images = testing::random_vector<float>(n * 3 * 64, seed);
  for (int64_t i = 0; i < n; ++i) d.labels.push_back(static_cast<int32_t>((i * 7 + seed) % 10));
  return d;
}

// Trains `steps` steps; rank r uses images [r*B, (r+1)*B) of each step's global batch.
void train(Plan& plan, Communicator* comm, GradientReducer* reducer, int ranks, int rank, int64_t b, int steps) {
  const SgdConfig sgd{0.9f, 1e-4f, false};
  for (int s = 0; s < steps; ++s) {
    const Data data = global_batch(b * ranks, 100 + s);
    plan.set_input(data.images.data() + rank * b * 3 * 64);
    plan.forward(Mode::training);
    plan.loss(data.labels.data() + rank * b);
    plan.backward();
    if (reducer)
      reducer->wait_for_buckets([&](const Bucket& bucket) { plan.sgd_step(sgd, 0.05f, bucket.offset, bucket.count); });
    else
      plan.sgd_step(sgd, 0.05f);
  }
  (void)comm;
}

std::unique_ptr<Plan> distributed_plan(const Graph& graph, Communicator& comm, std::unique_ptr<GradientReducer>& reducer,
                                       size_t threshold, WireType wire) {
  auto plan = compile_plan("onednn", graph);
  init_parameters(plan->layout(), plan->parameters().data(), plan->buffers().data(), 17 + comm.rank());
  comm.broadcast(plan->parameters().data(), plan->parameters().size_bytes(), 0);
  comm.broadcast(plan->buffers().data(), plan->buffers().size_bytes(), 0);
  std::vector<TensorExtent> tensors;
  for (const ArenaEntry& e : plan->layout().params)
    tensors.push_back({static_cast<size_t>(e.offset), static_cast<size_t>(e.elements)});
  reducer = std::make_unique<GradientReducer>(comm, plan->gradients().data(), tensors, threshold, wire);
  plan->set_loss_gradient_scale(1.0f / comm.size());
  plan->set_gradient_ready_hook([r = reducer.get()](int i) { r->tensor_ready(i); });
  return plan;
}

class Training : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(Training, RanksHoldBitwiseIdenticalWeights) {
  const auto& [backend, compression] = GetParam();
  auto comm = make_communicator(backend);
  const WireType wire = compression == "bf16" ? WireType::bf16 : compression == "fp16" ? WireType::f16 : WireType::f32;
  std::unique_ptr<GradientReducer> reducer;
  auto plan = distributed_plan(net_with_batch_norm(4), *comm, reducer, 2048, wire);
  train(*plan, comm.get(), reducer.get(), comm->size(), comm->rank(), 4, 5);
  std::vector<float> mine(plan->parameters().begin(), plan->parameters().end()), leader = mine;
  comm->broadcast(leader.data(), leader.size() * sizeof(float), 0);
  EXPECT_EQ(std::memcmp(mine.data(), leader.data(), mine.size() * sizeof(float)), 0)
      << "rank " << comm->rank() << " weights differ from rank 0's";
  // and training moved them: the weights are not the broadcast initial ones
  auto fresh = compile_plan("onednn", net_with_batch_norm(4));
  init_parameters(fresh->layout(), fresh->parameters().data(), fresh->buffers().data(), 17);
  EXPECT_NE(std::memcmp(mine.data(), fresh->parameters().data(), mine.size() * sizeof(float)), 0);
}

TEST_P(Training, NRanksMatchOneProcessWithTheGlobalBatch) {
  const auto& [backend, compression] = GetParam();
  if (compression != "none") GTEST_SKIP() << "compression changes the update by design";
  auto comm = make_communicator(backend);
  const int64_t b = 3;
  std::unique_ptr<GradientReducer> reducer;
  auto plan = distributed_plan(small_net(b), *comm, reducer, 1024, WireType::f32);
  train(*plan, comm.get(), reducer.get(), comm->size(), comm->rank(), b, 3);

  auto single = compile_plan("onednn", small_net(b * comm->size()));
  init_parameters(single->layout(), single->parameters().data(), single->buffers().data(), 17);
  train(*single, nullptr, nullptr, 1, 0, b * comm->size(), 3);
  std::vector<float> distributed(plan->parameters().begin(), plan->parameters().end());
  std::vector<float> reference(single->parameters().begin(), single->parameters().end());
  EXPECT_TRUE(testing::close("weights after 3 steps", distributed, reference, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Comm, Training,
                         ::testing::Combine(::testing::Values("mpi", "gloo"), ::testing::Values("none", "bf16")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

}  // namespace
}  // namespace cnnbench
