// The cuda plan's memory: activations and gradients in one planned arena train as tensors in
// bytes of their own do (whole models, two SGD steps), the arena is far smaller, the device's
// peak is reported, and a plan that does not fit says so in one line with the batch that would.
// Runs where a GPU is visible; skipped with the runtime's reason elsewhere. (Every op case of
// test_cuda_vs_ref runs on the shared arena too.) And the timed search kept between runs
// (--algorithm_cache), which borrows memory before the arena.
#include <cmath>
#include <cstring>
#include <regex>
#include <sstream>
#include <string>

#include "gpu_skip.h"
#include "kernels/backend.h"
#include "kernels/device_plan.h"
#include "kernels/search_choices.h"
#include "models/model_zoo.h"
#include "test_util.h"

namespace cnnbench {
namespace {

struct Trained {
  std::vector<float> losses, params, grads, buffers, logits;
  size_t working = 0, unshared = 0;
  int64_t device_peak = 0;
  struct Entry {
    std::string name;
    int64_t offset, elements;
  };
  std::vector<Entry> entries;  // the parameters' names and places in params and grads
};

// The parameter whose gradient differs most between two runs, for a failure's message.
std::string worst_gradient(const Trained& a, const Trained& b) {
  std::string name;
  double worst = -1;
  for (const Trained::Entry& e : a.entries) {
    const std::vector<float> x(a.grads.begin() + e.offset, a.grads.begin() + e.offset + e.elements),
        y(b.grads.begin() + e.offset, b.grads.begin() + e.offset + e.elements);
    if (const double err = testing::scaled_max_error(x, y); err > worst) {
      worst = err;
      name = e.name;
    }
  }
  return name + " (scaled max error " + std::to_string(worst) + ")";
}

// Two SGD steps, then an inference pass. Heuristic algorithm choice, deterministic algorithms
// only, fp32 without TF32: both plans run the same kernels, and what still differs run to run
// (the bias gradients' atomic sums) is measured by training the unshared plan twice.
Trained train(const std::string& model, int64_t batch, bool share) {
  const Graph graph = build_model(model, batch);
  PlanOptions options;
  options.share_memory = share;
  options.timed_algorithm_search = false;
  options.deterministic_algorithms = true;
  options.allow_tf32 = false;
  auto plan = compile_plan("cuda", graph, options);
  init_parameters(plan->layout(), plan->parameters().data(), plan->buffers().data(), 3);
  plan->device()->upload_state();
  const int64_t classes = graph.logits().out.c;
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<int32_t>((i * 7) % classes);
  const SgdConfig sgd{0.9f, 1e-4f, false};
  Trained t;
  for (int step = 0; step < 2; ++step) {
    const auto images = testing::random_vector<float>(graph.input().out.elements(), 40 + step);
    plan->set_input(images.data());
    plan->forward(Mode::training);
    LossResult r = plan->loss(labels.data());
    plan->backward();
    plan->sgd_step(sgd, 0.01f);
    plan->device()->synchronize(&r);
    t.losses.push_back(static_cast<float>(r.loss));
  }
  plan->forward(Mode::inference);
  t.logits.resize(graph.logits().out.elements());
  plan->read_output(graph.output, t.logits.data());
  plan->device()->download_state();
  t.params.assign(plan->parameters().begin(), plan->parameters().end());
  t.grads.assign(plan->gradients().begin(), plan->gradients().end());
  t.buffers.assign(plan->buffers().begin(), plan->buffers().end());
  t.working = plan->working_memory_bytes();
  t.unshared = plan->unshared_working_memory_bytes();
  t.device_peak = plan->device()->peak_device_memory_bytes();
  for (const ArenaEntry& e : plan->layout().params)
    t.entries.push_back({graph.nodes[e.node].name + "/" + e.spec->name, e.offset, e.elements});
  return t;
}

class CudaMemoryPlan : public ::testing::TestWithParam<std::pair<std::string, int64_t>> {};

// A tensor read outside the lifetime the plan gave it reads another tensor's values: the shared
// plan would part from the unshared one far beyond what two runs of the unshared plan differ by.
TEST_P(CudaMemoryPlan, SharedTensorsTrainAsUnshared) {
  SKIP_WITHOUT_GPU();
  const auto& [model, batch] = GetParam();
  const Trained shared = train(model, batch, true), own = train(model, batch, false), again = train(model, batch, false);
  const std::pair<const char*, std::vector<float> Trained::*> parts[] = {
      {"losses", &Trained::losses},   {"parameters", &Trained::params},        {"last gradients", &Trained::grads},
      {"running statistics", &Trained::buffers}, {"inference logits", &Trained::logits}};
  for (const auto& [what, part] : parts) {
    const double noise = testing::scaled_max_error(again.*part, own.*part);
    EXPECT_TRUE(testing::close(what, shared.*part, own.*part, std::max(1e-4, 10 * noise)))
        << "two unshared runs differ by " << noise << "; the gradient that differs most: " << worst_gradient(shared, own)
        << ", between the unshared runs: " << worst_gradient(again, own);
  }
  EXPECT_EQ(own.working, own.unshared);
  EXPECT_EQ(shared.unshared, own.unshared);
  EXPECT_LT(shared.working, own.working * 3 / 4) << "the plan shares too little";
  EXPECT_GT(shared.device_peak, static_cast<int64_t>(shared.working)) << "the device's peak is below the plan's own arena";
}

INSTANTIATE_TEST_SUITE_P(Models, CudaMemoryPlan,
                         ::testing::Values(std::pair<std::string, int64_t>{"resnet50", 4},
                                           std::pair<std::string, int64_t>{"resnet50_v2", 2},
                                           std::pair<std::string, int64_t>{"googlenet", 2},
                                           std::pair<std::string, int64_t>{"vgg16", 2},
                                           std::pair<std::string, int64_t>{"resnet20", 8}),
                         [](const auto& info) { return testing::param_name(info.param.first); });

// The one-line error compiling resnet50 at `batch` gives ("" where it compiles), and the batch
// it names after `about` (0 where it names none).
std::string compile_error(int64_t batch, const PlanOptions& options) {
  try {
    compile_plan("cuda", build_model("resnet50", batch), options);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
int64_t batch_named(const std::string& message, const std::string& about) {
  const size_t at = message.find(about);
  return at == std::string::npos ? 0 : std::stoll(message.substr(at + about.size()));
}

// A batch far beyond the device: one line with the batch, the bytes asked and free, and a batch
// that fits (which then compiles).
TEST(CudaMemory, OutOfMemorySaysTheBatchThatFits) {
  SKIP_WITHOUT_GPU();
  PlanOptions heuristics;
  heuristics.timed_algorithm_search = false;
  const std::string message = compile_error(50000, heuristics);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("GPU out of memory at batch 50000"), std::string::npos) << message;
  const int64_t fits = batch_named(message, "the largest batch that fits is about ");
  ASSERT_GT(fits, 0) << message;
  EXPECT_LT(fits, 50000);
  // the estimate leaves out workspaces: a tenth less must fit
  EXPECT_NO_THROW(compile_plan("cuda", build_model("resnet50", fits * 9 / 10), heuristics)) << message;
}

// cuDNN's tensor descriptors count in 32-bit ints: resnet50's first convolution output (64 x 112 x
// 112 per image) passes 2^31 elements at batch 2675. In fp16 that batch is refused in one line
// before any descriptor is made: out of memory where the device is smaller (80 GB), else the
// descriptors' limit; either way the batch it names is at most 2674, and it compiles.
TEST(CudaMemory, BatchBeyondCudnnDescriptorsSaysTheBatchThatRuns) {
  SKIP_WITHOUT_GPU();
  PlanOptions options;
  options.compute = DType::f16;
  options.timed_algorithm_search = false;
  const std::string message = compile_error(2675, options);
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  const bool oom = message.find("GPU out of memory at batch 2675") != std::string::npos;
  const int64_t fits = batch_named(message, oom ? "the largest batch that fits is about "
                                                : "the largest batch the CUDA backend runs for this model is ");
  ASSERT_GT(fits, 0) << message;
  EXPECT_LE(fits, 2674) << message;
  EXPECT_NO_THROW(compile_plan("cuda", build_model("resnet50", oom ? fits * 9 / 10 : fits), options)) << message;
}

// Every convolution's kernels column without its timings (each "(... ms ...)", which also say
// where a choice was timed).
std::vector<std::string> conv_kernels(const Plan& plan, const Graph& graph) {
  std::vector<std::string> out;
  for (const Node& node : graph.nodes)
    if (node.kind == OpKind::conv)
      out.push_back(std::regex_replace(plan.layer_kernels(node.id), std::regex(R"( \([^()]* ms\b[^()]*\))"), ""));
  return out;
}

// Three SGD steps from the same parameters and images; the losses.
std::vector<double> three_step_losses(Plan& plan, const Graph& graph) {
  init_parameters(plan.layout(), plan.parameters().data(), plan.buffers().data(), 5);
  plan.device()->upload_state();
  const int64_t batch = graph.input().out.n, classes = graph.logits().out.c;
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; ++i) labels[i] = static_cast<int32_t>((i * 3) % classes);
  const auto images = testing::random_vector<float>(graph.input().out.elements(), 17);
  std::vector<double> losses;
  for (int step = 0; step < 3; ++step) {
    plan.set_input(images.data());
    plan.forward(Mode::training);
    LossResult r = plan.loss(labels.data());
    plan.backward();
    plan.sgd_step(SgdConfig{0.9f, 0.0f, false}, 0.01f);
    plan.device()->synchronize(&r);
    losses.push_back(r.loss);
  }
  return losses;
}

// --algorithm_cache: a second plan of the same model reads every choice the first one's timed
// search made (algorithms, graph engines, the input's padding), adds none and runs the same
// kernels; one that replays CUDA graphs with those choices (kernels no search launched in this
// process) trains as the first; a kept choice that no longer holds (an algorithm cuDNN does not
// have) is searched again.
TEST(CudaSearch, ASecondPlanReadsTheFirstOnesChoices) {
  SKIP_WITHOUT_GPU();
  for (const auto& [model, batch] : {std::pair<std::string, int64_t>{"resnet20", 8}, {"vgg11", 2}}) {
    const Graph graph = build_model(model, batch);
    SearchChoices choices;
    PlanOptions options;
    options.compute = DType::f16;
    options.search_choices = &choices;
    const auto first = compile_plan("cuda", graph, options);
    const size_t made = choices.size();
    EXPECT_GT(made, 1u) << model;
    EXPECT_NE(first->kernel_notes().find("0 choices read from earlier searches, " + std::to_string(made) + " new"),
              std::string::npos)
        << first->kernel_notes();
    const auto second = compile_plan("cuda", graph, options);
    EXPECT_EQ(choices.added(), made) << model << ": the second plan added choices";
    EXPECT_NE(second->kernel_notes().find(" choices read from earlier searches, 0 new"), std::string::npos)
        << second->kernel_notes();
    EXPECT_EQ(conv_kernels(*second, graph), conv_kernels(*first, graph)) << model;
    PlanOptions graphed_options = options;
    graphed_options.cuda_graphs = true;
    const auto graphed = compile_plan("cuda", graph, graphed_options);
    EXPECT_EQ(choices.added(), made) << model << ": the CUDA-graph plan added choices";
    const std::vector<double> launched = three_step_losses(*first, graph), replayed = three_step_losses(*graphed, graph);
    for (size_t i = 0; i < launched.size(); ++i) {
      EXPECT_TRUE(std::isfinite(replayed[i])) << model << " step " << i;
      EXPECT_NEAR(replayed[i], launched[i], 1e-2 * std::abs(launched[i]) + 1e-3) << model << " step " << i;
    }
    // one convolution's forward algorithm made one cuDNN does not have: that shape is searched again
    std::istringstream lines(choices.text());
    std::string text, line;
    bool broken = false;
    while (std::getline(lines, line)) {
      const size_t tab = line.rfind('\t');
      if (!broken && line.find("\tconv ") != std::string::npos) {
        line = line.substr(0, tab + 1) + "99" + line.substr(line.find(' ', tab));
        broken = true;
      }
      text += line + "\n";
    }
    ASSERT_TRUE(broken);
    SearchChoices changed = SearchChoices::parse(text);
    options.search_choices = &changed;
    const auto third = compile_plan("cuda", graph, options);
    EXPECT_EQ(changed.added(), 1u) << model << ": " << third->kernel_notes();
    EXPECT_EQ(conv_kernels(*third, graph).size(), conv_kernels(*first, graph).size());
  }
}

}  // namespace
}  // namespace cnnbench
