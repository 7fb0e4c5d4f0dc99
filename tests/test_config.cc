// Flags and TOML config: both flag forms, booleans, overrides, and one clear error per mistake.
#include <fstream>

#include "harness/config.h"
#include "harness/run_settings.h"
#include "test_util.h"

namespace cnnbench {
namespace {

Config parse(std::vector<std::string> args) {
  args.insert(args.begin(), "cnnbench");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

std::string error_of(std::vector<std::string> args) {
  try {
    parse(std::move(args));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, BothFlagFormsAndBooleans) {
  const Config c = parse({"--model=resnet50", "--batch_size", "32", "--forward_only", "--use_fp16=false",
                          "--print_training_accuracy", "True", "--weight_decay=1e-4"});
  EXPECT_EQ(c.model, "resnet50");
  EXPECT_EQ(c.batch_size, 32);
  EXPECT_TRUE(c.forward_only);
  EXPECT_FALSE(c.use_fp16);
  EXPECT_TRUE(c.print_training_accuracy);
  EXPECT_DOUBLE_EQ(c.weight_decay, 1e-4);
}

TEST(Config, ErrorsNameTheFlagAndTheReason) {
  EXPECT_EQ(error_of({"--batchsize=3"}), "--batchsize: unknown flag 'batchsize' (see --help)");
  EXPECT_EQ(error_of({"--batch_size=three"}), "--batch_size: 'three' is not an integer");
  EXPECT_EQ(error_of({"--num_batches=0"}), "--num_batches: must be at least 1, not 0");
  EXPECT_NE(error_of({"--optimizer=adam"}).find("'adam' is not one of sgd, momentum"), std::string::npos);
  EXPECT_NE(error_of({"--variable_update=parameter_server"}).find("parameter servers"), std::string::npos);
  EXPECT_EQ(error_of({"--forward_only=maybe"}), "--forward_only: 'maybe' is not true or false");
  EXPECT_EQ(error_of({"--model"}), "flag --model needs a value");
  EXPECT_EQ(error_of({"resnet50"}), "unexpected argument 'resnet50' (flags look like --name=value)");
  EXPECT_EQ(error_of({"--init_learning_rate=nan"}), "--init_learning_rate: 'nan' is not a number");
}

TEST(Config, TomlFileThenFlagsOverride) {
  const std::string path = ::testing::TempDir() + "/cnnbench_config_test.toml";
  std::ofstream(path) << "model = \"resnet20\"\nbatch_size = 64\nweight_decay = 1e-4\nforward_only = true\n"
                         "init_learning_rate = 1\n";
  const Config c = parse({"--config", path, "--batch_size=16"});
  EXPECT_EQ(c.model, "resnet20");
  EXPECT_EQ(c.batch_size, 16);
  EXPECT_DOUBLE_EQ(c.weight_decay, 1e-4);
  EXPECT_DOUBLE_EQ(c.init_learning_rate, 1.0);  // an integer where a number is expected is fine
  EXPECT_TRUE(c.forward_only);

  std::ofstream(path) << "modle = \"resnet20\"\n";
  EXPECT_EQ(error_of({"--config=" + path}), path + ": unknown key 'modle'");
  std::ofstream(path) << "batch_size = \"big\"\n";
  EXPECT_EQ(error_of({"--config=" + path}), path + ": key 'batch_size': wrong type for this setting");
  std::ofstream(path) << "batch_size = \n";
  EXPECT_NE(error_of({"--config=" + path}).find(path + ":1:"), std::string::npos);
  EXPECT_NE(error_of({"--config=/nonexistent/x.toml"}).find("/nonexistent/x.toml"), std::string::npos);
}

TEST(Config, GpuDeviceBackendAndAllreduceGoTogether) {
  Config c = parse({"--device=gpu"});
  EXPECT_EQ(c.backend, "cuda");
  c = parse({"--backend=cuda"});
  EXPECT_EQ(c.device, "gpu");
  EXPECT_NE(error_of({"--device=gpu", "--backend=ref"}).find("runs the cuda backend"), std::string::npos);
  EXPECT_NE(error_of({"--allreduce=nccl"}).find("use it with --device=gpu"), std::string::npos);
  EXPECT_NE(error_of({"--num_gpus=2"}).find("one rank per GPU"), std::string::npos);
  EXPECT_EQ(error_of({"--device=gpu", "--allreduce=nccl", "--num_gpus=1"}), "");
  // --use_fp16 is fp16 on GPUs (tensor cores) and bf16 on CPUs
  c = parse({"--device=gpu", "--use_fp16", "--model=resnet50"});
  EXPECT_EQ(resolve_settings(c, 1, 1).precision, DType::f16);
  c = parse({"--use_fp16", "--model=resnet50"});
  EXPECT_EQ(resolve_settings(c, 1, 1).precision, DType::bf16);
  // GPU memory is averaged by NCCL: MPI or Gloo across GPU ranks is refused, one rank needs none
  c = parse({"--device=gpu", "--model=resnet50"});
  EXPECT_THROW(resolve_settings(c, 2, 1), ConfigError);
  EXPECT_NO_THROW(resolve_settings(c, 1, 1));
  c = parse({"--device=gpu", "--allreduce=nccl", "--model=resnet50"});
  EXPECT_NO_THROW(resolve_settings(c, 2, 1));
}

TEST(Config, ShippedPresetsParse) {
  for (const char* preset : {"resnet50_synthetic.toml", "vgg16_synthetic.toml", "resnet20_synthetic.toml"}) {
    const std::string path = std::string(CNNBENCH_SOURCE_DIR) + "/configs/" + preset;
    EXPECT_NO_THROW(parse({"--config=" + path})) << path;
  }
}

TEST(Config, SettingsResolveDefaultsAndRefuseMismatches) {
  Config c = parse({"--model=resnet50", "--num_epochs=0.001"});
  RunSettings s = resolve_settings(c, 2, 1);
  EXPECT_EQ(s.batch_size, 64);  // resnet50's default
  EXPECT_EQ(s.global_batch, 128);
  EXPECT_EQ(s.timed_steps, 11);  // ceil(1281.167 / 128)
  EXPECT_DOUBLE_EQ(s.learning_rate, 0.05);  // 0.1 x 128 / 256
  EXPECT_EQ(s.warmup_steps, 2);
  c = parse({"--model=resnet20", "--data_name=imagenet"});
  EXPECT_THROW(resolve_settings(c, 1, 1), ConfigError);
  c = parse({"--model=nope"});
  EXPECT_THROW(resolve_settings(c, 1, 1), ConfigError);
}

}  // namespace
}  // namespace cnnbench
