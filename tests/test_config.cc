// Flags and TOML config: both flag forms, booleans, overrides, and one clear error per mistake.
#include <algorithm>
#include <climits>
#include <fstream>

#include "harness/cli/config.h"
#include "harness/cli/run_settings.h"
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

// tf_cnn_benchmarks' momentum optimizer is Nesterov's (MomentumOptimizer(use_nesterov=True)):
// on with --optimizer=momentum unless --nesterov=false says otherwise; MLPerf's LARS is not.
TEST(Config, MomentumIsNesterovsAsTfCnnBenchmarksUnlessSaid) {
  EXPECT_TRUE(parse({"--optimizer=momentum"}).nesterov);
  EXPECT_FALSE(parse({"--optimizer=momentum", "--nesterov=false"}).nesterov);
  EXPECT_FALSE(parse({"--optimizer=lars"}).nesterov);
  EXPECT_TRUE(parse({"--optimizer=lars", "--nesterov"}).nesterov);
  EXPECT_FALSE(parse({}).nesterov);  // sgd: no momentum
  EXPECT_FALSE(parse({}).weight_decay_on_batch_norm);
}

// Where no rate or schedule is given, a model's own schedule, as tf_cnn_benchmarks runs it
// (resnet_model.py, ResnetCifar10Model, DensenetCifar10Model, AlexnetCifar10Model), written into
// the config; any rate, schedule, cosine or base batch given keeps the user's recipe.
TEST(Config, ModelsCarryTfCnnBenchmarksSchedulesWhereNoRateIsGiven) {
  Config c = parse({"--model=resnet50"});
  ASSERT_TRUE(apply_model_schedule(c, 4));  // 4 ranks x 64: 0.128 x 256 / 256
  EXPECT_EQ(c.piecewise_learning_rate_schedule, "0.128;30;0.0128;60;0.00128;80;0.000128;90;1.28e-05");
  EXPECT_EQ(c.num_learning_rate_warmup_epochs, 5);
  c = parse({"--model=resnet50_v1", "--batch_size=32", "--num_learning_rate_warmup_epochs=1"});
  ASSERT_TRUE(apply_model_schedule(c, 2));
  EXPECT_EQ(c.piecewise_learning_rate_schedule.substr(0, 9), "0.032;30;");
  EXPECT_EQ(c.num_learning_rate_warmup_epochs, 1) << "a warm-up given stays";
  c = parse({"--model=resnet56"});
  ASSERT_TRUE(apply_model_schedule(c, 1));
  EXPECT_EQ(c.piecewise_learning_rate_schedule, "0.1;82;0.01;123;0.001;300;0.0002");
  c = parse({"--model=densenet40_k12"});
  ASSERT_TRUE(apply_model_schedule(c, 1));
  EXPECT_EQ(c.piecewise_learning_rate_schedule, "0.1;150;0.01;225;0.001;300;0.0001");
  c = parse({"--model=alexnet", "--data_name=cifar10"});
  ASSERT_TRUE(apply_model_schedule(c, 1));
  EXPECT_EQ(c.piecewise_learning_rate_schedule.substr(0, 24), "0.1;100;0.01;200;0.001;3");
  for (const std::vector<std::string>& own :
       {std::vector<std::string>{"--model=resnet50", "--init_learning_rate=0.2"},
        {"--model=resnet50", "--piecewise_learning_rate_schedule=0.2;10;0.02"},
        {"--model=resnet50", "--cosine_learning_rate"}, {"--model=resnet50", "--learning_rate_base_batch=256"},
        {"--model=resnet50", "--forward_only"}, {"--model=vgg16"}, {"--model=googlenet"}, {"--model=trivial"}}) {
    c = parse(own);
    EXPECT_FALSE(apply_model_schedule(c, 1)) << own.back();
    EXPECT_EQ(c.piecewise_learning_rate_schedule, own.back().rfind("--piecewise", 0) == 0 ? "0.2;10;0.02" : "")
        << own.back();
  }
}

// absl's forms, as tf_cnn_benchmarks' command lines give them: one dash, --noname, boolean words
// in any case and t/f, a boolean followed by its word.
TEST(Config, AbslFlagForms) {
  const Config c = parse({"-model=resnet20", "--nouse_fp16", "--forward_only", "1", "--print_training_accuracy=TRUE",
                          "--nesterov=t", "--cosine_learning_rate", "F", "-batch_size", "8"});
  EXPECT_EQ(c.model, "resnet20");
  EXPECT_FALSE(c.use_fp16);
  EXPECT_TRUE(c.forward_only);
  EXPECT_TRUE(c.print_training_accuracy);
  EXPECT_TRUE(c.nesterov);
  EXPECT_FALSE(c.cosine_learning_rate);
  EXPECT_EQ(c.batch_size, 8);
  EXPECT_TRUE(parse({"--use_fp16", "--model=resnet20"}).use_fp16) << "a boolean alone before another flag";
  EXPECT_EQ(error_of({"--nomodel"}), "--nomodel: unknown flag 'nomodel' (see --help)") << "--no only before a boolean";
  EXPECT_EQ(error_of({"-1"}), "unexpected argument '-1' (flags look like --name=value)");
}

