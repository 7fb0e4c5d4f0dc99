// The NCCL data plane on however many GPUs the launch gives (one rank per GPU): an allreduce
// of device memory in fp32 and fp16, and training steps whose gradients go through the
// NcclReducer match steps without it (1 rank), or the average of every rank's gradients.
// Run under mpiexec; skipped with the reason where no GPU is visible.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstring>

#include "comm/gradient_exchange.h"
#include "comm/nccl_communicator.h"
#include "comm/timeline.h"
#include "kernels/backend.h"
#include "kernels/device_plan.h"
#include "gpu_skip.h"
#include "kernels/cuda/device.h"
#include "models/graph_builder.h"
#include "test_util.h"

namespace cnnbench {
namespace {

NcclCommunicator& nccl() {
  static NcclCommunicator comm(60);
  return comm;
}

TEST(Nccl, AllreduceSumsDeviceMemory) {
  SKIP_WITHOUT_GPU();
  NcclCommunicator& comm = nccl();
  const int n = 1000;
  std::vector<float> mine(n);
  for (int i = 0; i < n; ++i) mine[i] = static_cast<float>(comm.rank() + 1) * 0.5f + static_cast<float>(i % 7);
  cuda::DeviceBuffer buffer(n * 4);
  buffer.upload(mine.data(), n * 4);
  comm.allreduce_sum(buffer.data(), n, WireType::f32);
  std::vector<float> sum(n);
  buffer.download(sum.data(), n * 4);
  const int r = comm.size();
  for (int i = 0; i < n; ++i)
    ASSERT_FLOAT_EQ(sum[i], 0.5f * r * (r + 1) / 2 + static_cast<float>(r * (i % 7))) << "element " << i;
}

Graph small_net() {
  GraphBuilder b("small", {4, 3, 8, 8});
  int x = b.relu(b.batch_norm(b.conv(b.input(), 8, 3, 1, 1, "conv"), "bn"), "relu");
  return b.finish(b.linear(b.global_avg_pool(x, "gap"), 5, "fc"));
}

// Host time of each step's start and end, for the timeline's check.
struct StepWindow {
  Timeline::Clock::time_point start, end;
};

// --cuda_graphs runs: how many steps, and what the capture hooks and the last step's gradients were.
struct GraphRun {
  bool graphs = true;
  int steps = 4;
  int joins = 0, replays = 0;
  std::vector<float> gradients;
};

// One rank's images: the same on every rank, so the averaged gradient equals each rank's.
std::vector<float> run_steps(bool through_nccl, WireType wire, Timeline* timeline = nullptr,
                             std::vector<StepWindow>* windows = nullptr, GraphRun* graph_run = nullptr) {
  const bool graphs = graph_run && graph_run->graphs;
  const int steps = graph_run ? graph_run->steps : 3;
  const Graph g = small_net();
  PlanOptions options;
  options.allow_tf32 = false;
  options.cuda_graphs = graphs;
  auto plan = compile_plan("cuda", g, options);
  init_parameters(plan->layout(), plan->parameters().data(), plan->buffers().data(), 9);
  plan->device()->upload_state();
  std::unique_ptr<GradientExchange> reducer;
  if (through_nccl) {
    const std::vector<TensorExtent> tensors = gradient_extents(*plan);
    reducer = make_device_reducer(nccl(), *plan->device(), tensors, 1024, wire);  // small buckets: several
    EXPECT_GT(reducer->buckets().size(), 1u);
    plan->set_loss_gradient_scale(1.0f / static_cast<float>(nccl().size()));
    plan->set_gradient_ready_hook([r = reducer.get()](int i) { r->tensor_ready(i); });
    plan->device()->set_capture_hooks(
        [r = reducer.get(), graph_run] {
          if (graph_run) ++graph_run->joins;
          r->join_capture();
        },
        [r = reducer.get(), graph_run] {
          if (graph_run) ++graph_run->replays;
          r->graph_replayed();
        });
    reducer->set_timeline(timeline);
  }
  const auto images = testing::random_vector<float>(g.input().out.elements(), 4);
  const std::vector<int32_t> labels = {0, 1, 2, 3};
  SgdConfig sgd;
  for (int step = 0; step < steps; ++step) {
    const auto start = Timeline::Clock::now();
    plan->set_input(images.data());
    plan->forward(Mode::training);
    LossResult loss = plan->loss(labels.data());
    plan->backward();
    if (reducer)
      reducer->wait_for_buckets([&](const Bucket& b) { plan->sgd_step(sgd, 0.1f, b.offset, b.count); });
    else
      plan->sgd_step(sgd, 0.1f);
    plan->device()->synchronize(&loss);
    if (reducer) {
      const ReducerStepStats stats = reducer->finish_step();
      EXPECT_GT(stats.comm_sec, 0);
      const double step_sec = std::chrono::duration<double>(Timeline::Clock::now() - start).count();
      EXPECT_LE(stats.exposed_sec, step_sec) << "step " << step << ": backward's end from this step";
    }
    if (windows) windows->push_back({start, Timeline::Clock::now()});
    EXPECT_TRUE(std::isfinite(loss.loss));
  }
  plan->device()->download_state();
  if (graph_run) graph_run->gradients.assign(plan->gradients().begin(), plan->gradients().end());
  return {plan->parameters().begin(), plan->parameters().end()};
}

TEST(Nccl, ReducerStepsMatchStepsWithoutIt) {
  SKIP_WITHOUT_GPU();
  const auto alone = run_steps(false, WireType::f32);
  EXPECT_TRUE(testing::close("fp32 on the wire", run_steps(true, WireType::f32), alone, 1e-5));
  EXPECT_TRUE(testing::close("fp16 on the wire", run_steps(true, WireType::f16), alone, 2e-2));
}

// --cuda_graphs with NCCL: backward's graph holds the bucket allreduces (captured on the second
// step, replayed on the third and fourth); four such steps end where four launched ones do, and
// every step's communication time comes from the events the graph records. With bf16 on the
// wire the last replay's gradients went through the cast round trip on the communication
// stream (every value a bf16, low 16 bits zero), which one rank's allreduce would not show.
TEST(Nccl, GraphedStepsWithAllreducesMatchLaunchedSteps) {
  SKIP_WITHOUT_GPU();
  GraphRun graphed, launched;
  launched.graphs = false;
  const auto graphed_params = run_steps(true, WireType::f32, nullptr, nullptr, &graphed);
  const auto launched_params = run_steps(true, WireType::f32, nullptr, nullptr, &launched);
  EXPECT_EQ(graphed.joins, 1) << "one capture";
  EXPECT_EQ(graphed.replays, 2) << "steps 3 and 4 replay it";
  EXPECT_EQ(launched.joins + launched.replays, 0);
  EXPECT_TRUE(testing::close("four steps, graphs against launches", graphed_params, launched_params, 1e-5));
  GraphRun bf16;
  run_steps(true, WireType::bf16, nullptr, nullptr, &bf16);
  ASSERT_FALSE(bf16.gradients.empty());
  size_t not_bf16 = 0;
  for (const float x : bf16.gradients) {
    uint32_t bits = 0;
    std::memcpy(&bits, &x, sizeof bits);
    not_bf16 += (bits & 0xffffu) != 0;
  }
  EXPECT_EQ(not_bf16, 0u) << "gradients that skipped the wire cast on the last replay";
}

// --timeline on a GPU rank: every bucket's allreduce of every step on the device communication
// track, with its bytes, one after another on the NCCL stream, inside the host's window of the
// step (the device's clock placed on the host's by an anchor event).
TEST(Nccl, TimelineHasEveryBucketsAllreduceOnTheDeviceTrack) {
  SKIP_WITHOUT_GPU();
  Timeline timeline(nccl().rank());
  std::vector<StepWindow> windows;
  run_steps(true, WireType::f16, &timeline, &windows);
  ASSERT_EQ(windows.size(), 3u);
  std::string text = "[";  // (not "[" + a temporary: gcc 12 warns wrongly of overlapping memcpy there)
  text += timeline.events_json(0);
  text += "]";
  const nlohmann::json events = nlohmann::json::parse(text);
  std::vector<nlohmann::json> spans;
  for (const auto& e : events)
    if (e["ph"] == "X") spans.push_back(e);
  ASSERT_FALSE(spans.empty());
  const size_t buckets = spans.size() / windows.size();
  ASSERT_GT(buckets, 1u);
  ASSERT_EQ(spans.size(), buckets * windows.size()) << "every bucket once a step";
  const auto micros = [](Timeline::Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
  };
  const double slack_us = 50;  // the anchor is placed to within a launch
  int64_t bytes = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    SCOPED_TRACE(i);
    const auto& e = spans[i];
    EXPECT_EQ(e["cat"], "device communication");
    EXPECT_EQ(e["name"], "allreduce");
    EXPECT_EQ(e["args"]["bucket"].get<size_t>(), i % buckets);
    EXPECT_GT(e["args"]["bytes"].get<int64_t>(), 0);
    if (i < buckets) bytes += e["args"]["bytes"].get<int64_t>();
    const double start = e["ts"].get<double>(), end = start + e["dur"].get<double>();
    EXPECT_GE(e["dur"].get<double>(), 0);
    const StepWindow& w = windows[i / buckets];
    EXPECT_GE(start, micros(w.start) - slack_us);
    EXPECT_LE(end, micros(w.end) + slack_us);
    if (i % buckets) {  // one stream: a bucket starts after the one before it ended
      const double before_end = spans[i - 1]["ts"].get<double>() + spans[i - 1]["dur"].get<double>();
      EXPECT_GE(start, before_end - slack_us);
    }
  }
  // fp16 on the wire: two bytes a gradient (with the plan's alignment gaps, which travel too)
  EXPECT_EQ(bytes, 2 * compile_plan("cuda", small_net(), {})->exchange_elements());
}

}  // namespace
}  // namespace cnnbench
