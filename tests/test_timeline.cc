// --timeline: a 2-rank run's Chrome trace read back. Every rank has its process and tracks; every
// step holds its forward and backward; every bucket's allreduce starts after the last gradient of
// that bucket was ready and its update after the allreduce ended; spans on a track nest.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "cli_run.h"
#include "comm/timeline.h"
#include "test_files.h"
#ifdef CNNBENCH_WITH_CUDA
#include "gpu_skip.h"
#endif

namespace cnnbench {
namespace {

struct Span {
  std::string name;
  double start, end;
  int64_t bucket = -1, step = -1;
};

constexpr double kSlackUs = 0.01;  // timestamps are written to the nanosecond

bool inside(const Span& inner, const Span& outer) {
  return inner.start >= outer.start - kSlackUs && inner.end <= outer.end + kSlackUs;
}

// One 2-rank run for the suite. ctest runs each test in a process of its own, two at a time,
// so the folder is the process's own; and a failed run fails every test rather than failing
// SetUpTestSuite, which GoogleTest reports as skipped tests (and ctest counts as passed).
bool starts_before(const Span& a, const Span& b) { return a.start < b.start; }

// One rank's spans (and instants, start == end) of a trace by "track:name", each in start order.
std::map<std::string, std::vector<Span>> spans_by_name(const nlohmann::json& trace, int rank) {
  std::map<std::string, std::vector<Span>> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" || e["pid"] != trace_pid(rank)) continue;
    const double ts = e["ts"].get<double>();
    out[e["cat"].get<std::string>() + ":" + e["name"].get<std::string>()].push_back(
        {e["name"], ts, ts + (e["ph"] == "X" ? e["dur"].get<double>() : 0.0), -1,
         e.contains("args") && e["args"].contains("step") ? e["args"]["step"].get<int64_t>() : -1});
  }
  for (auto& [name, spans] : out) std::stable_sort(spans.begin(), spans.end(), starts_before);
  return out;
}

class Timeline2Ranks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fresh_dir("timeline_2ranks." + std::to_string(getpid()));
    const CliRun r = run_cnnbench_with(std::string(CNNBENCH_MPIEXEC_PREFIX) + " -np 2 ", "",
                                       "--model=resnet20 --batch_size=8 --num_batches=3 --num_warmup_batches=1 "
                                       "--num_intra_threads=1 --allreduce=gloo --fusion_threshold_mb=0.05 "
                                       "--layer_timing --timeline=trace/run.json",
                                       dir_);
    output_ = r.output;
    if (r.exit_code != 0) {
      error_ = "the 2-rank run exited with " + std::to_string(r.exit_code) + ":\n" + r.output;
      return;
    }
    try {
      trace_ = nlohmann::json::parse(slurp_file(dir_ + "/trace/run.json"));
    } catch (const std::exception& e) {
      error_ = std::string("the trace does not parse: ") + e.what();
    }
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
  void SetUp() override { ASSERT_TRUE(error_.empty()) << error_; }
  // Spans (or instants, start == end) of one rank on one track, in start order.
  static std::vector<Span> events(int rank, const std::string& track, const std::string& name = "") {
    std::vector<Span> out;
    for (const auto& e : trace_["traceEvents"]) {
      if (e["ph"] == "M" || e["pid"] != trace_pid(rank) || e["cat"] != track) continue;
      if (!name.empty() && e["name"] != name) continue;
      const double ts = e["ts"].get<double>();
      Span s{e["name"], ts, ts + (e["ph"] == "X" ? e["dur"].get<double>() : 0.0)};
      if (e.contains("args") && e["args"].contains("bucket")) s.bucket = e["args"]["bucket"];
      if (e.contains("args") && e["args"].contains("step")) s.step = e["args"]["step"];
      out.push_back(s);
    }
    std::stable_sort(out.begin(), out.end(), starts_before);
    return out;
  }
  static std::string dir_, output_, error_;
  static nlohmann::json trace_;
};
std::string Timeline2Ranks::dir_, Timeline2Ranks::output_, Timeline2Ranks::error_;
nlohmann::json Timeline2Ranks::trace_;

