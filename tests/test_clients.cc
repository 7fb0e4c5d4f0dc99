// What the tools users already have rely on, as invariants of the files and logs cnnbench
// writes: log parsers read the tail (the last three lines are tf_cnn_benchmarks' total block);
// a progress bar's `\r` only where a person watches; result files with no number that was not
// measured; a timeline that follows the Trace Event Format strictly (ids from 1, metadata with
// `cat` and `ts`, every track named, slices nested); TFRecord shards with tf_cnn_benchmarks'
// labels trained as stored.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "harness/data/image_example.h"
#include "harness/data/tfrecord.h"
#include "harness/report/csv.h"
#include "test_files.h"

namespace cnnbench {
namespace {

const std::string kDashes(64, '-');

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The log's tail as lambda-tensorflow-benchmark's log2csv reads it (lines[-2] of readlines()),
// and the one "total images/sec" line a grep finds.
void expect_tf_cnn_tail(const std::string& output, double images_per_sec) {
  const std::vector<std::string> lines = lines_of(output);
  ASSERT_GE(lines.size(), 3u) << output;
  const size_t n = lines.size();
  EXPECT_EQ(lines[n - 3], kDashes) << output;
  EXPECT_EQ(lines[n - 1], kDashes) << output;
  ASSERT_EQ(lines[n - 2].rfind("total images/sec: ", 0), 0u) << output;
  EXPECT_NEAR(std::stod(lines[n - 2].substr(18)), images_per_sec, 0.006) << lines[n - 2];
  EXPECT_EQ(output.find("total images/sec"), output.rfind("total images/sec")) << "one total line\n" << output;
}

double json_speed(const std::string& path, const char* section = "summary") {
  const auto doc = nlohmann::json::parse(slurp_file(path));
  return doc[section]["images_per_sec"].get<double>();
}

TEST(Clients, LogEndsWithTheTotalBlockInEveryMode) {
  const std::string dir = fresh_dir("clients_tail");
  const std::string run = "--model=resnet20 --batch_size=8 --num_batches=3 --num_warmup_batches=1 --num_intra_threads=1 ";
  {
    SCOPED_TRACE("1 rank, with the summary lines a run prints after it today");
    const CliRun r = run_cnnbench(run + "--result_json=one.json --layer_timing --timeline=t.json --summary_dir=s", dir);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_tf_cnn_tail(r.output, json_speed(dir + "/one.json"));
    EXPECT_LT(r.output.find("cnnbench summary"), r.output.find("total images/sec")) << r.output;
  }
  {
    SCOPED_TRACE("2 ranks under mpiexec");
    const CliRun r = run_cnnbench_with(std::string(CNNBENCH_MPIEXEC_PREFIX) + " -np 2 ", "", run + "--result_json=two.json", dir);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_tf_cnn_tail(r.output, json_speed(dir + "/two.json"));
  }
  {
    SCOPED_TRACE("--repeats: each run's speed on its own line, the median run's total last");
    const CliRun r = run_cnnbench(run + "--result_json=rep.json --repeats=3", dir);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto doc = nlohmann::json::parse(slurp_file(dir + "/rep.json"));
    expect_tf_cnn_tail(r.output, doc["repeats"]["images_per_sec_median"].get<double>());
    EXPECT_NE(r.output.find("Run 3 of 3 done: "), std::string::npos) << r.output;
  }
  std::filesystem::create_directories(dir + "/fmnist");
  testing::write_idx_dataset(dir + "/fmnist", "train", 128, false);
  testing::write_idx_dataset(dir + "/fmnist", "t10k", 32, false);
  {
    SCOPED_TRACE("real data: the speed over the training epochs");
    const CliRun r = run_cnnbench("--model=small_cnn --data_dir=fmnist --batch_size=16 --num_epochs=1 "
                                  "--num_intra_threads=1 --result_json=real.json",
                                  dir);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_tf_cnn_tail(r.output, json_speed(dir + "/real.json"));
    EXPECT_LT(r.output.find("final test top-1 accuracy"), r.output.find("total images/sec")) << r.output;
  }
  testing::write_jpeg_folders(dir + "/jpeg", 2, 4);
  {
    SCOPED_TRACE("--mode=input");
    const CliRun r = run_cnnbench("--mode=input --model=resnet18 --data_dir=jpeg --batch_size=2 --num_batches=2 "
                                  "--num_warmup_batches=1 --result_json=input.json",
                                  dir);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    expect_tf_cnn_tail(r.output, json_speed(dir + "/input.json", "result"));
  }
}

// `script` runs a command on a pseudo-terminal, as a person's terminal is.
CliRun on_a_terminal(const std::string& launcher, const std::string& args, const std::string& dir) {
  return run_cnnbench_with("script -qefc \"" + launcher, "", args + "\" /dev/null", dir);
}

TEST(Clients, ProgressBarOnlyWhereAPersonWatches) {
  const std::string dir = fresh_dir("clients_progress");
  testing::write_idx_dataset(dir, "train", 64, false);
  testing::write_idx_dataset(dir, "t10k", 16, false);
  const std::string run = "--model=small_cnn --data_dir=. --batch_size=16 --num_epochs=1 --num_intra_threads=1 "
                          "--display_every=1 ";
  const auto bar = [](const CliRun& r) { return r.output.find('\r') != std::string::npos &&
                                                r.output.find("Epoch 1/1 [") != std::string::npos; };
  CliRun r = run_cnnbench(run, dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\r'), std::string::npos) << "output to a pipe: no \\r";
  r = run_cnnbench(run + "--progress_bar=true", dir);
  EXPECT_EQ(r.output.find('\r'), std::string::npos) << "asked for, but the output is a pipe";

  r = on_a_terminal("", run, dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(bar(r)) << "a terminal, no launcher: the bar is drawn\n" << r.output;
  r = on_a_terminal("", run + "--progress_bar=false", dir);
  EXPECT_FALSE(bar(r)) << r.output;

  // under mpiexec a rank's output is a pseudo-terminal even when the job's goes to a pipe
  const std::string mpiexec = std::string(CNNBENCH_MPIEXEC_PREFIX) + " -np 1 ";
  r = run_cnnbench_with(mpiexec, "", run, dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\r'), std::string::npos) << "a launcher's rank, auto: none\n" << r.output;
  r = run_cnnbench_with(mpiexec, "", run + "--progress_bar=true", dir);
  EXPECT_TRUE(bar(r)) << "--progress_bar=true draws it on the rank's terminal\n" << r.output;
}

TEST(Clients, ResultFilesHoldNoNumberThatWasNotMeasured) {
  const std::string dir = fresh_dir("clients_nulls");
  const std::string run = "--model=resnet20 --batch_size=8 --num_batches=4 --num_warmup_batches=1 --num_intra_threads=2 ";
  CliRun r = run_cnnbench_with(std::string(CNNBENCH_MPIEXEC_PREFIX) + " -np 2 ", "", run + "--result_json=two.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto doc = nlohmann::json::parse(slurp_file(dir + "/two.json"));
  const auto& summary = doc["summary"];
  for (const char* field : {"scaling_efficiency", "baseline_images_per_sec", "baseline_ranks", "loss_scale",
                            "skipped_steps"}) {
    ASSERT_TRUE(summary.contains(field)) << field;
    EXPECT_TRUE(summary[field].is_null()) << field << " without --baseline or loss scaling: " << summary[field];
  }
  // 2 ranks x 2 threads on this machine's CPUs, with communication threads beside them: a share
  // of the compute threads' time, never above the whole of it
  if (!summary["cpu_wait_fraction"].is_null()) {
    EXPECT_GE(summary["cpu_wait_fraction"].get<double>(), 0.0);
    EXPECT_LE(summary["cpu_wait_fraction"].get<double>(), 1.0);
  }
  if (!summary["fraction_of_peak"].is_null()) {
    EXPECT_LE(summary["fraction_of_peak"].get<double>(), 1.0);
  }
  const std::vector<CsvRow> csv = parse_csv(slurp_file(dir + "/cnnbench_results/results.csv"), "results.csv");
  ASSERT_EQ(csv.size(), 2u);
  const std::vector<std::string>& header = csv[0].fields;
  const std::vector<std::string>& row = csv[1].fields;
  ASSERT_EQ(header.size(), row.size());
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "scaling_efficiency") {
      EXPECT_EQ(row[i], "") << "empty, not 0";
    }
  }

  r = run_cnnbench(run + "--result_json=one.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_cnnbench(run + "--result_json=again.json --baseline=one.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  doc = nlohmann::json::parse(slurp_file(dir + "/again.json"));
  EXPECT_GT(doc["summary"]["scaling_efficiency"].get<double>(), 0) << "measured against the baseline";
  EXPECT_EQ(doc["summary"]["baseline_ranks"], 1);
}

// Every event as the Trace Event Format has it and as Perfetto, catapult and the JS readers
// assume: pid and tid from 1 (0 is "none" to them: Perfetto gives a tid 0 its pid), metadata
// with cat "__metadata" and ts, every process and track named once, instants with a scope, and
// the slices of one track nested or apart (a viewer drops or misplaces slices that cross), in
// start order with the longer of two that start together first (readers that nest in file order
// take the first as the parent).
TEST(Clients, TimelineFollowsTheTraceEventFormatStrictly) {
  const std::string dir = fresh_dir("clients_trace");
  const CliRun r = run_cnnbench_with(std::string(CNNBENCH_MPIEXEC_PREFIX) + " -np 2 ", "",
                                     "--model=resnet20 --batch_size=8 --num_batches=3 --num_warmup_batches=1 "
                                     "--num_intra_threads=1 --fusion_threshold_mb=0.1 --timeline=trace.json",
                                     dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trace = nlohmann::json::parse(slurp_file(dir + "/trace.json"));
  ASSERT_TRUE(trace.is_object());
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> tracks;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
  for (const auto& e : trace["traceEvents"]) {
    SCOPED_TRACE(e.dump());
    ASSERT_TRUE(e.is_object());
    for (const char* key : {"name", "cat", "ph"}) ASSERT_TRUE(e.contains(key) && e[key].is_string()) << key;
    for (const char* key : {"pid", "tid"}) {
      ASSERT_TRUE(e.contains(key) && e[key].is_number_integer()) << key;
      EXPECT_GE(e[key].get<int>(), 1) << key;
    }
    ASSERT_TRUE(e.contains("ts") && e["ts"].is_number());
    EXPECT_GE(e["ts"].get<double>(), 0.0);
    const std::string ph = e["ph"], name = e["name"];
    const int pid = e["pid"], tid = e["tid"];
    if (ph == "M") {
      EXPECT_EQ(e["cat"], "__metadata");
      EXPECT_EQ(e["ts"], 0);
      ASSERT_TRUE(e.contains("args") && e["args"].is_object());
      if (name == "process_name") {
        EXPECT_TRUE(processes.emplace(pid, e["args"]["name"]).second) << "named once";
      } else if (name == "thread_name") {
        EXPECT_TRUE(tracks.emplace(std::make_pair(pid, tid), e["args"]["name"]).second);
      } else {
        EXPECT_TRUE(name == "process_sort_index" || name == "thread_sort_index") << name;
      }
    } else if (ph == "X") {
      EXPECT_GT(e["ts"].get<double>(), 0.0) << "ts 0 is the metadata's";
      ASSERT_TRUE(e.contains("dur") && e["dur"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      auto& track = slices[{pid, tid}];
      const double ts = e["ts"], end = ts + e["dur"].get<double>();
      if (!track.empty()) {
        EXPECT_TRUE(track.back().first < ts || (track.back().first == ts && track.back().second >= end))
            << "in start order, the longer first";
      }
      track.push_back({ts, end});
    } else {
      ASSERT_EQ(ph, "I") << "the instant every reader knows (DevTools and TracerBench skip \"i\")";
      ASSERT_TRUE(e.contains("s"));
      EXPECT_TRUE(e["s"] == "t" || e["s"] == "p" || e["s"] == "g");
    }
  }
  EXPECT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes.count(1) + processes.count(2), 2u) << "rank r is pid r + 1";
  EXPECT_GE(slices.size(), 6u) << "compute, communication and update on both ranks";
  for (auto& [track, spans] : slices) {
    SCOPED_TRACE(std::to_string(track.first) + "/" + std::to_string(track.second));
    EXPECT_EQ(tracks.count(track), 1u) << "every track with slices is named";
    EXPECT_EQ(processes.count(track.first), 1u);
    std::sort(spans.begin(), spans.end(), [](auto& a, auto& b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
    std::vector<double> open;  // ends of the slices that contain the current one
    constexpr double slack = 0.002;  // ts and dur are written to the nanosecond each
    for (const auto& [start, end] : spans) {
      while (!open.empty() && open.back() <= start + slack) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(end, open.back() + slack) << "a slice crosses its parent's end at " << start;
      }
      open.push_back(end);
    }
  }
}

// ImageNet's schema in TFRecord shards as tf_cnn_benchmarks trains them: a label is its class's
// output as stored. Shards of a 10-class set labelled 0-9 (as TensorFlow's own tools write
// them) train with --num_classes=10 and in tf_cnn's 1001-output head without it; ImageNet's
// labels 1-1000 train in the 1001-output head and are refused in a 1000-output one, naming the
// record; the head's size and parameters are in the log and the JSON.
void write_shard(const std::string& path, const std::vector<int64_t>& labels, const std::string& dir) {
  testing::write_jpeg(dir + "/img.jpg", 40, 40, 1);
  const std::string jpeg = slurp_file(dir + "/img.jpg");
  TfRecordWriter out(path, true);
  for (int64_t label : labels) {
    ImageExample e;
    e.jpeg = jpeg;
    e.label = label;
    e.height = e.width = 40;
    out.write(serialize_image_example(e));
  }
  out.close();
}

TEST(Clients, TfRecordLabelsTrainAsStored) {
  const std::string dir = fresh_dir("clients_tfrecord");
  std::filesystem::create_directories(dir + "/ten");
  std::filesystem::create_directories(dir + "/imagenet");
  std::vector<int64_t> ten, imagenet;
  for (int64_t i = 0; i < 20; ++i) ten.push_back(i % 10);
  for (int64_t i = 0; i < 20; ++i) imagenet.push_back(i % 2 ? 1000 - i : 1 + i);
  write_shard(dir + "/ten/train-00000-of-00001", ten, dir);
  write_shard(dir + "/ten/validation-00000-of-00001", {0, 9}, dir);
  write_shard(dir + "/imagenet/train-00000-of-00001", imagenet, dir);
  write_shard(dir + "/imagenet/validation-00000-of-00001", {1, 1000}, dir);
  const std::string run = "--model=resnet18 --batch_size=4 --num_epochs=1 --num_intra_threads=2 ";

  CliRun r = run_cnnbench(run + "--data_dir=ten --num_classes=10 --result_json=ten.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto doc = nlohmann::json::parse(slurp_file(dir + "/ten.json"));
  EXPECT_EQ(doc["model"]["classes"], 10);
  const int64_t params10 = doc["model"]["parameters"];
  EXPECT_EQ(params10, 11689512 - 1000 * 513 + 10 * 513) << "resnet18's published count, its head 10 wide";
  EXPECT_NE(r.output.find("Classes:     10 (a label is its output, 0 to 9)\nParameters:  " + std::to_string(params10)),
            std::string::npos) << r.output;

  r = run_cnnbench(run + "--data_dir=ten --result_json=ten1001.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(slurp_file(dir + "/ten1001.json"))["model"]["classes"], 1001);

  r = run_cnnbench(run + "--data_dir=ten --num_classes=5 --result_json=five.json", dir);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ten/train-00000-of-00001: record at byte "), std::string::npos) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("image/class/label [5-9] is outside 0\\.\\.4"))) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/five.json"));

  r = run_cnnbench(run + "--data_dir=imagenet --result_json=imagenet.json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  doc = nlohmann::json::parse(slurp_file(dir + "/imagenet.json"));
  EXPECT_EQ(doc["model"]["classes"], 1001);
  EXPECT_EQ(doc["model"]["parameters"], 11689512 + 513) << "tf_cnn's 1001 outputs: one more row of 512 + 1";

  r = run_cnnbench(run + "--data_dir=imagenet --num_classes=1000 --result_json=refused.json", dir);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("image/class/label 1000 is outside 0..999"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/refused.json"));

  // synthetic data: the head as asked, the published count where it applies
  r = run_cnnbench("--model=resnet50 --batch_size=1 --num_batches=1 --num_warmup_batches=0 --forward_only "
                   "--result_json=syn.json",
                   dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(slurp_file(dir + "/syn.json"))["model"]["parameters"], 25557032);
}

}  // namespace
}  // namespace cnnbench
