// The tf_cnn_benchmarks models cnnbench has, as its users' command lines run them: each trains
// under mpiexec on 2 ranks at batch 2 for 2 steps, in fp32 and (on a CPU with bf16) bf16, with
// a finite loss and the parameter count of its definition in the result.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

#include "cli_run.h"
#include "kernels/backend.h"
#include "models/model_zoo.h"
#include "test_files.h"
#include "test_util.h"

namespace cnnbench {
namespace {

class ZooRuns : public ::testing::TestWithParam<const char*> {};

void train_on_two_ranks(const std::string& model, const std::string& precision_flag) {
  const std::string dir = fresh_dir("zoo_" + model + (precision_flag.empty() ? "_fp32" : "_bf16"));
  const CliRun r = run_cnnbench_with(std::string(CNNBENCH_MPIEXEC_PREFIX) + " -np 2 ", "",
                                     "--model=" + model + " --batch_size=2 --num_batches=2 --num_warmup_batches=1 "
                                     "--num_intra_threads=1 --variable_update=horovod --result_json=r.json " +
                                         precision_flag,
                                     dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto doc = nlohmann::json::parse(slurp_file(dir + "/r.json"));
  EXPECT_EQ(doc["run"]["model"], model);
  EXPECT_EQ(doc["run"]["ranks"], 2);
  EXPECT_EQ(doc["model"]["parameters"], build_model(model, 1).param_count());
  for (const auto& loss : doc["steps"]["loss"]) EXPECT_TRUE(loss.is_number() && std::isfinite(loss.get<double>()));
}

TEST_P(ZooRuns, TrainsOnTwoRanksInFp32) { train_on_two_ranks(GetParam(), ""); }

TEST_P(ZooRuns, TrainsOnTwoRanksInBf16) {
  if (!cpu_computes_bf16()) GTEST_SKIP() << "this CPU has no bf16 (AVX-512 BF16): the onednn backend refuses bf16";
  train_on_two_ranks(GetParam(), "--use_fp16");
}

INSTANTIATE_TEST_SUITE_P(TfCnnBenchmarks, ZooRuns,
                         ::testing::Values("resnet50_v1.5", "resnet50_v1", "resnet101_v1", "resnet152_v1",
                                           "resnet50_v2", "resnet101_v2", "resnet152_v2", "googlenet", "inception3", "mobilenet",
                                           "alexnet",
                                           "densenet40_k12", "densenet100_k12", "densenet100_k24", "inception4",
                                           "overfeat", "lenet", "resnet20_v2", "resnet110_v2", "nasnet", "nasnetlarge"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return testing::param_name(info.param); });

// --model=alexnet --data_name=cifar10 trains tf_cnn_benchmarks' CIFAR-10 AlexNet (LRN) on 2 ranks,
// and --model=trivial --data_name=cifar10 its CIFAR-10 trivial, at its own default rate.
TEST(ZooRunsCifar, ModelsWithDataNameCifar10) {
  for (const auto& [model, parameters] : {std::pair<std::string, int64_t>{"alexnet", 1756426}, {"trivial", 52235},
                                        {"nasnet", build_model(*find_model("nasnet", "cifar10"), 1).param_count()}})
    for (const std::string precision : {"", "--use_fp16"}) {
      if (!precision.empty() && !cpu_computes_bf16()) continue;
      const std::string dir = fresh_dir("zoo_" + model + "_cifar10" + precision);
      const CliRun r = run_cnnbench_with(std::string(CNNBENCH_MPIEXEC_PREFIX) + " -np 2 ", "",
                                         "--model=" + model + " --data_name=cifar10 --batch_size=2 --num_batches=2 "
                                         "--num_warmup_batches=1 --num_intra_threads=1 --variable_update=horovod "
                                         "--result_json=r.json " + precision,
                                         dir);
      ASSERT_EQ(r.exit_code, 0) << r.output;
      const auto doc = nlohmann::json::parse(slurp_file(dir + "/r.json"));
      EXPECT_EQ(doc["run"]["dataset"], "cifar10") << model;
      EXPECT_EQ(doc["model"]["parameters"], parameters) << model;
      for (const auto& loss : doc["steps"]["loss"]) EXPECT_TRUE(loss.is_number() && std::isfinite(loss.get<double>()));
    }
}

// The CIFAR-10 models learn in the convergence mode: on 2 ranks, a learnable data set in
// CIFAR-10's binary files (640 training images, 200 test; each class a colour under noise, with
// the data set's random crops and flips), 4 epochs at a global batch of 32 (densenet40_k12 at rate
// 0.05, tf_cnn's 0.1 at 64; the CIFAR alexnet, without batch norm, at 0.01: it diverged at 0.02;
// resnet20_v2 at 0.05, tf_cnn's 0.1 at its default 128 halved as for densenet40_k12):
// the training loss of the last two epochs is below half of chance's and test top-1 ends far above
// the 10% of chance.
struct Learner {
  const char* model;
  const char* rate;
};
class CifarLearns : public ::testing::TestWithParam<Learner> {};

TEST_P(CifarLearns, OnTwoRanks) {
  const std::string model = GetParam().model;
  const std::string dir = fresh_dir("learns_" + model);
  testing::write_cifar10_dataset(dir, 128, 200);
  const CliRun r = run_cnnbench_with(std::string(CNNBENCH_MPIEXEC_PREFIX) + " -np 2 ", "",
                                     "--model=" + model + " --data_name=cifar10 --data_dir=cifar-10-batches-bin "
                                     "--batch_size=16 --num_epochs=4 --num_intra_threads=1 --optimizer=momentum --init_learning_rate=" +
                                         GetParam().rate + " "
                                     "--eval_during_training_every_n_epochs=2 --result_json=r.json",
                                     dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(final_test_top1(r.output), 0.6) << r.output;
  const auto doc = nlohmann::json::parse(slurp_file(dir + "/r.json"));
  const auto& epochs = doc["epochs"];
  ASSERT_EQ(epochs.size(), 4u) << doc.dump();
  // a batch of 16 per rank makes single epochs noisy: the mean of the last two
  const double late = (epochs[2]["train_loss"].get<double>() + epochs[3]["train_loss"].get<double>()) / 2;
  EXPECT_LT(late, 0.5 * std::log(10.0)) << "training loss of epochs 3 and 4 against half of chance's: " << doc["epochs"].dump();
}

INSTANTIATE_TEST_SUITE_P(TfCnnBenchmarks, CifarLearns,
                         ::testing::Values(Learner{"densenet40_k12", "0.05"}, Learner{"alexnet", "0.01"},
                                           Learner{"resnet20_v2", "0.05"}),
                         [](const ::testing::TestParamInfo<Learner>& info) { return testing::param_name(info.param.model); });

}  // namespace
}  // namespace cnnbench