// tf_cnn_benchmarks' flags without a counterpart here run with a note naming why; those whose
// absence would change what is measured are refused unless given at tf_cnn_benchmarks' default.
TEST(Config, TfCnnFlagsWithoutACounterpartAreNotedOrRefused) {
  const Config c = parse({"--model=resnet20", "--horovod_device=gpu", "--xla", "--local_parameter_device", "cpu",
                          "--nodistortions", "--num_inter_threads=2", "--eval=False", "--num_epochs_per_decay=0.0",
                          "--job_name="});
  EXPECT_EQ(c.tf_cnn_noted.size(), 8u);
  const std::vector<std::string> notes = flag_notes(c);
  auto noted = [&](const std::string& start) {
    for (const std::string& n : notes)
      if (n.rfind(start, 0) == 0) return n;
    return std::string();
  };
  EXPECT_NE(noted("--horovod_device=gpu: tf_cnn_benchmarks' flag: ").find("not used"), std::string::npos) << noted("--h");
  EXPECT_NE(noted("--xla=true: "), "");
  EXPECT_NE(noted("--local_parameter_device=cpu: "), "");
  EXPECT_NE(noted("--distortions=false: "), "");
  EXPECT_NE(noted("--eval=False: tf_cnn_benchmarks' flag at its default"), "");
  EXPECT_NE(noted("--num_epochs_per_decay=0.0: tf_cnn_benchmarks' flag at its default"), "");
  EXPECT_EQ(error_of({"--gradient_clip=1.0"}), "--gradient_clip: tf_cnn_benchmarks' flag: gradient clipping, which "
                                               "cnnbench does not model");
  EXPECT_NE(error_of({"--eval"}).find("evaluation alone"), std::string::npos);
  EXPECT_NE(error_of({"--num_epochs_per_decay=2"}).find("--piecewise_learning_rate_schedule"), std::string::npos);
  EXPECT_NE(error_of({"--job_name=worker"}).find("mpiexec or srun"), std::string::npos);
  EXPECT_EQ(error_of({"--xla=maybe"}), "--xla: 'maybe' is not true or false");
  EXPECT_EQ(error_of({"--horovod_device"}), "flag --horovod_device needs a value");
}

TEST(Config, ErrorsNameTheFlagAndTheReason) {
  EXPECT_EQ(error_of({"--batchsize=3"}), "--batchsize: unknown flag 'batchsize' (see --help)");
  EXPECT_EQ(error_of({"--batch_size=three"}), "--batch_size: 'three' is not an integer");
  EXPECT_EQ(error_of({"--num_batches=0"}), "--num_batches: must be at least 1, not 0");
  EXPECT_NE(error_of({"--optimizer=adam"}).find("'adam' is not one of sgd, momentum"), std::string::npos);
  EXPECT_NE(error_of({"--train_augmentation=mixup"}).find("'mixup' is not one of auto, none, crop_flip"),
            std::string::npos);
  EXPECT_NE(error_of({"--variable_update=distributed_replicated"}).find("parameter servers"), std::string::npos);
  EXPECT_EQ(error_of({"--forward_only=maybe"}), "--forward_only: 'maybe' is not true or false");
  EXPECT_EQ(error_of({"--model"}), "flag --model needs a value");
  EXPECT_EQ(error_of({"resnet50"}), "unexpected argument 'resnet50' (flags look like --name=value)");
  EXPECT_EQ(error_of({"--init_learning_rate=nan"}), "--init_learning_rate: 'nan' is not a number");
  EXPECT_EQ(error_of({"--fusion_threshold_mb=0x10"}), "--fusion_threshold_mb: '0x10' is not a number")
      << "decimal only, as the integer flags";
  EXPECT_EQ(error_of({"--momentum=-0X1p-1"}), "--momentum: '-0X1p-1' is not a number");
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
  EXPECT_EQ(error_of({"--config=" + path}),
            path + ": key 'batch_size': wrong type for this setting (it takes a whole number, written without a decimal point)");
  // a tf_cnn_benchmarks flag cnnbench notes on the command line is noted in a config too
  std::ofstream(path) << "xla = true\n";
  EXPECT_EQ(parse({"--config=" + path}).tf_cnn_noted.size(), 1u);
  // decimals read back exactly, not rounded to 6 digits
  std::ofstream(path) << "init_learning_rate = 0.0123456789\nfp16_loss_scale = 16777215.0\n";
  const Config exact = parse({"--config=" + path});
  EXPECT_EQ(exact.init_learning_rate, 0.0123456789);
  EXPECT_EQ(exact.fp16_loss_scale, 16777215.0);
  std::ofstream(path) << "batch_size = \n";
  EXPECT_NE(error_of({"--config=" + path}).find(path + ":1:"), std::string::npos);
  EXPECT_NE(error_of({"--config=/nonexistent/x.toml"}).find("/nonexistent/x.toml"), std::string::npos);
}