TEST_F(Timeline2Ranks, EveryRankHasItsProcessAndTracks) {
  std::set<std::pair<int, std::string>> named;
  for (const auto& e : trace_["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") named.insert({e["pid"].get<int>(), e["args"]["name"].get<std::string>()});
  ASSERT_EQ(named.size(), 2u);
  EXPECT_EQ(named.begin()->second.rfind("rank 0 (", 0), 0u);
  EXPECT_NE(output_.find("  timeline        trace/run.json ("), std::string::npos) << output_;
  for (int rank : {0, 1}) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(events(rank, "compute", "step").size(), 3u);
    EXPECT_EQ(events(rank, "compute", "warm-up step").size(), 1u);
    // numbered as the log's step lines: timed steps 1, 2, 3 (the warm-up step 1 of its own)
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(events(rank, "compute", "step")[i].step, static_cast<int64_t>(i + 1));
    EXPECT_EQ(events(rank, "compute", "warm-up step")[0].step, 1);
    EXPECT_FALSE(events(rank, "communication", "allreduce").empty());
    EXPECT_FALSE(events(rank, "update", "update").empty());
  }
}

TEST_F(Timeline2Ranks, StepsHoldTheirPhasesAndPhasesTheirLayers) {
  for (int rank : {0, 1}) {
    SCOPED_TRACE(rank);
    std::vector<Span> steps = events(rank, "compute", "step");
    const std::vector<Span> warm = events(rank, "compute", "warm-up step");
    steps.insert(steps.begin(), warm.begin(), warm.end());
    const std::vector<Span> forward = events(rank, "compute", "forward"), backward = events(rank, "compute", "backward");
    ASSERT_EQ(forward.size(), steps.size());
    ASSERT_EQ(backward.size(), steps.size());
    for (size_t i = 0; i < steps.size(); ++i) {
      EXPECT_TRUE(inside(forward[i], steps[i])) << i;
      EXPECT_TRUE(inside(backward[i], steps[i])) << i;
      EXPECT_LE(forward[i].end, backward[i].start + kSlackUs) << i;
    }
    // per-layer spans (--layer_timing: the timed steps) sit inside a forward or backward phase
    size_t layers = 0;
    for (const Span& s : events(rank, "compute")) {
      const bool layer_forward = s.name.size() > 8 && s.name.ends_with(" forward");
      const bool layer_backward = s.name.size() > 9 && s.name.ends_with(" backward");
      if (!layer_forward && !layer_backward) continue;
      ++layers;
      const std::vector<Span>& phases = layer_forward ? forward : backward;
      EXPECT_TRUE(std::any_of(phases.begin(), phases.end(), [&](const Span& p) { return inside(s, p); })) << s.name;
    }
    EXPECT_GT(layers, 3u * 40) << "resnet20 has more than 40 layers a pass";
  }
}

TEST_F(Timeline2Ranks, BucketsAreReducedAfterTheirGradientsAndUpdatedAfterTheirReduction) {
  for (int rank : {0, 1}) {
    SCOPED_TRACE(rank);
    // k-th "gradients ready" of bucket b, k-th allreduce of bucket b, k-th update of bucket b
    std::map<int64_t, std::vector<Span>> ready, reduced, updated;
    for (const Span& s : events(rank, "compute", "gradients ready")) ready[s.bucket].push_back(s);
    for (const Span& s : events(rank, "communication", "allreduce")) reduced[s.bucket].push_back(s);
    for (const Span& s : events(rank, "update", "update")) updated[s.bucket].push_back(s);
    ASSERT_GT(ready.size(), 3u) << "a 0.05 MB fusion buffer makes several buckets";
    ASSERT_EQ(ready.size(), reduced.size());
    for (const auto& [bucket, readies] : ready) {
      SCOPED_TRACE(bucket);
      ASSERT_EQ(readies.size(), 4u) << "one per step, warm-up included";
      ASSERT_EQ(reduced[bucket].size(), readies.size());
      ASSERT_EQ(updated[bucket].size(), readies.size());
      for (size_t k = 0; k < readies.size(); ++k) {
        EXPECT_GE(reduced[bucket][k].start, readies[k].start - kSlackUs) << "step " << k;
        EXPECT_GE(updated[bucket][k].start, reduced[bucket][k].end - kSlackUs) << "step " << k;
      }
    }
  }
}

