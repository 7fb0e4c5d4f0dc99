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
                                           "resnet50_v2", "resnet101_v2", "resnet152_v2", "googlenet"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return testing::param_name(info.param); });

}  // namespace
}  // namespace cnnbench