// Found by fuzz_flags and fuzz_config_toml: a value, flag or file name with a newline in it made
// the error two lines; now control characters show as escapes and long values are cut.
TEST(Config, ErrorsStayOneLine) {
  EXPECT_EQ(error_of({"--batch_size=1\n2"}), "--batch_size: '1\\n2' is not an integer");
  EXPECT_EQ(error_of({"l--dome\x14\n"}), "unexpected argument 'l--dome\\x14\\n' (flags look like --name=value)");
  EXPECT_EQ(error_of({"--bogus\t=1"}), "--bogus\\t: unknown flag 'bogus\\t' (see --help)");
  EXPECT_EQ(error_of({"--batch_size=" + std::string(300, '7')}),
            "--batch_size: '" + std::string(100, '7') + "...' is not an integer");
  const Config c = parse({"--model=\n_llmac"});
  EXPECT_EQ(testing::error_of([&] { resolve_settings(c, 1, 1); }).rfind("--model: unknown model '\\n_llmac' (known: ", 0), 0u);
  EXPECT_EQ(error_of({"--config", ".\n\n"}), ".\\n\\n: cannot read (No such file or directory)");
  EXPECT_EQ(printable(std::string(150, 'a')), std::string(100, 'a') + "...");
  EXPECT_EQ(printable("caf\xc3\xa9 \x7f\r"), "caf\xc3\xa9 \\x7f\\x0d");  // UTF-8 kept
}

TEST(Config, ConfigFileThatIsNoFile) {
  EXPECT_EQ(error_of({"--config=" + ::testing::TempDir()}), ::testing::TempDir() + ": is a folder, not a file");
  const std::string big = ::testing::TempDir() + "/cnnbench_big.toml";
  std::ofstream(big) << "# " << std::string(1 << 20, 'x') << "\n";
  EXPECT_EQ(error_of({"--config=" + big}), big + ": larger than 1 MiB, not a cnnbench config");
  EXPECT_EQ(error_of({"--config=/dev/zero"}), "/dev/zero: is a device, not a regular file");
}

// toml++ 3.3 (Debian 12) reaches undefined behaviour asking whether some non-ASCII characters
// are whitespace (fuzz_config_toml: UBSan "unreachable" in is_non_ascii_horizontal_whitespace,
// found after a value, in a quoted key, after a backslash in a multi-line string). Those
// characters reach toml++ as private-use stand-ins and come back as themselves, so a file reads
// as TOML says wherever they stand; UBSan runs this test in the sanitizer build.
TEST(Config, CharactersTomlPlusPlusMishandlesReadAsThemselves) {
  const std::string path = ::testing::TempDir() + "/cnnbench_unicode.toml";
  auto error_of_toml = [&](const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
    return error_of({"--config=" + path});
  };
  auto data_dir_of = [&](const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
    return parse({"--config=" + path}).data_dir;
  };
  // one from each range toml++ mishandles: U+00E9, U+2C5E, U+FEF7; and U+3000, a space it handles
  const std::string odd = "\xc3\xa9\xe2\xb1\x9e\xef\xbb\xb7\xe3\x80\x80";
  EXPECT_EQ(data_dir_of("data_dir = \"/d/" + odd + "\"\n"), "/d/" + odd);
  EXPECT_EQ(data_dir_of("data_dir = '/d/" + odd + "'  # " + odd + "\n"), "/d/" + odd);
  EXPECT_EQ(data_dir_of("# " + odd + "\ndata_dir = \"\"\"a\\\n  " + odd + "\"\"\"\n"), "a" + odd);  // #190
  EXPECT_EQ(data_dir_of("data_dir = \'\'\'\n" + odd + "\n\'\'\'\n"), odd + "\n");
  EXPECT_EQ(data_dir_of("\xef\xbb\xbf" "data_dir = \"x\"\n"), "x");  // a byte-order mark
  // where TOML allows none of them, toml++'s own error, naming the character as written
  EXPECT_EQ(error_of_toml("batch_size = 1\xc2\xa1\n"),
            path + ":1: Error while parsing decimal integer: expected digit, saw '\xc2\xa1'");
  EXPECT_EQ(error_of_toml("\"caf\xc3\xa9\" = 1\n"), path + ": unknown key 'caf\xc3\xa9'");
  EXPECT_NE(error_of_toml("model = 'x'\n[\xe3\x80\x81]\n").find(path + ":2: "), std::string::npos);
  EXPECT_EQ(error_of_toml("data_dir = \"\"\"\"d\\\xc2\xa1\"\"\"\n"),
            path + ":1: Error while parsing string: unknown escape sequence '\\\xc2\xa1'");
  // the stand-ins themselves, and text that is not UTF-8, are refused before toml++ reads them
  EXPECT_EQ(error_of_toml("# \xee\x80\x80\n"), path + ":1: private-use character U+E000 is not accepted in a config file");
  EXPECT_EQ(error_of_toml("model = 'x'\ndata_dir = 'r\xe9'\n"), path + ":2: is not UTF-8 text (a TOML file must be)");
  EXPECT_EQ(error_of_toml("data_dir = '\xe0\x82\xa1'\n"), path + ":1: is not UTF-8 text (a TOML file must be)");  // overlong U+00A1
  EXPECT_EQ(data_dir_of("data_dir = '\xee\xaf\x8b'\n"), "\xee\xaf\x8b");  // U+EBCB, the first private-use one not a stand-in
}