// Spans on one track either nest or follow each other: the trace viewers' rule.
TEST_F(Timeline2Ranks, SpansOnATrackNest) {
  for (int rank : {0, 1})
    for (const char* track : {"compute", "communication", "update"}) {
      SCOPED_TRACE(std::to_string(rank) + " " + track);
      std::vector<Span> open;  // the enclosing spans of the current one
      for (const Span& s : events(rank, track)) {
        if (s.end == s.start) continue;  // instants
        while (!open.empty() && open.back().end <= s.start + kSlackUs) open.pop_back();
        if (!open.empty()) {
          EXPECT_TRUE(inside(s, open.back())) << s.name << " overlaps " << open.back().name;
        }
        open.push_back(s);
      }
    }
}

TEST(Timeline, AFolderThatCannotBeMadeEndsEveryRankAtOnce) {
  const std::string dir = fresh_dir("timeline_bad_folder");
  std::ofstream(dir + "/file") << "not a folder";
  const CliRun r = run_cnnbench_with(std::string(CNNBENCH_MPIEXEC_PREFIX) + " -np 2 ", "",
                                     "--model=resnet20 --batch_size=8 --num_batches=2 --num_intra_threads=1 "
                                     "--timeline=file/trace.json",
                                     dir);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--timeline: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Step\tImg/sec"), std::string::npos) << "no step may run\n" << r.output;
}

// A long run keeps its first events (memory bounded) and says how many it did not keep.
TEST(Timeline, KeepsItsFirstEventsAndCountsTheRest) {
  Timeline t(/*rank=*/3, /*expected_events=*/2, /*max_events=*/3);
  const auto now = Timeline::Clock::now();
  for (int i = 0; i < 5; ++i) t.span(i % 2 ? Track::input : Track::compute, "e" + std::to_string(i), now, now, {.step = i});
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.dropped(), 2u);
  const nlohmann::json events = nlohmann::json::parse("[" + t.events_json(0) + "]");
  std::vector<std::string> names, tracks;
  for (const auto& e : events) {
    EXPECT_EQ(e["pid"], 4) << "rank 3 is pid 4: ids start at 1";
    if (e["ph"] == "M") tracks.push_back(e["args"]["name"]);
    else names.push_back(e["name"]);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"e0", "e1", "e2"}));
  EXPECT_EQ(tracks, (std::vector<std::string>{"compute", "input"})) << "only the tracks it used are named";
}

