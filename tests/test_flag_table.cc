// The flag table keeps every flag alive: --help lists exactly the table's flags, every flag says
// where it is read, and where it says so a one-step run shows it: setting the flag to its probe
// value changes what the table says it changes (a result JSON value, output lines, a file made,
// or the exit code). A flag the run does not read gets a one-line note instead, never silence.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "cli_run.h"
#include "harness/cli/config.h"
#include "kernels/backend.h"
#include "test_files.h"

namespace cnnbench {
namespace {

// The smallest run of each kind: one or two steps of tiny models.
std::string base_args(RunKind kind) {
  switch (kind) {
    case kSynthetic: return "--model=trivial --batch_size=4 --num_batches=2 --num_intra_threads=1";
    case kRealData:
      return "--model=small_cnn --data_dir=. --batch_size=16 --num_batches=2 --num_intra_threads=1 "
             "--num_data_workers=1";
    case kAllreduce: return "--mode=allreduce --allreduce_max_mb=0.004 --model=trivial";
    case kInput: return "--mode=input --data_dir=. --model=small_cnn --batch_size=16 --num_batches=2 --num_data_workers=1";
    case kNoRun: return "";
  }
  return "";
}

// A folder with a tiny Fashion-MNIST in idx files (real-data and input runs read it).
std::string run_dir(const std::string& name) {
  const std::string dir = fresh_dir(name);
  testing::write_idx_dataset(dir, "train", 256, false);
  testing::write_idx_dataset(dir, "t10k", 64, false);
  return dir;
}

// What `shows` selects from a finished run in `dir`.
std::string observe(const std::string& shows, const CliRun& run, const std::string& dir, const std::string& value) {
  if (shows == "exit") return std::to_string(run.exit_code);
  if (shows == "path") return std::filesystem::exists(dir + "/" + value) ? "exists" : "absent";
  if (shows.rfind("out:", 0) == 0) {
    std::istringstream lines(run.output);
    std::string line, out;
    // timings and file names (a time stamp) vary from run to run: their digits do not count
    while (std::getline(lines, line)) {
      if (line.find(shows.substr(4)) == std::string::npos) continue;
      const bool timing = line.find("images/sec") != std::string::npos;
      std::istringstream words(line);
      std::string word;
      while (words >> word) {
        const bool varies = timing || word.find('/') != std::string::npos;
        for (char c : word)
          if (!varies || !std::isdigit(static_cast<unsigned char>(c))) out += c;
        out += ' ';
      }
      out += '\n';
    }
    return out;
  }
  if (shows.rfind("json:", 0) == 0) {
    const std::string text = slurp_file(dir + "/r.json");
    if (!nlohmann::json::accept(text)) return "(no JSON)";
    nlohmann::json node = nlohmann::json::parse(text);
    std::istringstream path(shows.substr(5));
    std::string part;
    while (std::getline(path, part, '.')) {
      if (node.is_array() && !part.empty() && std::isdigit(static_cast<unsigned char>(part[0])))
        node = std::stoul(part) < node.size() ? node[std::stoul(part)] : nlohmann::json();
      else if (node.is_object() && node.contains(part))
        node = node[part];
      else
        return "(no " + shows + ")";
    }
    return node.dump();
  }
  ADD_FAILURE() << "unknown evidence '" << shows << "'";
  return "";
}

CliRun run_in(const std::string& dir, const std::string& args) {
  std::filesystem::remove(dir + "/r.json");  // a run that fails must not show the one before's
  return run_cnnbench("--benchmark_log_dir=log --result_json=r.json " + args, dir);  // the flag probed comes later and wins
}

TEST(FlagTable, HelpListsExactlyTheTablesFlags) {
  const CliRun help = run_cnnbench("--help", ::testing::TempDir());
  ASSERT_EQ(help.exit_code, 0) << help.output;
  std::set<std::string> in_help, in_table;
  std::istringstream lines(help.output);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind("  --", 0) == 0) in_help.insert(line.substr(4, line.find_first_of(" =", 4) - 4));
  in_help.erase("config");  // the file of flags, not a setting
  for (const FlagInfo& f : flag_table()) {
    in_table.insert(f.name);
    EXPECT_NE(f.runs, 0u) << "--" << f.name << ": the table does not say which runs read it";
    EXPECT_TRUE(!f.probes.empty() || !f.unprobed.empty())
        << "--" << f.name << ": no probe shows it does something, and no reason why none can";
    for (const FlagProbe& p : f.probes)
      EXPECT_TRUE(p.kind == kNoRun ? true : (f.runs & p.kind) || (f.runs & kNoRun))
          << "--" << f.name << ": probed in a kind of run that does not read it";
  }
  EXPECT_EQ(in_help, in_table);
}

// Each probe: the base run of its kind, then the same with the flag; what the table says the
// flag changes must differ. A base run is made once for all the probes that share it, and each
// flagged run starts from a copy of its folder, as if the base had run there: about 20 base runs
// and 90 flagged runs of a step or two each.
TEST(FlagTable, EveryFlagChangesWhatItSaysWhereItIsRead) {
  namespace fs = std::filesystem;
  struct BaseRun {
    CliRun run;
    std::string dir;
  };
  std::map<std::string, BaseRun> bases;
  int probed = 0, skipped = 0;
  for (const FlagInfo& f : flag_table()) {
    for (const FlagProbe& p : f.probes) {
      std::string base = base_args(p.kind) + " " + p.context;
      // --num_batches and --num_epochs exclude each other: the epochs' base runs a few epochs' steps
      // instead (2 synthetic steps; 16 on the 256 images), which the probed value then replaces
      if (f.name == "num_epochs")
        base = std::regex_replace(base, std::regex("--num_batches=[0-9]+"),
                                  p.kind == kSynthetic ? "--num_epochs=0.000004" : "--num_epochs=1");
      auto known = bases.find(base);
      if (known == bases.end()) {
        const std::string base_dir = run_dir("flag_base_" + std::to_string(bases.size()));
        known = bases.emplace(base, BaseRun{run_in(base_dir, base), base_dir}).first;
      }
      const CliRun& without = known->second.run;
      const std::string before = observe(p.shows, without, known->second.dir, p.value);
      // bf16 and fp16 need a CPU with AVX-512 BF16 (oneDNN has no kernels for them on AVX2)
      if (without.exit_code != 0 && !cpu_computes_bf16() && p.context.find("bf16") != std::string::npos) {
        std::printf("skipped: --%s=%s (%s): this CPU cannot run its base run\n", f.name.c_str(), p.value.c_str(),
                    p.context.c_str());
        ++skipped;
        continue;
      }
      if (p.shows != "exit") {
        ASSERT_EQ(without.exit_code, 0) << "--" << f.name << " base run: " << without.output;
      }
      const std::string dir = ::testing::TempDir() + "/flag_" + f.name + "_" + std::to_string(probed);
      fs::remove_all(dir);
      fs::copy(known->second.dir, dir, fs::copy_options::recursive);
      if (f.name == "baseline") fs::copy_file(dir + "/r.json", dir + "/base.json");  // the base run's own result
      // quoted: a piecewise schedule's ';' once ended the command there (exit 127, "a change")
      const CliRun with = run_in(dir, base + " '--" + f.name + "=" + p.value + "'");
      // a GPU flag where there is none: a CUDA build says no GPU is visible, a build without CUDA
      // (no toolkit, as on a fresh machine) that it needs a GPU build
      if (with.exit_code != 0 && (with.output.find("no GPU is visible") != std::string::npos ||
                                  with.output.find("needs a GPU build") != std::string::npos)) {
        std::printf("skipped: --%s=%s: no GPU here\n", f.name.c_str(), p.value.c_str());
        ++skipped;
        continue;
      }
      if (p.shows != "exit") {
        EXPECT_EQ(with.exit_code, 0) << "--" << f.name << "=" << p.value << ": " << with.output;
      }
      const std::string after = observe(p.shows, with, dir, p.value);
      EXPECT_NE(before, after) << "--" << f.name << "=" << p.value << " changed nothing in " << p.shows << " ("
                               << run_kind_name(p.kind) << "): " << with.output;
      ++probed;
    }
  }
  EXPECT_GT(probed - skipped, 55);
  std::printf("%d probes on %zu base runs\n", probed, bases.size());
}

// A flag given where the run does not read it is said so in one line, and the run goes on.
TEST(FlagTable, AFlagTheRunDoesNotReadGetsANote) {
  const std::string dir = run_dir("flag_notes");
  CliRun r = run_in(dir, base_args(kSynthetic) + " --stop_at_top_1_accuracy=0.5 --nesterov --fp16_loss_scale=8 "
                                                 "--train_augmentation=none --cuda_graphs");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* flag : {"--stop_at_top_1_accuracy", "--nesterov", "--fp16_loss_scale", "--train_augmentation",
                           "--cuda_graphs"})
    EXPECT_NE(r.output.find(std::string("cnnbench: note: ") + flag + ": "), std::string::npos) << flag << r.output;
  r = run_in(dir, base_args(kRealData) + " --num_warmup_batches=3 --layer_timing");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cnnbench: note: --num_warmup_batches: applies to synthetic-data runs, --mode=input, not runs on real "
                           "data"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("cnnbench: note: --layer_timing: "), std::string::npos) << r.output;
  // nor do the reference backend, forward-only runs' loss scaling, or LARS's eta there
  r = run_in(dir, base_args(kSynthetic) + " --backend=ref --fuse_ops=false --share_memory=false");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* flag : {"--fuse_ops", "--share_memory"})
    EXPECT_NE(r.output.find(std::string("cnnbench: note: ") + flag + ": the ref backend runs each op alone"),
              std::string::npos)
        << flag << r.output;
  r = run_in(dir, base_args(kSynthetic) + " --forward_only --optimizer=lars --lars_eta=0.01 --precision=bf16 "
                                          "--fp16_loss_scale=128 --fp16_enable_auto_loss_scale --result_json=fwd.json");
  for (const char* flag : {"--lars_eta", "--fp16_loss_scale", "--fp16_enable_auto_loss_scale"})
    EXPECT_NE(r.output.find(std::string("cnnbench: note: ") + flag + ": forward-only runs"), std::string::npos)
        << flag << r.output;
  if (cpu_computes_bf16()) {
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(nlohmann::json::parse(slurp_file(dir + "/fwd.json"))["summary"]["loss_scale"].is_null());
  }
  // read flags get none
  r = run_in(dir, base_args(kSynthetic) + " --optimizer=momentum --momentum=0.5 --nesterov");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("note:"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace cnnbench