// A BMP character above U+007F as UTF-8 (two or three bytes).
std::string utf8_of(uint32_t c) {
  std::string out;
  if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
  } else {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
  }
  out += static_cast<char>(0x80 | (c & 0x3F));
  return out;
}

// Issue 35: TOML's line-ending backslash trims spaces, tabs and newlines only; toml++ 3.3 trimmed
// every character it takes for whitespace, so """triv\<newline>U+3000 ial""" read "trivial" where
// TOML (and Python's tomllib) read "triv" U+3000 " ial". Each of the 23 such characters, in each
// place the trimming reaches, reads as tomllib reads it.
TEST(Config, LineEndingBackslashTrimsOnlyTomlWhitespace) {
  const std::string path = ::testing::TempDir() + "/cnnbench_line_ending_backslash.toml";
  auto model_of = [&](const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
    return parse({"--config=" + path}).model;
  };
  auto utf8 = utf8_of;
  EXPECT_EQ(model_of("model = \"\"\"triv\\\n\xe3\x80\x80 ial\"\"\"\n"), "triv\xe3\x80\x80 ial");  // the report's case
  std::vector<uint32_t> odd = {0x85, 0xA0, 0x1680, 0x180E, 0x2028, 0x2029, 0x202F, 0x205F, 0x2060, 0x3000, 0xFEFF};
  for (uint32_t c = 0x2000; c <= 0x200B; ++c) odd.push_back(c);
  for (const uint32_t c : odd) {
    const std::string w = utf8(c);
    EXPECT_EQ(model_of("model = \"\"\"triv\\\n" + w + " ial\"\"\"\n"), "triv" + w + " ial") << std::hex << c;
    EXPECT_EQ(model_of("model = \"\"\"triv\\\r\n \t" + w + "ial\"\"\"\n"), "triv" + w + "ial") << std::hex << c;
    EXPECT_EQ(model_of("model = \"\"\"triv\\\n\n  \n" + w + "ial\"\"\"\n"), "triv" + w + "ial") << std::hex << c;
    EXPECT_EQ(model_of("model = \"\"\"a\\\n  \\\n" + w + "\"\"\"\n"), "a" + w) << std::hex << c;
    // and as before: a character in a string, an error between tokens
    EXPECT_EQ(model_of("model = 'a" + w + "b'  # " + w + "\n"), "a" + w + "b") << std::hex << c;
    std::ofstream(path, std::ios::binary) << "model " + w + "= 'x'\n";
    EXPECT_THROW(parse({"--config=" + path}), ConfigError) << std::hex << c;
  }
  // ASCII whitespace is trimmed as ever
  EXPECT_EQ(model_of("model = \"\"\"triv\\   \r\n \t\n\t ial\"\"\"\n"), "trivial");
  // a byte-order mark opens a file (toml++ skips it there); anywhere else it is a character
  EXPECT_EQ(model_of("\xef\xbb\xbfmodel = \"x\"\n"), "x");
  std::ofstream(path, std::ios::binary) << "\xef\xbb\xbf\xef\xbb\xbfmodel = \"x\"\n";
  EXPECT_THROW(parse({"--config=" + path}), ConfigError);
  // the new stand-ins, like the first ones, are refused as input
  std::ofstream(path, std::ios::binary) << "model = '\xef\xa3\xa0'\n";
  EXPECT_EQ(error_of({"--config=" + path}), path + ":1: private-use character U+F8E0 is not accepted in a config file");
  EXPECT_EQ(model_of("model = '\xef\xa3\x9f'\n"), "\xef\xa3\x9f");  // U+F8DF, not a stand-in
}