// A 2-rank convergence run: its epoch holds every step, the evaluation and the batch-norm
// averaging; input waits are on their own track; rank 0 records its checkpoint write after the
// epoch's last step.
TEST(Timeline, AConvergenceRunRecordsStepsInputEvaluationAndCheckpoints) {
  const std::string dir = fresh_dir("timeline_convergence");
  testing::write_idx_dataset(dir, "train", 128, true);
  testing::write_idx_dataset(dir, "t10k", 64, true);
  const CliRun r = run_cnnbench_with(std::string(CNNBENCH_MPIEXEC_PREFIX) + " -np 2 ", "",
                                     "--model=small_cnn --data_dir=. --batch_size=16 --num_epochs=1 "
                                     "--num_intra_threads=1 --train_dir=ck --timeline=trace.json",
                                     dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("  timeline        trace.json ("), std::string::npos) << r.output;
  const nlohmann::json trace = nlohmann::json::parse(slurp_file(dir + "/trace.json"));
  int ranks_with_input_stalls = 0;
  for (int rank : {0, 1}) {
    SCOPED_TRACE(rank);
    std::map<std::string, std::vector<Span>> by_name = spans_by_name(trace, rank);
    std::set<std::string> tracks;
    for (const auto& e : trace["traceEvents"])
      if (e["pid"] == trace_pid(rank) && e["ph"] == "M" && e["name"] == "thread_name")
        tracks.insert(e["args"]["name"].get<std::string>());
    EXPECT_TRUE(tracks.count("compute") && tracks.count("communication") && tracks.count("update"));
    // the input track holds the waits for a batch: a rank whose workers kept ahead has none (once
    // under ctest -j2 on a busy machine, rank 1's)
    ranks_with_input_stalls += static_cast<int>(tracks.count("input"));
    EXPECT_EQ(tracks.count("checkpoint"), rank == 0 ? 1u : 0u) << "rank 0 alone writes checkpoints";
    ASSERT_EQ(by_name["compute:epoch 1"].size(), 1u);
    const Span epoch = by_name["compute:epoch 1"][0];
    ASSERT_EQ(by_name["compute:step"].size(), 4u) << "128 images, 2 ranks of 16";
    for (const Span& step : by_name["compute:step"]) EXPECT_TRUE(inside(step, epoch));
    for (size_t i = 0; i < 4; ++i)  // from 1, as TensorBoard numbers them
      EXPECT_EQ(by_name["compute:step"][i].step, static_cast<int64_t>(i + 1));
    EXPECT_EQ(by_name["compute:forward"].size(), 4u);
    EXPECT_EQ(by_name["communication:allreduce"].size() % 4, 0u);
    ASSERT_EQ(by_name["compute:evaluation"].size(), 1u);
    ASSERT_EQ(by_name["compute:batch-norm statistics averaged"].size(), 1u);
    const Span eval = by_name["compute:evaluation"][0];
    EXPECT_TRUE(inside(eval, epoch));
    EXPECT_GE(eval.start, by_name["compute:step"].back().end - kSlackUs);
    for (const Span& stall : by_name["input:input stall"])
      EXPECT_TRUE(inside(stall, epoch)) << "a wait for a batch is part of the epoch";
    if (rank == 0) {
      ASSERT_EQ(by_name["checkpoint:checkpoint"].size(), 1u);
      EXPECT_GE(by_name["checkpoint:checkpoint"][0].start, eval.end - kSlackUs);
      EXPECT_TRUE(inside(by_name["checkpoint:checkpoint"][0], epoch));
    }
  }
  EXPECT_GE(ranks_with_input_stalls, 1) << "no rank recorded a wait for its input";
}

// A GPU rank: each step's forward, backward and update as the device ran them, on the device
// track, in that order and inside the host's span of the step.
TEST(Timeline, AGpuRunRecordsItsDevicePhasesOnTheDeviceTrack) {
#ifndef CNNBENCH_WITH_CUDA
  GTEST_SKIP() << "built without CUDA";
#else
  SKIP_WITHOUT_GPU();
  const std::string dir = fresh_dir("timeline_gpu");
  const CliRun r = run_cnnbench("--device=gpu --model=resnet20 --batch_size=64 --num_batches=4 "
                                "--num_warmup_batches=1 --timeline=trace.json",
                                dir);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json trace = nlohmann::json::parse(slurp_file(dir + "/trace.json"));
  std::map<std::string, std::vector<Span>> by_name = spans_by_name(trace, 0);
  std::vector<Span> steps = by_name["compute:warm-up step"];
  steps.insert(steps.end(), by_name["compute:step"].begin(), by_name["compute:step"].end());
  ASSERT_EQ(steps.size(), 5u);
  const std::vector<Span>& forward = by_name["device:forward"];
  const std::vector<Span>& backward = by_name["device:backward"];
  const std::vector<Span>& update = by_name["device:update"];
  ASSERT_EQ(forward.size(), steps.size());
  ASSERT_EQ(backward.size(), steps.size());
  ASSERT_EQ(update.size(), steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_GT(forward[i].end - forward[i].start, 0);
    EXPECT_GT(backward[i].end - backward[i].start, 0);
    EXPECT_LE(forward[i].end, backward[i].start + kSlackUs);
    EXPECT_LE(backward[i].end, update[i].start + kSlackUs);
    EXPECT_TRUE(inside(forward[i], steps[i]) && inside(update[i], steps[i]))
        << "device work of step " << i << " outside the host's step";
  }
#endif
}

}  // namespace
}  // namespace cnnbench
