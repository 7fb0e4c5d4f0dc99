// Nothing a user wrote is overwritten by surprise, and a diverged run is not a result: result
// names that never collide, a train_dir bound to the run that made it, --result_json that
// replaces only a cnnbench result, outputs checked before the first step, stale temporaries of
// killed writes cleared, a complete run resumed as complete, a non-finite loss ending the run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cli_run.h"
#include "harness/report/csv.h"
#include "train_dir_files.h"

namespace cnnbench {
namespace {

namespace fs = std::filesystem;


// Every file under dir with its bytes.
std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[e.path().string()] = slurp_file(e.path().string());
  return out;
}

int count_ending(const std::string& dir, const std::string& end) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string().ends_with(end);
  return n;
}

int csv_rows(const std::string& path) { return static_cast<int>(parse_csv(slurp_file(path), path).size()) - 1; }

TEST(NothingLost, ConvergenceResultsInTheSameSecondKeepAFileEach) {
  const std::string dir = idx_dir("lost_names");
  for (int seed = 1; seed <= 4; ++seed) {
    const CliRun r = run_cnnbench(idx + "--num_batches=1 --benchmark_log_dir=L --seed=" + std::to_string(seed), dir);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // two at once
  std::thread other([&] { run_cnnbench(idx + "--num_batches=1 --benchmark_log_dir=L --seed=5", dir); });
  run_cnnbench(idx + "--num_batches=1 --benchmark_log_dir=L --seed=6", dir);
  other.join();
  EXPECT_EQ(csv_rows(dir + "/L/results.csv"), 6);
  EXPECT_EQ(count_ending(dir + "/L", "_epochs.csv"), 6);
  EXPECT_EQ(count_ending(dir + "/L", ".json"), 6);
  // each row names its own JSON, and it is there
  const std::vector<CsvRow> rows = parse_csv(slurp_file(dir + "/L/results.csv"), "results.csv");
  const auto column = std::find(rows[0].fields.begin(), rows[0].fields.end(), "json_file") - rows[0].fields.begin();
  std::set<std::string> named;
  for (size_t i = 1; i < rows.size(); ++i) {
    named.insert(rows[i].fields[column]);
    EXPECT_TRUE(fs::exists(dir + "/" + rows[i].fields[column])) << rows[i].fields[column];
  }
  EXPECT_EQ(named.size(), 6u);
}

TEST(NothingLost, ATrainDirBelongsToTheRunThatMadeIt) {
  const std::string dir = idx_dir("lost_train_dir");
  CliRun r = run_cnnbench(idx + "--num_epochs=3 --train_dir=T", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto before = snapshot(dir + "/T");
  ASSERT_EQ(before.size(), 5u);  // three checkpoints, the marker of the results written, the (empty) lock
  EXPECT_TRUE(before.contains(dir + "/T/results-written"));
  // a run in T that exits `code` saying `says`, and leaves T as it was
  auto leaves_t_alone = [&](const std::string& args, int code, const std::string& says) {
    r = run_cnnbench(args, dir);
    EXPECT_EQ(r.exit_code, code) << args << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << args << r.output;
    EXPECT_EQ(snapshot(dir + "/T"), before) << args;
  };
  // a new run, another seed, no --resume: refused, nothing touched
  leaves_t_alone(idx + "--num_epochs=1 --train_dir=T --seed=2", 2,
                 "cnnbench: --train_dir: T holds the checkpoints of a run (newest: checkpoint-epoch-0003.ckpt): "
                 "--resume continues it");
  // another model's checkpoints are foreign, not damaged: refused, naming the difference
  leaves_t_alone("--model=resnet20_fmnist --data_dir=. --batch_size=32 --num_intra_threads=1 --train_dir=T --resume", 2,
                 "is another run's checkpoint (model small_cnn (this run: resnet20_fmnist))");
  EXPECT_EQ(r.output.find("damaged"), std::string::npos) << r.output;
  // so is the same model trained with another seed
  leaves_t_alone(idx + "--num_epochs=4 --train_dir=T --resume --seed=7", 2, "seed 1 (this run: 7)");
  // or with weight decay on batch norm's parameters, which the run did not decay
  leaves_t_alone(idx + "--num_epochs=4 --train_dir=T --resume --weight_decay_on_batch_norm", 2,
                 "weight_decay_on_batch_norm false (this run: true)");
  // and on a training set of another size (its steps would be other epochs there)
  leaves_t_alone(idx_in(dir, "half", 64, 32) + "--num_epochs=4 --train_dir=T --resume", 2,
                 "train_examples 128 (this run: 64)");
  // resuming the complete run says so and touches nothing
  leaves_t_alone(idx + "--num_epochs=3 --train_dir=T --resume", 0,
                 "the run is complete (3 epochs, 12 steps done of 12): nothing to train");
  // and so does a resume asking for fewer epochs than it holds, without calling them complete
  leaves_t_alone(idx + "--num_epochs=2 --train_dir=T --resume", 0,
                 "the checkpoint is past this run's end (3 epochs, 12 steps done; this run trains 8): nothing to train");
  // --num_epochs may grow on --resume
  r = run_cnnbench(idx + "--num_epochs=4 --train_dir=T --resume --benchmark_log_dir=L4", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir + "/T/checkpoint-epoch-0004.ckpt"));
  // --overwrite_train_dir starts afresh: none of the old run's epochs is left to resume from
  r = run_cnnbench(idx + "--num_epochs=1 --train_dir=T --seed=2 --overwrite_train_dir", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir + "/T/checkpoint-epoch-0001.ckpt"));
  EXPECT_FALSE(fs::exists(dir + "/T/checkpoint-epoch-0002.ckpt"));
  EXPECT_FALSE(fs::exists(dir + "/T/checkpoint-epoch-0004.ckpt"));
  r = run_cnnbench(idx + "--num_epochs=2 --train_dir=T --resume --seed=2", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Resuming from T/checkpoint-epoch-0001.ckpt (1 epoch done)"), std::string::npos) << r.output;
}

// A checkpoint's weights, momentum and statistics (its bytes after the header, before the checksum).

// A --num_batches run's checkpoint ends inside an epoch: the resume goes on from that step, and
// ends where a run never interrupted does, bit for bit.
// A resumed run's results hold every epoch since the run began (with --result_json, the file
// rewritten at the resume kept only the epochs after it), and time to accuracy for a target the
// checkpoint did not measure is replayed from the epochs before, its clock whole.
TEST(NothingLost, AResumedRunsResultsHoldTheEpochsBeforeIt) {
  const std::string dir = idx_dir("lost_history");
  CliRun r = run_cnnbench(idx + "--num_epochs=1 --train_dir=H --result_json=a.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto first = nlohmann::json::parse(slurp_file(dir + "/a.json"));
  r = run_cnnbench(idx + "--num_epochs=2 --train_dir=H --resume --result_json=a.json --target_top_1_accuracy=0.01", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto doc = nlohmann::json::parse(slurp_file(dir + "/a.json"));
  ASSERT_EQ(doc["epochs"].size(), 2u) << doc["epochs"].dump();
  EXPECT_EQ(doc["epochs"][0]["epoch"], 1);
  EXPECT_EQ(doc["epochs"][0]["test_top1"], first["epochs"][0]["test_top1"]);
  EXPECT_EQ(doc["epochs"][1]["epoch"], 2);
  EXPECT_EQ(doc["run"]["first_epoch"], 1);
  EXPECT_EQ(csv_rows(dir + "/a_epochs.csv"), 2);
  // any accuracy reaches 1%: at the first epoch, before the resume, on a clock that covers it
  EXPECT_EQ(doc["time_to_accuracy"]["epochs"], 1) << doc["time_to_accuracy"].dump();
  EXPECT_EQ(doc["time_to_accuracy"]["clock_complete"], true);
  EXPECT_EQ(doc["summary"]["target_top_1_accuracy"], 0.01);
  EXPECT_EQ(doc["summary"]["time_to_accuracy_sec"], doc["epochs"][0]["elapsed_sec"]);
}

// A cosine schedule spans --num_epochs: another length on --resume is another schedule, refused
// (it went on at the other length's rate, one run in the results).
TEST(NothingLost, ACosineScheduleKeepsItsLengthOnResume) {
  const std::string dir = idx_dir("lost_cosine");
  CliRun r = run_cnnbench(idx + "--num_epochs=2 --cosine_learning_rate --train_dir=C", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_cnnbench(idx + "--num_epochs=3 --cosine_learning_rate --train_dir=C --resume", dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cosine_epochs 2 (this run: 3)"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir + "/C/checkpoint-epoch-0003.ckpt"));
}

// A finished run that stopped between its last checkpoint and its results (killed, or the disk
// full) writes them on --resume from the checkpoint's epochs, once; a later --resume has nothing
// left to do.
TEST(NothingLost, ResultsLostAfterTheLastCheckpointAreWrittenOnResume) {
  const std::string dir = idx_dir("lost_results");
  CliRun r = run_cnnbench(idx + "--num_epochs=2 --train_dir=R --benchmark_log_dir=L1", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(dir + "/R/results-written"));
  fs::remove(dir + "/R/results-written");  // as if it died before writing them
  fs::remove_all(dir + "/L1");
  r = run_cnnbench(idx + "--num_epochs=2 --train_dir=R --resume --benchmark_log_dir=L2", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the run is complete, but its results were not written"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Epoch 3"), std::string::npos) << r.output;
  EXPECT_EQ(csv_rows(dir + "/L2/results.csv"), 1);
  ASSERT_EQ(count_ending(dir + "/L2", ".json"), 1);
  for (const auto& e : fs::directory_iterator(dir + "/L2"))
    if (e.path().extension() == ".json") {
      const auto doc = nlohmann::json::parse(slurp_file(e.path().string()));
      EXPECT_EQ(doc["epochs"].size(), 2u);
      EXPECT_GT(doc["summary"]["images_per_sec"].get<double>(), 0);
      EXPECT_EQ(doc["summary"]["images"], 256);
    }
  r = run_cnnbench(idx + "--num_epochs=2 --train_dir=R --resume --benchmark_log_dir=L2", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the run is complete (2 epochs, 8 steps done of 8): nothing to train"), std::string::npos)
      << r.output;
  EXPECT_EQ(csv_rows(dir + "/L2/results.csv"), 1);
}

// One run at a time in a train_dir: a second one, while the first holds it, is refused and
// touches nothing (two runs there wrote their checkpoints over each other's).
TEST(NothingLost, ARunningRunsTrainDirIsRefusedToAnother) {
  const std::string dir = idx_dir("lost_shared");
  fs::create_directories(dir + "/S");
  const int fd = ::open((dir + "/S/.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  struct flock whole = {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  ASSERT_EQ(::fcntl(fd, F_SETLK, &whole), 0);  // as a running run holds it
  const CliRun r = run_cnnbench(idx + "--num_epochs=1 --train_dir=S", dir);
  ::close(fd);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--train_dir: S is in use by another run (pid " + std::to_string(getpid()) +
                          "): one run at a time"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir + "/S/checkpoint-epoch-0001.ckpt"));
  // released, the folder is free
  EXPECT_EQ(run_cnnbench(idx + "--num_epochs=1 --train_dir=S", dir).exit_code, 0);
}

// --resume where checkpoints are there but none reads back whole is refused: starting from
// scratch wrote over them.
TEST(NothingLost, AResumeWithEveryCheckpointDamagedIsRefused) {
  const std::string dir = idx_dir("lost_all_damaged");
  CliRun r = run_cnnbench(idx + "--num_epochs=2 --train_dir=T", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* name : {"/T/checkpoint-epoch-0001.ckpt", "/T/checkpoint-epoch-0002.ckpt"})
    fs::resize_file(dir + name, 100);
  const auto before = snapshot(dir + "/T");
  r = run_cnnbench(idx + "--num_epochs=3 --train_dir=T --resume", dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--resume: no checkpoint in T reads back whole"), std::string::npos) << r.output;
  EXPECT_EQ(snapshot(dir + "/T"), before);
}

// A run stopped at --stop_at_top_1_accuracy goes on where a --resume asks for a higher one.
TEST(NothingLost, AStoppedRunGoesOnForAHigherStop) {
  const std::string dir = idx_dir("lost_stop");
  const std::string every = "--eval_during_training_every_n_epochs=1 ";
  CliRun r = run_cnnbench(idx + every + "--num_epochs=3 --train_dir=T --stop_at_top_1_accuracy=0.01", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_FALSE(fs::exists(dir + "/T/checkpoint-epoch-0002.ckpt")) << r.output;
  r = run_cnnbench(idx + every + "--num_epochs=3 --train_dir=T --resume --stop_at_top_1_accuracy=0.01", dir);
  EXPECT_NE(r.output.find("it reached --stop_at_top_1_accuracy after 1 epoch"), std::string::npos) << r.output;
  r = run_cnnbench(idx + every + "--num_epochs=2 --train_dir=T --resume --stop_at_top_1_accuracy=1.0", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Resuming from T/checkpoint-epoch-0001.ckpt (1 epoch done)"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(dir + "/T/checkpoint-epoch-0002.ckpt"));
}

TEST(NothingLost, AResumeInsideAnEpochGoesOnFromItsStep) {
  const std::string dir = idx_dir("lost_mid_epoch");  // 4 steps an epoch
  CliRun r = run_cnnbench(idx + "--num_batches=3 --train_dir=whole --benchmark_log_dir=L", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_cnnbench(idx + "--num_batches=2 --train_dir=parts --benchmark_log_dir=L", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_cnnbench(idx + "--num_batches=3 --train_dir=parts --resume --result_json=parts.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Resuming from parts/checkpoint-epoch-0001.ckpt (2 steps done: 0.5 epochs)"),
            std::string::npos)
      << r.output;
  // the epoch it ended inside is one row, trained to its end here
  EXPECT_EQ(nlohmann::json::parse(slurp_file(dir + "/parts.json"))["epochs"].size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(slurp_file(dir + "/parts.json"))["summary"]["images"], 32) << "one step of 32";
  const std::string whole = checkpoint_payload(dir + "/whole/checkpoint-epoch-0001.ckpt");
  ASSERT_FALSE(whole.empty());
  EXPECT_TRUE(whole == checkpoint_payload(dir + "/parts/checkpoint-epoch-0001.ckpt"));
  // and then it is complete
  r = run_cnnbench(idx + "--num_batches=3 --train_dir=parts --resume", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the run is complete (1 epoch, 3 steps done of 3)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Resuming from"), std::string::npos) << r.output;
}

TEST(NothingLost, ADamagedCheckpointIsSkippedAndAStaleTemporaryCleared) {
  const std::string dir = idx_dir("lost_damaged");
  CliRun r = run_cnnbench(idx + "--num_epochs=2 --train_dir=T", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  fs::resize_file(dir + "/T/checkpoint-epoch-0002.ckpt", 100);
  // a killed write's leftover: a process that is gone (pid 4194304 is above Linux's pid_max)
  std::ofstream(dir + "/T/checkpoint-epoch-0003.ckpt.tmp.4194304") << "half";
  fs::create_symlink("/dev/zero", dir + "/T/checkpoint-epoch-0009.ckpt");
  r = run_cnnbench(idx + "--num_epochs=3 --train_dir=T --resume", dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("T/checkpoint-epoch-0009.ckpt: is a device, not a regular file"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("T/checkpoint-epoch-0002.ckpt: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Resuming from T/checkpoint-epoch-0001.ckpt (1 epoch done)"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir + "/T/checkpoint-epoch-0003.ckpt.tmp.4194304"));
  EXPECT_TRUE(fs::exists(dir + "/T/checkpoint-epoch-0003.ckpt"));
}

TEST(NothingLost, ResultJsonReplacesOnlyACnnbenchResult) {
  const std::string dir = idx_dir("lost_result_json");
  std::ofstream(dir + "/mine.csv") << "a,b\n1,2\n";
  const auto before = snapshot(dir);
  for (const std::string& args : {std::string("--model=trivial --batch_size=2 --num_batches=1"), idx + "--num_batches=1"}) {
    const CliRun r = run_cnnbench(args + " --result_json=mine.csv", dir);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("cnnbench: --result_json: mine.csv exists and is not a cnnbench result: not replaced"),
              std::string::npos)
        << r.output;
    EXPECT_EQ(snapshot(dir), before);
  }
  // a result of its own is replaced, as asked
  CliRun r = run_cnnbench("--model=trivial --batch_size=2 --num_batches=1 --result_json=r.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_cnnbench("--model=trivial --batch_size=2 --num_batches=2 --result_json=r.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(slurp_file(dir + "/r.json"))["run"]["timed_steps"], 2);
}

// --timeline replaces a trace of its own, never another file (a results.csv or notes given by
// mistake): refused before the first step, the file left as it was.
TEST(NothingLost, TimelineReplacesOnlyACnnbenchTrace) {
  const std::string dir = idx_dir("lost_timeline");
  const std::string trivial = "--model=trivial --batch_size=2 --num_batches=1";
  CliRun r = run_cnnbench(trivial, dir);  // a results.csv and a result JSON to aim at by mistake
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ofstream(dir + "/notes.txt") << "a user's notes";
  std::string json;
  for (const auto& e : fs::directory_iterator(dir + "/cnnbench_results"))
    if (e.path().extension() == ".json") json = "cnnbench_results/" + e.path().filename().string();
  ASSERT_FALSE(json.empty());
  const auto before = snapshot(dir);
  for (const std::string& target : {std::string("notes.txt"), std::string("cnnbench_results/results.csv"), json}) {
    for (const std::string& args : {trivial, idx + "--num_batches=1"}) {
      r = run_cnnbench(args + " --timeline=" + target, dir);
      EXPECT_EQ(r.exit_code, 2) << args << r.output;
      EXPECT_NE(r.output.find("cnnbench: --timeline: " + target + " exists and is not a cnnbench timeline: not replaced"),
                std::string::npos)
          << r.output;
      EXPECT_EQ(r.output.find("images/sec"), std::string::npos) << r.output;
      EXPECT_EQ(snapshot(dir), before) << target;
    }
  }
  // a trace of its own is replaced, as asked
  r = run_cnnbench(trivial + " --timeline=t.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_cnnbench("--model=trivial --batch_size=2 --num_batches=3 --timeline=t.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("  timeline        t.json ("), std::string::npos) << r.output;
  EXPECT_NE(slurp_file(dir + "/t.json").find("\"step\":2"), std::string::npos);
}

// A results.csv (allreduce.csv, input.csv) whose header this version cannot append under is
// refused before the run, in every mode, not after it with the run's figures lost.
TEST(NothingLost, ACsvOfOtherColumnsIsRefusedBeforeTheRun) {
  const std::string dir = idx_dir("lost_csv_header");
  fs::create_directories(dir + "/L");
  for (const char* csv : {"results.csv", "allreduce.csv", "input.csv"})
    std::ofstream(dir + "/L/" + csv) << "foo,bar\n1,2\n";
  const auto before = snapshot(dir);
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"--model=trivial --batch_size=2 --num_batches=1", "results.csv"},
      {idx + "--num_batches=1", "results.csv"},
      {"--mode=allreduce --allreduce_max_mb=0.01", "allreduce.csv"},
      {idx + "--mode=input --num_batches=2", "input.csv"}};
  for (const auto& [args, csv] : runs) {
    const CliRun r = run_cnnbench(args + " --benchmark_log_dir=L", dir);
    EXPECT_EQ(r.exit_code, 2) << args << r.output;
    EXPECT_NE(r.output.find("L/" + csv + ": its header differs from this version's columns"), std::string::npos)
        << args << r.output;
    EXPECT_EQ(r.output.find("images/sec"), std::string::npos) << args << r.output;
    EXPECT_EQ(snapshot(dir), before) << args;
  }
}

// A results.csv as large as compare reads (256 MiB) takes no more runs: refused before the run,
// not appended past what compare (and the next run's check) would refuse. Its own rows are
// untouched; a finished run's row is never refused for the size.
TEST(NothingLost, AFullResultsCsvIsRefusedBeforeTheRun) {
  const std::string dir = idx_dir("lost_csv_full");
  fs::create_directories(dir + "/L");
  CliRun r = run_cnnbench("--model=trivial --batch_size=2 --num_batches=1 --benchmark_log_dir=L", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  fs::resize_file(dir + "/L/results.csv", (uint64_t{256} << 20) - (uint64_t{1} << 19));  // zeros past the row
  const auto size = fs::file_size(dir + "/L/results.csv");
  r = run_cnnbench("--model=trivial --batch_size=2 --num_batches=1 --benchmark_log_dir=L", dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("L/results.csv: 255 MiB, as large as a results file gets (256 MiB: cnnbench compare reads "
                          "no more); write to another file (--benchmark_log_dir)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("images/sec"), std::string::npos) << r.output;
  EXPECT_EQ(fs::file_size(dir + "/L/results.csv"), size);
}

TEST(NothingLost, OutputsThatCannotBeWrittenStopTheRunBeforeItsFirstStep) {
  const std::string dir = idx_dir("lost_outputs");
  std::ofstream(dir + "/F") << "a file";
  for (const std::string& args : {std::string("--model=trivial --batch_size=2 --num_batches=1 --benchmark_log_dir=F"),
                                  idx + "--num_batches=1 --train_dir=F", idx + "--num_batches=1 --benchmark_log_dir=F/x",
                                  std::string("--model=trivial --batch_size=2 --num_batches=1 --summary_dir=F")}) {
    const CliRun r = run_cnnbench(args, dir);
    EXPECT_EQ(r.exit_code, 2) << args << r.output;
    EXPECT_EQ(r.output.find("images/sec"), std::string::npos) << args << r.output;
    EXPECT_EQ(r.output.find("Epoch"), std::string::npos) << args << r.output;
  }
  EXPECT_EQ(slurp_file(dir + "/F"), "a file");
}

// A folder nobody can write in (procfs: permission bits would not tell root so) is found before
// the first step, for every output the run would write there, not after the run as its results
// are lost.
TEST(NothingLost, OutputsInAFolderThatCannotBeWrittenStopTheRunBeforeItsFirstStep) {
  if (!fs::exists("/proc/self/status")) GTEST_SKIP() << "no procfs here to stand for an unwritable folder";
  const std::string dir = idx_dir("lost_unwritable");
  const std::string trivial = "--model=trivial --batch_size=2 --num_batches=1 ";
  for (const std::string& args : {trivial + "--benchmark_log_dir=/proc/cnnbench_results",
                                  trivial + "--result_json=/proc/cnnbench/r.json", trivial + "--summary_dir=/proc/tb",
                                  trivial + "--timeline=/proc/t.json", idx + "--num_batches=1 --train_dir=/proc/td",
                                  std::string("--mode=allreduce --allreduce_max_mb=0.01 --benchmark_log_dir=/proc/x")}) {
    const CliRun r = run_cnnbench(args, dir);
    EXPECT_EQ(r.exit_code, 2) << args << r.output;
    EXPECT_NE(r.output.find("cannot be written: no file can be made in /proc"), std::string::npos) << args << r.output;
    EXPECT_EQ(r.output.find("images/sec"), std::string::npos) << args << r.output;
    EXPECT_EQ(r.output.find("Epoch"), std::string::npos) << args << r.output;
  }
}

TEST(NothingLost, ADivergedRunEndsNamingTheStepAndWritesNoResult) {
  const std::string dir = fresh_dir("lost_diverged");
  CliRun r = run_cnnbench("--model=lenet --batch_size=8 --init_learning_rate=1000 --num_batches=20", dir);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("the run diverged"), std::string::npos) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("the loss is [-a-z]+ at (warm-up )?step [0-9]+"))) << r.output;
  EXPECT_FALSE(fs::exists(dir + "/cnnbench_results/results.csv"));
  // a convergence run that diverges leaves no empty per-epoch CSV behind either
  testing::write_idx_dataset(dir, "train", 1024, false);  // 32 steps an epoch: it diverges inside the first
  testing::write_idx_dataset(dir, "t10k", 32, false);
  r = run_cnnbench(idx + "--num_batches=30 --init_learning_rate=1000 --optimizer=momentum --benchmark_log_dir=L", dir);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(!fs::exists(dir + "/L") || count_ending(dir + "/L", "_epochs.csv") == 0);
  // allowed: the result is written, its non-finite numbers as empty cells and null
  r = run_cnnbench("--model=lenet --batch_size=8 --init_learning_rate=1000 --num_batches=20 --allow_nonfinite_loss --result_json=r.json",
                   dir);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string csv = slurp_file(dir + "/cnnbench_results/results.csv");
  const std::string json = slurp_file(dir + "/r.json");
  for (const char* word : {"nan", "inf"}) {
    EXPECT_EQ(csv.find(word), std::string::npos) << csv;
    EXPECT_EQ(json.find(word), std::string::npos);
  }
  EXPECT_TRUE(nlohmann::json::parse(json)["summary"]["final_loss"].is_null());
  // the default run trains: finite, falling loss
  r = run_cnnbench("--num_batches=30 --result_json=d.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto loss = nlohmann::json::parse(slurp_file(dir + "/d.json"))["steps"]["loss"];
  EXPECT_LT(loss.back().get<double>(), loss.front().get<double>());
}

}  // namespace
}  // namespace cnnbench