// Every character of the Basic Multilingual Plane where toml++ asks "whitespace?": after a value,
// between tokens and after a backslash in a multi-line string. Each parses or gives one error that
// names the character as written (never a stand-in); the sanitizer build (UBSan) fails this test
// on any character that still reaches toml++'s unhandled blocks.
TEST(Config, EveryCharacterWhereTomlPlusPlusAsksForWhitespace) {
  auto utf8 = utf8_of;
  int tried = 0, errors = 0;
  for (uint32_t c = 0x80; c <= 0xFFFF; ++c) {
    if ((c >= 0xD800 && c <= 0xDFFF) || (c >= 0xE000 && c <= 0xF8FF)) continue;  // surrogates, private use
    const std::string ch = utf8(c);
    for (const std::string& text : {"data_dir = 'x'" + ch + "\n", ch + " = 1\n", "data_dir = \"\"\"a\\" + ch + "\"\"\"\n"}) {
      ++tried;
      Config config;
      try {
        apply_config_text(text, "u.toml", config);
      } catch (const ConfigError& e) {
        ++errors;
        const std::string what = e.what();
        ASSERT_EQ(what.find('\n'), std::string::npos) << what;
        ASSERT_EQ(what.find("\xee"), std::string::npos) << "a stand-in leaked: " << what;
      }
    }
  }
  EXPECT_EQ(tried, 3 * (0x10000 - 0x80 - 0x800 - 0x1900));
  EXPECT_GT(errors, tried / 2);  // TOML accepts none of them as a bare key or an escape
}

TEST(Config, RepeatsAreBoundedAndOnlyWhereARunRepeats) {
  EXPECT_EQ(parse({"--repeats=5"}).repeats, 5);
  EXPECT_EQ(error_of({"--repeats=0"}), "--repeats: must be at least 1, not 0");
  EXPECT_NE(error_of({"--repeats=1001"}).find("at most 1000"), std::string::npos);
  EXPECT_EQ(error_of({"--repeats=2", "--mode=allreduce"}), "--repeats: repeats the training benchmark, not --mode=allreduce");
  EXPECT_EQ(error_of({"--repeats=3", "--data_dir=/data"}),
            "--repeats: repeats the synthetic benchmark; a --data_dir run trains once");
  EXPECT_EQ(error_of({"--repeats=1", "--data_dir=/data"}), "");
}

TEST(Config, OverlapWithForwardIsForHostReducersWithoutLossScaling) {
  EXPECT_EQ(error_of({"--overlap_forward", "--allreduce=gloo"}), "");
  EXPECT_EQ(error_of({"--overlap_forward", "--forward_priority=false"}), "");
  EXPECT_NE(error_of({"--overlap_forward", "--device=gpu"}).find("--overlap_forward: CPU ranks"), std::string::npos);
  EXPECT_NE(error_of({"--overlap_forward", "--use_fp16", "--fp16_loss_scale=128"}).find("not with loss scaling"),
            std::string::npos);
  EXPECT_NE(error_of({"--overlap_forward", "--precision=bf16", "--fp16_enable_auto_loss_scale"}).find("not with loss scaling"),
            std::string::npos);
  // fp32 runs scale no loss: the flag is noted and ignored, so it refuses nothing
  EXPECT_EQ(error_of({"--overlap_forward", "--fp16_loss_scale=128"}), "");
  // PowerSGD's error feedback cannot take an overflowing step or a changing scale
  EXPECT_NE(error_of({"--compression=powersgd", "--use_fp16", "--fp16_enable_auto_loss_scale"}).find("not with loss scaling"),
            std::string::npos);
  EXPECT_EQ(error_of({"--compression=powersgd", "--use_fp16"}), "");
  // tf_cnn_benchmarks refuses a rate beside a piecewise schedule (its first rate is the rate)
  EXPECT_NE(error_of({"--piecewise_learning_rate_schedule=0.1;5;0.01", "--init_learning_rate=0.05"}).find("give one of them"),
            std::string::npos);
  // the allreduce microbenchmark times host buffers, never NCCL's
  EXPECT_NE(error_of({"--mode=allreduce", "--device=gpu", "--allreduce=nccl"}).find("--mode=allreduce times the host"),
            std::string::npos);
  EXPECT_TRUE(parse({"--overlap_forward"}).forward_priority);
  EXPECT_EQ(parse({"--first_layers_bucket_mb=0.5"}).first_layers_bucket_mb, 0.5);
  EXPECT_NE(error_of({"--first_layers_bucket_mb=1", "--fusion_threshold_mb=0"}).find("every tensor is a bucket already"),
            std::string::npos);
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
  // LARS: its eta in (0, 1]; LARS and label smoothing run on GPUs too
  c = parse({"--optimizer=lars", "--lars_eta=0.02", "--model=resnet50"});
  EXPECT_DOUBLE_EQ(c.lars_eta, 0.02);
  EXPECT_NO_THROW(resolve_settings(c, 1, 1));
  EXPECT_EQ(error_of({"--lars_eta=0"}), "--lars_eta: must be in (0, 1]");
  EXPECT_EQ(error_of({"--label_smoothing=1"}), "--label_smoothing: must be in [0, 1)");
  c = parse({"--label_smoothing=0.1", "--device=gpu", "--model=resnet50"});
  EXPECT_NO_THROW(resolve_settings(c, 1, 1));
  c = parse({"--optimizer=lars", "--device=gpu", "--model=resnet50"});
  EXPECT_NO_THROW(resolve_settings(c, 1, 1));
  // tf_cnn_benchmarks' --device takes CPU and GPU too
  EXPECT_EQ(parse({"--device=GPU"}).backend, "cuda");
  EXPECT_EQ(parse({"--device=CPU"}).device, "cpu");
  // contradictions are refused, not settled silently: --backend=cuda ran on the GPU whatever
  // --device said; --use_fp16 on a GPU ran fp16 beside --precision=bf16
  EXPECT_EQ(error_of({"--backend=cuda", "--device=cpu"}),
            "--backend=cuda runs on the GPU, --device=cpu on the CPU: give one of them");
  c = parse({"--device=gpu", "--use_fp16", "--precision=bf16", "--model=resnet50"});
  EXPECT_EQ(testing::error_of([&] { resolve_settings(c, 1, 1); }),
            "--use_fp16 computes in fp16 on a GPU, --precision=bf16 in bf16: give one of them");
}

// Pairs whose one flag the run would have dropped without a word are refused, as
// tf_cnn_benchmarks refuses them.
TEST(Config, FlagsOneOfWhichWouldGoUnreadAreRefused) {
  // --num_epochs overrode --num_batches: a 3-step check trained a whole epoch
  EXPECT_EQ(error_of({"--num_batches=3", "--num_epochs=1"}),
            "--num_batches and --num_epochs: give one of them (--num_epochs=0 undoes a config file's)");
  EXPECT_EQ(error_of({"--num_batches=3", "--num_epochs=0"}), "");
  // a --num_batches run on real data evaluates only where asked: a target read as a miss
  for (const char* target : {"--target_top_1_accuracy=0.5", "--stop_at_top_1_accuracy=0.5"}) {
    EXPECT_NE(error_of({"--data_dir=d", "--num_batches=3", target}).find("a --num_batches run evaluates only with "
                                                                       "--eval_during_training_every_n_epochs"),
              std::string::npos)
        << target;
    EXPECT_EQ(error_of({"--data_dir=d", "--num_batches=3", "--eval_during_training_every_n_epochs=1", target}), "");
    EXPECT_EQ(error_of({"--data_dir=d", "--num_epochs=2", target}), "");
  }
  // independent ranks on real data: one model evaluated and checkpointed out of several
  Config c = parse({"--model=resnet20", "--data_dir=d", "--variable_update=independent", "--num_epochs=1"});
  EXPECT_NE(testing::error_of([&] { resolve_settings(c, 2, 1); }).find("--variable_update=independent: each rank"),
            std::string::npos);
  EXPECT_NO_THROW(resolve_settings(c, 1, 1));
  c = parse({"--model=resnet20", "--data_dir=d", "--variable_update=independent", "--num_batches=5"});
  EXPECT_NO_THROW(resolve_settings(c, 2, 1));  // a benchmark on real data: no evaluation, no checkpoint
}

// The default ImageNet rate is 0.1 a 256 images; --learning_rate_base_batch names the batch 0.1
// is for instead: scaled by global / base once (by both it was 0.1 x (global / 256)^2).
TEST(Config, BaseBatchScalesImagenetsDefaultRateOnce) {
  Config c = parse({"--model=resnet50", "--batch_size=2"});
  EXPECT_DOUBLE_EQ(resolve_settings(c, 2, 1).schedule_base_rate, 0.1 * 4 / 256);
  c = parse({"--model=resnet50", "--batch_size=2", "--learning_rate_base_batch=256"});
  EXPECT_DOUBLE_EQ(resolve_settings(c, 2, 1).schedule_base_rate, 0.1 * 4 / 256);
  c = parse({"--model=resnet50", "--batch_size=2", "--learning_rate_base_batch=1024"});
  EXPECT_DOUBLE_EQ(resolve_settings(c, 2, 1).schedule_base_rate, 0.1 * 4 / 1024);
  c = parse({"--model=resnet50", "--batch_size=2", "--learning_rate_base_batch=256", "--init_learning_rate=0.2"});
  EXPECT_DOUBLE_EQ(resolve_settings(c, 2, 1).schedule_base_rate, 0.2 * 4 / 256);
}

// PowerSGD's uncompressed steps join the warm-up only where gradients are exchanged.
TEST(Config, PowerSgdWarmupOnlyWhereGradientsTravel) {
  const Config c = parse({"--model=resnet20", "--compression=powersgd", "--powersgd_warmup_steps=50"});
  EXPECT_EQ(resolve_settings(c, 2, 1).warmup_steps, 50);
  EXPECT_EQ(resolve_settings(c, 1, 1).warmup_steps, std::min<int64_t>(10, std::max<int64_t>(1, 100 / 4)));
}

TEST(Config, ShippedPresetsParse) {
  for (const char* preset : {"resnet50_synthetic.toml", "vgg16_synthetic.toml", "resnet20_synthetic.toml",
                             "fashion_mnist.toml", "fashion_mnist_resnet.toml", "cifar10_resnet20.toml",
                             "cifar10_resnet56.toml"}) {
    const std::string path = std::string(CNNBENCH_SOURCE_DIR) + "/configs/" + preset;
    EXPECT_NO_THROW(parse({"--config=" + path})) << path;
  }
  const Config c = parse({"--config=" CNNBENCH_SOURCE_DIR "/configs/fashion_mnist_resnet.toml"});
  EXPECT_EQ(c.train_augmentation, "crop_flip");
  EXPECT_EQ(c.learning_rate_base_batch, 128);
  EXPECT_GT(c.target_top_1_accuracy, 0.9);
}

// Every numeric flag has a range (named in its --help); past either end is one ConfigError line.
// The upper ends were found by hand: --num_intra_threads=100000 crashed libgomp (exit 139),
// --num_batches=2^63-1 ended in vector::reserve, --num_epochs=1e300 and --fusion_threshold_mb=1e300
// converted out of range (undefined) and ran.
TEST(Config, NumericFlagsOutOfRangeAreRefused) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"--num_intra_threads=100000", "--num_intra_threads: must be at most 1024, not 100000"},
      {"--num_intra_threads=-1", "--num_intra_threads: must not be negative"},
      {"--batch_size=65537", "--batch_size: must be at most 65536, not 65537"},
      {"--batch_size=9223372036854775807", "--batch_size: must be at most 65536, not 9223372036854775807"},
      {"--batch_size=9223372036854775808", "--batch_size: '9223372036854775808' is not an integer"},
      {"--num_batches=10000001", "--num_batches: must be at most 10000000, not 10000001"},
      {"--num_warmup_batches=9223372036854775806", "--num_warmup_batches: must be at most 10000000, not 9223372036854775806"},
      {"--num_warmup_batches=-2", "--num_warmup_batches: must be at least -1, not -2"},
      {"--display_every=10000001", "--display_every: must be at most 10000000, not 10000001"},
      {"--num_epochs=1e300", "--num_epochs: must be at most 10000, not 1e+300"},
      {"--num_epochs=-1", "--num_epochs: must not be negative"},
      {"--init_learning_rate=1e300", "--init_learning_rate: must be at most 1000, not 1e+300"},
      {"--init_learning_rate=inf", "--init_learning_rate: 'inf' is not a number"},
      {"--init_learning_rate=1e400", "--init_learning_rate: '1e400' is out of range (a double holds at most 1.8e308)"},
      {"--init_learning_rate=-nan", "--init_learning_rate: '-nan' is not a number"},
      {"--momentum=1.5", "--momentum: must be at most 1, not 1.5"},
      {"--weight_decay=2", "--weight_decay: must be at most 1, not 2"},
      {"--fp16_loss_scale=1e300", "--fp16_loss_scale: must be at most 16777216, not 1e+300"},
      {"--fusion_threshold_mb=1e300", "--fusion_threshold_mb: must be at most 4096, not 1e+300"},
      {"--fusion_threshold_mb=-0.5", "--fusion_threshold_mb: must not be negative"},
      {"--first_layers_bucket_mb=5000", "--first_layers_bucket_mb: must be at most 4096, not 5000"},
      {"--first_layers_bucket_mb=-1", "--first_layers_bucket_mb: must not be negative"},
      {"--allreduce_max_mb=2048", "--allreduce_max_mb: must be in [0.004, 1024]"},
      {"--collective_timeout_sec=1e300", "--collective_timeout_sec: must be at most 86400, not 1e+300"},
      {"--num_learning_rate_warmup_epochs=10001", "--num_learning_rate_warmup_epochs: must be at most 10000, not 10001"},
      {"--eval_during_training_every_n_epochs=1e9", "--eval_during_training_every_n_epochs: must be at most 10000, not 1000000000"},
      {"--learning_rate_base_batch=16777217", "--learning_rate_base_batch: must be at most 16777216, not 16777217"},
      {"--num_data_workers=65", "--num_data_workers: must be at most 64, not 65"},
      {"--seed=-1", "--seed: must not be negative"},
      {"--stop_at_top_1_accuracy=1.5", "--stop_at_top_1_accuracy: must be in [0, 1]"},
      {"--target_top_1_accuracy=-0.1", "--target_top_1_accuracy: must be in [0, 1]"},
  };
  for (const auto& [flag, message] : refused) EXPECT_EQ(error_of({flag}), message) << flag;
  // the ends themselves are fine
  for (const char* flag : {"--num_intra_threads=1024", "--batch_size=65536", "--num_batches=10000000",
                           "--num_epochs=10000", "--init_learning_rate=1000", "--momentum=1", "--fp16_loss_scale=16777216",
                           "--fusion_threshold_mb=4096", "--collective_timeout_sec=86400", "--num_data_workers=64",
                           "--seed=9223372036854775807"})
    EXPECT_EQ(error_of({flag}), "") << flag;
  // and a TOML file gets the same ranges, nan and inf included
  const std::string path = ::testing::TempDir() + "/cnnbench_ranges.toml";
  for (const char* value : {"nan", "inf", "-inf", "1e300"}) {
    std::ofstream(path) << "init_learning_rate = " << value << "\n";
    EXPECT_EQ(error_of({"--config=" + path}).rfind(path + ": key 'init_learning_rate': ", 0), 0u) << value;
  }
  std::ofstream(path) << "num_intra_threads = 100000\n";
  EXPECT_EQ(error_of({"--config=" + path}), path + ": key 'num_intra_threads': must be at most 1024, not 100000");
}

// --mode takes the results' name for a training run, and the name it had before.
TEST(Config, ModeTakesTheResultsNameAndTheOldOne) {
  EXPECT_EQ(parse({}).mode, "training");
  EXPECT_EQ(parse({"--mode=train"}).mode, "training");
  EXPECT_EQ(parse({"--mode=training"}).mode, "training");
  EXPECT_EQ(parse({"--mode=allreduce"}).mode, "allreduce");
  EXPECT_NE(error_of({"--mode=eval"}).find("is not one of training, train, allreduce, input"), std::string::npos);
}

TEST(Config, HelpNamesEachRange) {
  const std::string help = usage();
  for (const char* range : {"at most 1024", "at most 65536", "at most 10000000", "at most 64", "in [0, 1]",
                            "at most 4096", "at most 16777216 (2^24)"})
    EXPECT_NE(help.find(range), std::string::npos) << range;
}

// The ranks x batch product is checked where the rank count is known, before it is formed.
TEST(Config, GlobalBatchAndEpochStepsAreBounded) {
  Config c = parse({"--model=resnet20", "--batch_size=65536"});
  EXPECT_EQ(resolve_settings(c, 256, 1).global_batch, 16777216);
  std::string m = testing::error_of([&] { resolve_settings(c, 257, 1); });
  EXPECT_EQ(m, "--batch_size: 65536 per rank x 257 ranks is more than the 16777216 images a step may have");
  c = parse({"--model=resnet20", "--batch_size=1"});
  EXPECT_NE(testing::error_of([&] { resolve_settings(c, INT_MAX, 1); }).find("x 2147483647 ranks"), std::string::npos);
  // epochs become steps: ImageNet's 1281167 images x 10000 epochs at batch 1 is 1.3e10 steps
  c = parse({"--model=resnet50", "--batch_size=1", "--num_epochs=10000"});
  m = testing::error_of([&] { resolve_settings(c, 1, 1); });
  EXPECT_EQ(m, "--num_epochs: 12811670000 steps of 1 images, more than the 10000000 a run may have");
  c = parse({"--model=resnet50", "--batch_size=64", "--num_epochs=90"});
  EXPECT_EQ(resolve_settings(c, 8, 1).timed_steps, 225206);  // ceil(90 x 1281167 / 512)
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
