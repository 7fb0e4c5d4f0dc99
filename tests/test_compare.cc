// `cnnbench compare`: the statistics on samples whose answers are known (scipy's), then the
// command on result files written here: matched, unmatched, pooled, summary-only and malformed.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <sys/stat.h>

#include "harness/compare/baseline.h"
#include "harness/compare/compare.h"
#include "harness/report/result_files.h"
#include "harness/report/result_fields.h"
#include "harness/report/result_record.h"
#include "harness/report/run_summary.h"
#include "harness/compare/significance.h"
#include "test_util.h"

namespace cnnbench {
namespace {

// ---- the statistics -------------------------------------------------------------------------

TEST(Significance, MannWhitneyMatchesScipyTextbookExample) {
  // scipy.stats.mannwhitneyu docs: males vs females, U = 17, asymptotic two-sided p = 0.11135
  const MannWhitney r = mann_whitney({19, 22, 16, 29, 24}, {20, 11, 17, 12});
  EXPECT_DOUBLE_EQ(r.u, 17.0);
  EXPECT_NEAR(r.p_value, 0.11134688653314041, 1e-12);
}

TEST(Significance, MannWhitneyCorrectsForTies) {
  // scipy: U = 5.5, p = 0.0887137 (tie-corrected variance, continuity correction)
  const MannWhitney r = mann_whitney({1, 2, 2, 3, 3, 3}, {2, 3, 4, 4, 5});
  EXPECT_DOUBLE_EQ(r.u, 5.5);
  EXPECT_NEAR(r.p_value, 0.08871369199677616, 1e-12);
}

TEST(Significance, IdenticalSamplesAreNoEvidenceAndShiftedOnesAre) {
  EXPECT_DOUBLE_EQ(mann_whitney({1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}).p_value, 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney({7, 7, 7}, {7, 7}).p_value, 1.0);  // no spread at all
  EXPECT_DOUBLE_EQ(mann_whitney({}, {1, 2}).p_value, 1.0);
  const std::vector<double> a = testing::random_vector<double>(20, 1, 99, 101);
  const std::vector<double> b = testing::random_vector<double>(20, 2, 89, 91);
  const MannWhitney shifted = mann_whitney(b, a);
  EXPECT_LT(shifted.p_value, 1e-6);
  EXPECT_DOUBLE_EQ(shifted.u, 0.0);  // every b below every a
  EXPECT_LT(shifted.z, 0.0);
}

// The strongest evidence samples of these sizes can hold, as mann_whitney() gives it for a + b
// values with one side wholly above the other; and at the sizes a results.csv of summaries pools
// (10 million steps a row), where building those samples took seconds and hundreds of MB.
TEST(Significance, SeparationCouldBeSignificantAsMannWhitneySays) {
  for (size_t a = 1; a <= 24; ++a)
    for (size_t b = 1; b <= 24; ++b) {
      std::vector<double> low(a), high(b);
      for (size_t i = 0; i < a; ++i) low[i] = static_cast<double>(i);
      for (size_t i = 0; i < b; ++i) high[i] = static_cast<double>(a + i);
      const double p = mann_whitney(high, low).p_value;
      for (const double level : {0.05, 0.01, 0.001})
        EXPECT_EQ(separation_could_be_significant(a, b, level), p < level) << a << " + " << b << " at " << level;
    }
  EXPECT_FALSE(separation_could_be_significant(3, 3, 0.05));  // p = 0.081 at best
  EXPECT_TRUE(separation_could_be_significant(4, 4, 0.05));
  EXPECT_FALSE(separation_could_be_significant(1, 20'000'000, 0.05));  // 1 + anything: p = 0.083
  EXPECT_TRUE(separation_could_be_significant(20'000'000, 20'000'000, 1e-12));
  EXPECT_FALSE(separation_could_be_significant(0, 5, 0.05));
}

TEST(Significance, DistributionsMatchScipy) {
  EXPECT_NEAR(normal_cdf(1.96), 0.9750021048517795, 1e-12);
  EXPECT_NEAR(student_t_cdf(2.0, 10), 0.9633059826146297, 1e-10);
  EXPECT_NEAR(student_t_cdf(-1.3, 3.5), 0.13629770790218498, 1e-10);
  EXPECT_NEAR(student_t_cdf(0.5, 200), 0.6911876238417696, 1e-10);
  EXPECT_NEAR(student_t_quantile(0.975, 2), 4.302652729911275, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 7.3), 2.345066736150929, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.1, 30), -1.3104150225671303, 1e-8);
}

// The run is the unit, on log speeds: Welch's t where both sides have 2 runs or more (scipy:
// ttest_ind(log(new), log(base), equal_var=False), its interval from t.ppf at the Welch-Satterthwaite
// degrees of freedom); with one run on a side, the other side's spread (Student's t, n - 1
// degrees of freedom); with one run a side, no test.
TEST(Significance, RunSpeedsAreTestedOnTheirLogs) {
  const RunTest welch = test_run_speeds({100, 104, 98, 101}, {95, 97, 93});
  EXPECT_EQ(welch.kind, RunTest::welch);
  EXPECT_NEAR(welch.p_value, 0.020659740685086157, 1e-9);
  EXPECT_NEAR(welch.ratio, 0.9430055139955812, 1e-12);
  EXPECT_NEAR(welch.degrees_of_freedom, 4.831869049674176, 1e-9);
  EXPECT_NEAR(welch.ratio_ci.low, 0.9014653740194102, 1e-9);
  EXPECT_NEAR(welch.ratio_ci.high, 0.9864598519864203, 1e-9);

  const RunTest one_base = test_run_speeds({100}, {95, 97, 93});
  EXPECT_EQ(one_base.kind, RunTest::one_side_spread);
  EXPECT_NEAR(one_base.p_value, 0.1686252010502685, 1e-9);
  EXPECT_NEAR(one_base.ratio, 0.9498596283825758, 1e-12);
  EXPECT_NEAR(one_base.ratio_ci.low, 0.8555132259187574, 1e-9);
  EXPECT_NEAR(one_base.ratio_ci.high, 1.0546105966534338, 1e-9);
  EXPECT_NEAR(test_run_speeds({95, 97, 93}, {100}).p_value, one_base.p_value, 1e-12) << "either side's spread";

  const RunTest single = test_run_speeds({100}, {50});
  EXPECT_EQ(single.kind, RunTest::none);
  EXPECT_DOUBLE_EQ(single.p_value, 1.0);
  EXPECT_NEAR(single.ratio, 0.5, 1e-12);

  // no spread at all: a difference is beyond it, no difference is none
  EXPECT_DOUBLE_EQ(test_run_speeds({100, 100}, {90, 90}).p_value, 0.0);
  EXPECT_DOUBLE_EQ(test_run_speeds({100, 100}, {100, 100}).p_value, 1.0);
}

// ---- result files written here -----------------------------------------------------------------

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  make_folders(dir);
  return dir;
}

using Settings = std::map<std::string, std::string>;

// resnet20, batch 32, 1 rank x 2 threads, fp32, unless `changes` says otherwise
Settings settings_with(const Settings& changes = {}) {
  Settings s = {{"model", "resnet20"},     {"dataset", "cifar10"},        {"synthetic", "true"},
                {"mode", "training"},      {"backend", "onednn"},         {"precision", "fp32"},
                {"ranks", "1"},            {"hosts", "1"},                {"threads_per_rank", "2"},
                {"batch_size_per_rank", "32"}, {"allreduce", "none"},     {"variable_update", "horovod"},
                {"fusion_threshold_mb", "16"}, {"compression", "none"}};
  for (const auto& [k, v] : changes) s[k] = v;
  return s;
}

// Step times around `step_sec`, +-2% noise, seeded.
std::vector<double> step_times(double step_sec, uint64_t seed, int n = 30) {
  std::vector<double> t = testing::random_vector<double>(n, seed, 0.98, 1.02);
  for (double& v : t) v *= step_sec;
  return t;
}

// A result JSON as a run writes it: its steps, and its headline images/sec (every image over
// every step's time) in the summary.
nlohmann::json result_doc(const Settings& s, const std::vector<double>& times) {
  nlohmann::json run = nlohmann::json::object();
  for (const auto& [k, v] : s) {
    if (k == "model") continue;
    if (k == "synthetic" || k == "hierarchical_allreduce" || k == "overlap_forward") run[k] = v == "true";
    else if (k == "ranks" || k == "hosts" || k == "threads_per_rank" || k == "batch_size_per_rank") run[k] = std::stoi(v);
    else if (k == "fusion_threshold_mb") run[k] = std::stod(v);
    else run[k] = v;
  }
  run["global_batch"] = std::stoi(s.at("batch_size_per_rank")) * std::stoi(s.at("ranks"));
  return {{"schema", "cnnbench.result/1"},
          {"context", {{"host", "test"}}},
          {"model", {{"name", s.at("model")}}},
          {"run", run},
          {"steps", {{"time_sec", times}}},
          {"summary", {{"images_per_sec", run["global_batch"].get<double>() * static_cast<double>(times.size()) /
                                              std::accumulate(times.begin(), times.end(), 0.0)}}}};
}

std::string write_json(const std::string& path, const nlohmann::json& doc) {
  std::ofstream(path) << doc.dump(1);
  return path;
}

std::string write_result(const std::string& path, double step_sec, uint64_t seed, const Settings& s = settings_with()) {
  return write_json(path, result_doc(s, step_times(step_sec, seed)));
}

// `runs` results of one configuration in the folder `dir`, each run's steps around `step_sec`
// times a factor of its own in [0.98, 1.02] (the run-to-run noise), seeded.
std::string write_runs(const std::string& dir, double step_sec, uint64_t seed, int runs = 4,
                       const Settings& s = settings_with()) {
  make_folders(dir);
  const std::vector<double> factor = testing::random_vector<double>(runs, seed + 1000, 0.98, 1.02);
  for (int i = 0; i < runs; ++i)
    write_json(fmt::format("{}/run{}.json", dir, i), result_doc(s, step_times(step_sec * factor[i], seed * 100 + i)));
  return dir;
}

// A results.csv row as cnnbench writes it, naming `json_file`.
void append_row(const std::string& csv, const Settings& s, double mean, double stderr_, int steps,
                const std::string& json_file) {
  std::map<std::string, std::string> by_name = s;
  by_name["images_per_sec"] = std::to_string(mean);  // all steps over all their time: near the mean
  by_name["images_per_sec_mean"] = std::to_string(mean);
  by_name["images_per_sec_stderr"] = std::to_string(stderr_);
  by_name["timed_steps"] = std::to_string(steps);
  by_name["json_file"] = json_file;
  by_name["host"] = "test, with a comma";
  std::vector<std::string> row;
  for (const std::string& column : csv_header()) row.push_back(by_name.count(column) ? by_name[column] : "0");
  append_csv_row(csv, csv_header(), row);
}

// A results.csv row of exactly these columns (the rest empty), as a convergence run writes it.
void csv_append(const std::string& csv, const Settings& values) {
  std::vector<std::string> row;
  for (const std::string& column : csv_header()) {
    const auto it = values.find(column);
    row.push_back(it == values.end() ? "" : it->second);
  }
  const std::vector<std::string> header = csv_header();
  for (const auto& [column, value] : values)
    if (std::find(header.begin(), header.end(), column) == header.end()) ADD_FAILURE() << "no results.csv column " << column;
  append_csv_row(csv, csv_header(), row);
}

struct CommandRun {
  int exit_code;
  std::string out, err;
};

CommandRun run_compare(const std::vector<std::string>& args) {
  char *out_text = nullptr, *err_text = nullptr;
  size_t out_size = 0, err_size = 0;
  FILE* out = open_memstream(&out_text, &out_size);
  FILE* err = open_memstream(&err_text, &err_size);
  const int code = compare_command(args, out, err);
  std::fclose(out);
  std::fclose(err);
  CommandRun r{code, out_text, err_text};
  std::free(out_text);
  std::free(err_text);
  return r;
}

// ---- matching and verdicts ---------------------------------------------------------------------

TEST(Compare, MatchedRunsGetFasterSlowerOrNoChange) {
  const std::string dir = fresh_dir("compare_verdicts");
  const std::string base = write_runs(dir + "/base", 0.100, 1);
  CompareOptions options;
  auto verdict_of = [&](double step_sec, uint64_t seed) {
    std::filesystem::remove_all(dir + "/new");
    const CompareReport r = compare_results(base, write_runs(dir + "/new", step_sec, seed), options);
    EXPECT_EQ(r.matched.size(), 1u);
    return r.matched.at(0);
  };
  const ComparedConfiguration same = verdict_of(0.100, 2);
  EXPECT_EQ(same.verdict, Verdict::no_change) << same.test.p_value;
  EXPECT_GT(same.test.p_value, 0.05);
  EXPECT_EQ(same.test.kind, RunTest::welch);
  EXPECT_EQ(same.base_runs, 4);
  EXPECT_NEAR(same.base_speed, 320, 320 * 0.02);  // 32 images in 0.1 s

  const ComparedConfiguration faster = verdict_of(0.080, 3);
  EXPECT_EQ(faster.verdict, Verdict::faster);
  EXPECT_NEAR(faster.change, 0.25, 0.03);
  EXPECT_LT(faster.test.p_value, 1e-3);
  EXPECT_LT(faster.test.ratio_ci.low, 1 + faster.change);
  EXPECT_GT(faster.test.ratio_ci.high, 1 + faster.change);

  const ComparedConfiguration slower = verdict_of(0.104, 4);  // 4% slower: real, but within 5%
  EXPECT_EQ(slower.verdict, Verdict::slower) << slower.test.p_value;
  EXPECT_LT(slower.change, 0.0);
  EXPECT_GT(slower.change, -0.05);
}

TEST(Compare, RegressionOnlyBeyondTheTolerance) {
  const std::string dir = fresh_dir("compare_tolerance");
  const std::string base = write_runs(dir + "/base", 0.100, 1);
  const std::string slow = write_runs(dir + "/slow", 0.110, 2);  // 9% fewer images/sec
  CommandRun r = run_compare({base, slow, "--tolerance=5"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("Welch t, 4+4 runs  regression"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("REGRESSION: 1 configuration slower than the base by more than 5%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("resnet20 b32 fp32, 1 rank x 2 threads"), std::string::npos) << r.out;

  r = run_compare({base, slow, "--tolerance=0.05"});  // a fraction for a percentage: gated at 0.05%, and said
  EXPECT_EQ(r.err, "cnnbench compare: note: --tolerance=0.05 is 0.05% (a percentage: 5% is --tolerance=5)\n");
  EXPECT_EQ(run_compare({base, slow, "--tolerance=0.5%"}).err, "") << "a % sign says it is meant";

  r = run_compare({base, slow, "--tolerance", "15"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("slower"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no regression"), std::string::npos) << r.out;

  r = run_compare({base, slow, "--check_only"});  // reported, not gated
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 regression reported, not gated (--check_only)"), std::string::npos) << r.out;

  r = run_compare({slow, base});  // the other way round is faster
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("faster"), std::string::npos) << r.out;
}

// The run is the unit: two runs a side whose steps agree within 0.1% but whose runs differ by 6%
// (a neighbour's load, the pages a run got) cannot tell a 3% change from that noise. Pooled as
// 60 + 60 steps they gave p < 1e-6, a "slower" verdict from noise alone.
TEST(Compare, StepsOfOneRunAreNotIndependentSamples) {
  const std::string dir = fresh_dir("compare_run_unit");
  auto write = [&](const std::string& path, double step_sec, uint64_t seed) {
    std::vector<double> t = testing::random_vector<double>(30, seed, 0.999, 1.001);
    for (double& v : t) v *= step_sec;
    write_json(path, result_doc(settings_with(), t));
  };
  make_folders(dir + "/base");
  make_folders(dir + "/new");
  write(dir + "/base/1.json", 0.100, 1);
  write(dir + "/base/2.json", 0.106, 2);
  write(dir + "/new/1.json", 0.103, 3);
  write(dir + "/new/2.json", 0.109, 4);
  const CompareReport r = compare_results(dir + "/base", dir + "/new", {});
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_EQ(r.matched[0].test.kind, RunTest::welch);
  EXPECT_GT(r.matched[0].test.p_value, 0.05);
  EXPECT_EQ(r.matched[0].verdict, Verdict::no_change);
  EXPECT_LT(r.matched[0].test.ratio_ci.low, 0.9);
  EXPECT_GT(r.matched[0].test.ratio_ci.high, 1.0);
}

// With one run a side nothing measures the noise: no test, and the tolerance alone decides a
// regression (so that a single CI run against a committed baseline still gates), said as such.
// One run against several takes the several's spread.
TEST(Compare, OneRunASideIsJudgedByTheToleranceAlone) {
  const std::string dir = fresh_dir("compare_one_run");
  const std::string base = write_result(dir + "/base.json", 0.100, 1);
  const std::string slow = write_result(dir + "/slow.json", 0.200, 2);
  const std::string near = write_result(dir + "/near.json", 0.103, 3);
  CompareReport report = compare_results(base, slow, CompareOptions{});
  ASSERT_EQ(report.matched.size(), 1u);
  EXPECT_EQ(report.matched[0].test.kind, RunTest::none);
  EXPECT_EQ(report.matched[0].verdict, Verdict::regression);
  CommandRun r = run_compare({base, slow});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no test, 1+1 runs  regression (by the tolerance alone)"), std::string::npos)
      << r.out;
  r = run_compare({base, near});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("no test (1 run a side)"), std::string::npos) << r.out;
  auto doc = nlohmann::json::parse(run_compare({base, slow, "--json"}).out);
  EXPECT_EQ(doc["matched"][0]["test"], "none");
  EXPECT_FALSE(doc["matched"][0].contains("p_value"));
  EXPECT_EQ(doc["matched"][0]["verdict"], "regression (by the tolerance alone)");

  report = compare_results(base, write_runs(dir + "/new", 0.103, 4), CompareOptions{});
  ASSERT_EQ(report.matched.size(), 1u);
  EXPECT_EQ(report.matched[0].test.kind, RunTest::one_side_spread);
  EXPECT_NEAR(report.matched[0].test.degrees_of_freedom, 3, 1e-12);
  r = run_compare({base, dir + "/new"});
  EXPECT_NE(r.out.find("t, one side's spread, 1+4 runs"), std::string::npos) << r.out;
}

TEST(Compare, UnmatchedConfigurationsAreListedNotCompared) {
  const std::string base_dir = fresh_dir("compare_unmatched_base"), new_dir = fresh_dir("compare_unmatched_new");
  write_result(base_dir + "/a.json", 0.1, 1);
  write_result(base_dir + "/b.json", 0.1, 2, settings_with({{"batch_size_per_rank", "64"}}));
  write_result(new_dir + "/a.json", 0.1, 3);
  write_result(new_dir + "/c.json", 0.1, 4,
               settings_with({{"ranks", "2"}, {"threads_per_rank", "1"}, {"allreduce", "gloo"}, {"compression", "fp16"}}));
  const CompareReport r = compare_results(base_dir, new_dir, {});
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_EQ(r.matched[0].label, "resnet20 b32 fp32, 1 rank x 2 threads");
  EXPECT_EQ(r.only_in_base, std::vector<std::string>{"resnet20 b64 fp32, 1 rank x 2 threads"});
  EXPECT_EQ(r.only_in_new, std::vector<std::string>{"resnet20 b32 fp32, 2 ranks x 1 thread, gloo, fp16 on the wire"});
  // a base configuration NEW did not run fails the gate (3), unless accepted; one only in new does not
  CommandRun run = run_compare({base_dir, new_dir});
  EXPECT_EQ(run.exit_code, 3) << run.out;
  EXPECT_NE(run.out.find("only in base (not compared): resnet20 b64"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("only in new (not compared): resnet20 b32 fp32, 2 ranks"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\nINCOMPLETE: 1 configuration of the base not in new"), std::string::npos) << run.out;
  run = run_compare({base_dir, new_dir, "--check_only"});  // speed unchecked; what was not run still fails
  EXPECT_EQ(run.exit_code, 3) << run.out;
  run = run_compare({base_dir, new_dir, "--allow_missing", "--json"});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(nlohmann::json::parse(run.out)["exit_code"], 0);
  EXPECT_EQ(run_compare({new_dir + "/a.json", base_dir}).exit_code, 0) << "only in new: no failure";
  // a regression's exit 1 comes first (1 run a side, twice as slow)
  const std::string slow = write_result(fresh_dir("compare_unmatched_slow") + "/a.json", 0.2, 5);
  run = run_compare({base_dir, slow});
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("INCOMPLETE: 1 configuration"), std::string::npos) << run.out;
}

// Settings results gained later are part of the configuration; a result without them had them off.
TEST(Compare, RunsDifferingInALaterSettingAreNotPooled) {
  const std::string base_dir = fresh_dir("compare_later_base"), new_dir = fresh_dir("compare_later_new");
  const Settings two_ranks = settings_with({{"ranks", "2"}, {"threads_per_rank", "1"}, {"allreduce", "gloo"}});
  write_result(base_dir + "/before.json", 0.1, 1, two_ranks);  // written before the settings existed
  Settings off = two_ranks, overlap = two_ranks, hierarchical = two_ranks;
  off["overlap_forward"] = "false";
  off["hierarchical_allreduce"] = "false";
  overlap["overlap_forward"] = "true";
  hierarchical["hierarchical_allreduce"] = "true";
  write_result(new_dir + "/off.json", 0.1, 2, off);
  write_result(new_dir + "/overlap.json", 0.05, 3, overlap);
  write_result(new_dir + "/hierarchical.json", 0.05, 4, hierarchical);
  const CompareReport r = compare_results(base_dir, new_dir, {});
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_EQ(r.matched[0].label, "resnet20 b32 fp32, 2 ranks x 1 thread, gloo");
  EXPECT_EQ(r.matched[0].new_runs, 1) << "the faster runs with other settings are not pooled with it";
  std::vector<std::string> others = r.only_in_new;
  std::sort(others.begin(), others.end());
  EXPECT_EQ(others, (std::vector<std::string>{"resnet20 b32 fp32, 2 ranks x 1 thread, gloo, hierarchical",
                                              "resnet20 b32 fp32, 2 ranks x 1 thread, gloo, updates in the next forward"}));
}

// Runs that differ in a flag deciding speed (read from the JSON's config; the flag's default
// where a result has none) are other configurations, named by the flag in their label: a run with
// --fuse_ops=false, one with --num_classes=10 (another head) are not the plain run.
TEST(Compare, RunsDifferingInASpeedFlagAreOtherConfigurations) {
  const std::string base_dir = fresh_dir("compare_flags_base"), new_dir = fresh_dir("compare_flags_new");
  write_result(base_dir + "/plain.json", 0.1, 1);  // no config: every flag at its default
  nlohmann::json unfused = result_doc(settings_with(), step_times(0.12, 2));
  unfused["config"] = {{"fuse_ops", "false"}, {"layer_timing", "false"}};
  write_json(new_dir + "/unfused.json", unfused);
  nlohmann::json head = result_doc(settings_with(), step_times(0.12, 3));
  head["config"] = {{"num_classes", "10"}};
  write_json(new_dir + "/head.json", head);
  nlohmann::json same = result_doc(settings_with(), step_times(0.1, 4));
  same["config"] = {{"fuse_ops", "true"}, {"num_classes", "0"}};  // given at their defaults
  write_json(new_dir + "/same.json", same);
  const CompareReport r = compare_results(base_dir, new_dir, {});
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_EQ(r.matched[0].new_runs, 1) << "only the run at the defaults pairs with the plain one";
  EXPECT_EQ(r.matched[0].verdict, Verdict::no_change);
  std::vector<std::string> others = r.only_in_new;
  std::sort(others.begin(), others.end());
  EXPECT_EQ(others, (std::vector<std::string>{"resnet20 b32 fp32, 1 rank x 2 threads, --fuse_ops=false",
                                              "resnet20 b32 fp32, 1 rank x 2 threads, --num_classes=10"}));
}

TEST(Compare, NothingMatchedIsBadInput) {
  const std::string dir = fresh_dir("compare_nothing");
  const std::string a = write_result(dir + "/a.json", 0.1, 1);
  const std::string b = write_result(dir + "/b.json", 0.1, 2, settings_with({{"precision", "bf16"}}));
  const CommandRun r = run_compare({a, b, "--check_only"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "cnnbench compare: nothing to compare: no configuration of " + a +
                       " (resnet20 b32 fp32, 1 rank x 2 threads) is in " + b + " (resnet20 b32 bf16, 1 rank x 2 threads)\n");
}

TEST(Compare, RunsOfOneConfigurationArePooled) {
  const std::string dir = fresh_dir("compare_pooled");
  make_folders(dir + "/new");
  const std::string base = write_result(dir + "/base.json", 0.1, 1);
  write_result(dir + "/new/1.json", 0.1, 2);
  write_result(dir + "/new/2.json", 0.1, 3);
  const CompareReport r = compare_results(base, dir + "/new", {});
  EXPECT_EQ(r.new_runs, 2);
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_EQ(r.matched[0].new_runs, 2);
  EXPECT_EQ(r.matched[0].test.kind, RunTest::one_side_spread);
}

// A folder as cnnbench leaves it: JSON files and the results.csv naming them (read once each),
// an allreduce result beside them (skipped), and a row whose JSON is gone (its images_per_sec used).
TEST(Compare, CsvRowsUseTheirJsonOrElseTheirSummary) {
  const std::string dir = fresh_dir("compare_csv");
  make_folders(dir + "/runs");
  const std::string csv = dir + "/runs/results.csv";
  write_result(dir + "/runs/a.json", 0.1, 1);
  append_row(csv, settings_with(), 320, 1, 30, "runs/a.json");  // as named from the folder above
  append_row(csv, settings_with({{"batch_size_per_rank", "64"}}), 600, 2, 30, "runs/gone.json");
  write_json(dir + "/runs/allreduce.json", {{"schema", "cnnbench.allreduce/1"}});

  const std::string next = fresh_dir("compare_csv_new");
  write_result(next + "/a.json", 0.1, 2);
  append_row(next + "/results.csv", settings_with({{"batch_size_per_rank", "64"}}), 540, 2, 30, "elsewhere.json");

  const CompareReport r = compare_results(dir + "/runs", next, {});
  EXPECT_EQ(r.base_runs, 2) << "a.json once, through its row";
  ASSERT_EQ(r.matched.size(), 2u);
  EXPECT_NEAR(r.matched[0].base_speed, 320, 320 * 0.02);  // a.json's own figure
  EXPECT_EQ(r.matched[1].verdict, Verdict::regression);  // 10% fewer, 1 run a side: beyond the tolerance
  EXPECT_NEAR(r.matched[1].change, -0.1, 1e-9);
  EXPECT_EQ(r.skipped, std::vector<std::string>{dir + "/runs/allreduce.json (cnnbench.allreduce/1)"});
  const CommandRun run = run_compare({dir + "/runs/results.csv", next});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("no test, 1+1 runs  regression (by the tolerance alone"), std::string::npos) << run.out;
  // the row's flags are not in the CSV: the comparison says they were taken as the defaults
  EXPECT_FALSE(r.matched[0].flags_assumed);
  EXPECT_TRUE(r.matched[1].flags_assumed);
  EXPECT_NE(run.out.find("flags assumed: resnet20 b64 fp32"), std::string::npos) << run.out;
}

// A results.csv row whose JSON is gone is one run, its images_per_sec the run's figure: rows of
// long runs (timed_steps up to 10 million) are tested as runs like any other, and a row
// appended twice (a file copied onto itself) is one run.
TEST(Compare, CsvRowsAreRunsAndARowAppendedTwiceIsOne) {
  const std::string dir = fresh_dir("compare_rows");
  for (const char* side : {"a", "b"}) make_folders(dir + "/" + side);
  for (int i = 0; i < 2; ++i) {
    append_row(dir + "/a/results.csv", settings_with(), 1000 + i, 1, 10'000'000, "gone.json");
    append_row(dir + "/b/results.csv", settings_with(), 900 + i, 1, 10'000'000, "gone.json");
  }
  CompareReport r = compare_results(dir + "/a", dir + "/b", {});
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_EQ(r.matched[0].base_runs, 2);
  EXPECT_EQ(r.matched[0].test.kind, RunTest::welch);
  EXPECT_LT(r.matched[0].test.p_value, 1e-3);
  EXPECT_EQ(r.exit_code(), 1);  // 10% slower: a regression

  const std::string twice = fresh_dir("compare_row_twice");
  for (const char* side : {"a", "b"}) make_folders(twice + "/" + side);
  for (int i = 0; i < 2; ++i) {
    append_row(twice + "/a/results.csv", settings_with(), 1000, 0, 30, "gone.json");
    append_row(twice + "/b/results.csv", settings_with(), 990, 0, 30, "gone.json");
  }
  r = compare_results(twice + "/a", twice + "/b", {});
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_EQ(r.matched[0].base_runs, 1);
  EXPECT_EQ(r.matched[0].test.kind, RunTest::none) << "not 2 + 2 runs of no spread";
  EXPECT_EQ(r.matched[0].verdict, Verdict::no_change);
}

// A run's figure is its own headline images/sec (every image over every step's time), which a
// stall on some steps lowers though the median step does not move; with --repeats, each
// repeat's figure is a run. Settings that differ between the sides without making another
// configuration (warm-up steps, the CPU, the ISA, the compiler, oneDNN) are said under the table.
TEST(Compare, RunsAreTheirHeadlineFiguresAndEachRepeatIsARun) {
  const std::string dir = fresh_dir("compare_headline");
  make_folders(dir + "/base");
  make_folders(dir + "/new");
  std::vector<double> stalled = step_times(0.100, 1);
  for (size_t i = 0; i < stalled.size(); i += 5) stalled[i] *= 3;  // every fifth step 3x slower
  write_json(dir + "/base/run.json", result_doc(settings_with(), step_times(0.100, 2)));
  nlohmann::json stall = result_doc(settings_with(), stalled);
  write_json(dir + "/new/stall.json", stall);
  CompareReport r = compare_results(dir + "/base", dir + "/new", {});
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_NEAR(r.matched[0].change, 1.0 / 1.4 - 1, 0.02) << "a median step would say no change";
  EXPECT_EQ(r.matched[0].verdict, Verdict::regression);

  nlohmann::json repeated = result_doc(settings_with(), step_times(0.100, 3));
  repeated["repeats"] = {{"count", 3}, {"images_per_sec", {318.0, 322.0, 320.0}}};
  repeated["run"]["warmup_steps"] = 0;
  repeated["context"]["cpu_model"] = "Another CPU";
  write_json(dir + "/new/stall.json", repeated);
  nlohmann::json base = result_doc(settings_with(), step_times(0.100, 4));
  base["run"]["warmup_steps"] = 2;
  base["context"]["cpu_model"] = "This CPU";
  write_json(dir + "/base/run.json", base);
  r = compare_results(dir + "/base", dir + "/new", {});
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_EQ(r.matched[0].new_runs, 3);
  EXPECT_EQ(r.matched[0].test.kind, RunTest::one_side_spread);
  EXPECT_NEAR(r.matched[0].new_speed, std::cbrt(318.0 * 322.0 * 320.0), 1e-9);
  EXPECT_EQ(r.matched[0].differences,
            (std::vector<std::string>{"CPU: base This CPU, new Another CPU", "warm-up steps: base 2, new 0"}));
  const CommandRun run = run_compare({dir + "/base", dir + "/new"});
  EXPECT_NE(run.out.find("differs: resnet20 b32 fp32, 1 rank x 2 threads: warm-up steps: base 2, new 0\n"),
            std::string::npos)
      << run.out;
  const auto doc = nlohmann::json::parse(run_compare({dir + "/base", dir + "/new", "--json"}).out);
  EXPECT_EQ(doc["matched"][0]["differences"].size(), 2u);
}

// A run is counted once however its file is reached: a copied folder reads its own copies (not
// the files its rows name elsewhere, which would count each run twice), and two files with the
// same bytes are one run. A row whose JSON a later run replaced (the same --result_json) keeps
// its own run, from its summary, and the later run is counted through its own row.
TEST(Compare, ARunIsCountedOnceAndARowKeepsItsRun) {
  const std::string dir = fresh_dir("compare_once");
  make_folders(dir + "/runs");
  write_result(dir + "/runs/a.json", 0.1, 1);
  append_row(dir + "/runs/results.csv", settings_with(), 320, 1, 30, dir + "/runs/a.json");  // as --result_json names it
  std::filesystem::copy(dir + "/runs", dir + "/copy");
  std::filesystem::copy_file(dir + "/copy/a.json", dir + "/copy/a_again.json");
  EXPECT_EQ(compare_results(dir + "/copy", dir + "/runs", {}).base_runs, 1);

  make_folders(dir + "/replaced");
  nlohmann::json later = result_doc(settings_with({{"batch_size_per_rank", "16"}}), step_times(0.05, 3));
  later["context"]["time_utc"] = "2026-11-27T18:00:02Z";
  write_json(dir + "/replaced/r.json", later);
  append_row(dir + "/replaced/results.csv", settings_with({{"time_utc", "2026-11-27T18:00:01Z"}}), 320, 1, 30,
             "replaced/r.json");
  append_row(dir + "/replaced/results.csv",
             settings_with({{"time_utc", "2026-11-27T18:00:02Z"}, {"batch_size_per_rank", "16"}}), 320, 1, 30,
             "replaced/r.json");
  const CompareReport r = compare_results(dir + "/replaced", dir + "/replaced", {});
  EXPECT_EQ(r.base_runs, 2);
  ASSERT_EQ(r.matched.size(), 2u);
  int from_row = 0;
  for (const auto& m : r.matched) from_row += m.flags_assumed;
  EXPECT_EQ(from_row, 1) << "the b32 row's run, from the row";
}

TEST(Compare, JsonReportForScripts) {
  const std::string dir = fresh_dir("compare_json");
  const std::string base = write_result(dir + "/base.json", 0.1, 1);
  const std::string next = write_result(dir + "/new.json", 0.2, 2);
  const CommandRun r = run_compare({base, next, "--json"});
  EXPECT_EQ(r.exit_code, 1);
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "cnnbench.compare/2");
  EXPECT_EQ(doc["regressions"], 1);
  EXPECT_EQ(doc["matched"][0]["verdict"], "regression (by the tolerance alone)");
  EXPECT_EQ(doc["matched"][0]["base_runs"], 1);
  EXPECT_NEAR(doc["matched"][0]["change"].get<double>(), -0.5, 0.02);
  EXPECT_EQ(doc["matched"][0]["config"]["model"], "resnet20");
}

// ---- bad input: one line naming the file, exit 2, never a crash --------------------------------

TEST(Compare, MalformedFilesGetOneLineNamingThem) {
  const std::string dir = fresh_dir("compare_malformed");
  const std::string good = write_result(dir + "/good.json", 0.1, 1);
  const std::string text = result_doc(settings_with(), step_times(0.1, 2)).dump(1);
  std::ofstream(dir + "/truncated.json") << text.substr(0, text.size() / 2);
  write_json(dir + "/schema.json", {{"schema", "cnnbench.allreduce/1"}});
  write_json(dir + "/no_schema.json", nlohmann::json::array({1, 2}));
  nlohmann::json doc = result_doc(settings_with(), step_times(0.1, 3));
  doc.erase("steps");
  write_json(dir + "/no_steps.json", doc);
  doc["steps"] = {{"time_sec", nlohmann::json::array()}};
  write_json(dir + "/empty_steps.json", doc);
  doc["steps"] = {{"time_sec", {0.1, "slow", 0.1}}};
  write_json(dir + "/bad_step.json", doc);
  doc = result_doc(settings_with(), step_times(0.1, 3));
  doc["run"]["ranks"] = nlohmann::json::array();
  write_json(dir + "/bad_setting.json", doc);
  std::ofstream(dir + "/allreduce.csv") << "time_utc,backend,ranks\n1,mpi,2\n";
  std::ofstream(dir + "/empty.csv") << "";
  append_row(dir + "/short_row.csv", settings_with(), 320, 1, 30, "");
  std::ofstream(dir + "/short_row.csv", std::ios::app) << "1,2,3\n";
  std::ofstream(dir + "/unterminated.csv") << "a,\"b\n";
  std::ofstream(dir + "/stray_quote.csv") << "model,dataset\nresnet50,\"x\"y\n";
  make_folders(dir + "/empty_folder");

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated.json", "not JSON (parse error"},
      {"schema.json", "schema is 'cnnbench.allreduce/1', not cnnbench.result/1"},
      {"no_schema.json", "not a cnnbench result (no \"schema\" field)"},
      {"no_steps.json", "no \"steps\" object"},
      {"empty_steps.json", "steps.time_sec is empty: no timed steps to compare"},
      {"bad_step.json", "steps.time_sec[1] is not a positive number"},
      {"bad_setting.json", "run.ranks is array, not a setting"},
      {"allreduce.csv", "not a cnnbench results.csv: its header has no column 'model'"},
      {"empty.csv", "empty: no header"},
      {"short_row.csv:3", "3 fields, the header has 40"},
      {"unterminated.csv:1", "a quoted field never ends"},
      {"stray_quote.csv:2", "a quote inside an unquoted field, or text after a closing quote"},
      {"missing.json", "no such file or folder"},
      {"empty_folder", "holds no training results"},
  };
  for (const auto& [file, problem] : cases) {
    const std::string path = dir + "/" + file.substr(0, file.find(':'));
    const std::vector<std::vector<std::string>> both_ways = {{good, path}, {path, good, "--check_only"}};
    for (const auto& args : both_ways) {
      const CommandRun r = run_compare(args);
      EXPECT_EQ(r.exit_code, 2) << file << ": " << r.out;
      EXPECT_EQ(r.out, "") << file;
      EXPECT_EQ(r.err.rfind("cnnbench compare: " + dir + "/" + file + ": " + problem, 0), 0u) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    }
  }
  // a folder holding a broken result is broken too
  make_folders(dir + "/folder");
  std::ofstream(dir + "/folder/r.json") << "{";
  EXPECT_EQ(run_compare({dir + "/folder", good}).err.rfind("cnnbench compare: " + dir + "/folder/r.json: not JSON", 0), 0u);
}

// A results.csv of one row: resnet20's settings, 320 img/s over 30 steps, no JSON, then `raw`
// (field values as they are, quoted as CSV needs).
std::string csv_with(const std::string& path, const Settings& raw) {
  std::map<std::string, std::string> by_name = settings_with();
  by_name["images_per_sec"] = "320";
  by_name["images_per_sec_mean"] = "320";
  by_name["images_per_sec_stderr"] = "1";
  by_name["timed_steps"] = "30";
  for (const auto& [k, v] : raw) by_name[k] = v;
  std::vector<std::string> row;
  for (const std::string& column : csv_header()) row.push_back(by_name.count(column) ? by_name[column] : "0");
  std::filesystem::remove(path);
  append_csv_row(path, csv_header(), row);
  return path;
}

// Inputs the fuzzers (fuzz_results_csv, fuzz_result_json, tests/fuzz) and their oracles found:
// `compare --json` ended the process (nlohmann's type_error 316, uncaught) on a setting that is
// not UTF-8; timed_steps = 1e300 converted to int64 out of range (undefined behaviour); a value or
// schema with a newline broke the one-line error; global_batch 1e308 over a step of 1e-10 s
// gave an infinite speed.
TEST(Compare, FuzzFoundInputsCompareOrGetOneLine) {
  const std::string dir = fresh_dir("compare_fuzz_found");
  const std::string latin1 = csv_with(dir + "/latin1.csv", {{"model", "resnet20\xb5"}, {"host", "h\xe9te"}});
  for (const bool json : {true, false}) {
    const CommandRun r = run_compare(json ? std::vector<std::string>{latin1, latin1, "--json"}
                                          : std::vector<std::string>{latin1, latin1});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    if (json) {
      EXPECT_EQ(nlohmann::json::parse(r.out)["matched"][0]["config"]["model"], "resnet20\xef\xbf\xbd");
    }
  }
  const std::vector<std::pair<std::string, std::string>> refused = {
      {csv_with(dir + "/steps_1e300.csv", {{"timed_steps", "1e300"}}) + ":2",
       "timed_steps '1e300' is not a whole number of steps from 1 to 10000000"},
      {csv_with(dir + "/steps_half.csv", {{"timed_steps", "2.5"}}) + ":2",
       "timed_steps '2.5' is not a whole number of steps from 1 to 10000000"},
      {csv_with(dir + "/mean_newline.csv", {{"images_per_sec_mean", "1\n2"}}) + ":2",
       "images_per_sec_mean '1\\n2' is not a number"},
  };
  nlohmann::json doc = result_doc(settings_with(), step_times(0.1, 4));
  doc["run"]["global_batch"] = 1e308;
  doc["steps"]["time_sec"][0] = 1e-10;
  const std::string huge_batch = write_json(dir + "/huge_batch.json", doc);
  doc = result_doc(settings_with(), step_times(0.1, 4));
  doc["steps"]["time_sec"][2] = 1e-12;
  const std::string tiny_step = write_json(dir + "/tiny_step.json", doc);
  doc = result_doc(settings_with(), step_times(0.1, 4));
  doc["schema"] = "cnnbench.result/1\nx";
  const std::string schema = write_json(dir + "/schema_newline.json", doc);
  std::vector<std::pair<std::string, std::string>> cases = refused;
  cases.push_back({huge_batch, "run.global_batch is not a whole number from 1 to 16777216"});
  cases.push_back({tiny_step, "steps.time_sec[2] is 1e-12 s, less than a nanosecond"});
  cases.push_back({schema, "schema is 'cnnbench.result/1\\nx', not cnnbench.result/1 (compare reads training results)"});
  for (const auto& [where, problem] : cases) {
    const std::string path = where.substr(0, where.rfind(':') > where.rfind('/') ? where.rfind(':') : where.size());
    const CommandRun r = run_compare({path, path, "--json"});
    EXPECT_EQ(r.exit_code, 2) << where;
    EXPECT_EQ(r.err, "cnnbench compare: " + where + ": " + problem + "\n");
  }
}

// Issue 35: every number compare takes from a results.csv row is checked where it is read, in
// rows whose JSON is at hand too; each problem is one line naming the file, the line and the
// column. Before, images_per_sec was never read (nan, -100, abc and a renamed column compared,
// exit 0), a negative standard error moved Welch's p-value (0.59 to 0.39) and 1e300 img/s
// printed a 300-digit cell.
TEST(Compare, CsvNumbersAreCheckedWhereTheyAreRead) {
  const std::string dir = fresh_dir("compare_csv_numbers");
  const std::string speed = "is not a speed from 1e-09 to 1.67772e+16 images/sec";
  std::vector<std::pair<Settings, std::string>> cases;
  for (const char* column : {"images_per_sec", "images_per_sec_mean"}) {
    const std::string c = column;
    for (const char* text : {"nan", "inf", "-inf", "1e309", "abc", "", " 320", "0x10", "320 "})
      cases.push_back({{{c, text}}, c + " '" + text + "' is not a number"});
    for (const char* text : {"-100", "0", "1e300", "1e-10"})
      cases.push_back({{{c, text}}, c + " '" + text + "' " + speed});
  }
  cases.push_back({{{"images_per_sec_stderr", "-1"}}, "images_per_sec_stderr '-1' is not a number from 0 to 1.67772e+16"});
  cases.push_back({{{"images_per_sec_stderr", "nan"}}, "images_per_sec_stderr 'nan' is not a number"});
  cases.push_back({{{"images_per_sec_stderr", ""}}, "images_per_sec_stderr '' is not a number"});
  cases.push_back({{{"timed_steps", "0"}}, "timed_steps '0' is not a whole number of steps from 1 to 10000000"});
  cases.push_back({{{"timed_steps", "-3"}}, "timed_steps '-3' is not a whole number of steps from 1 to 10000000"});
  int n = 0;
  for (const auto& [raw, problem] : cases) {
    const std::string path = csv_with(dir + "/case" + std::to_string(n++) + ".csv", raw);
    const CommandRun r = run_compare({path, path});
    EXPECT_EQ(r.exit_code, 2) << problem;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "cnnbench compare: " + path + ":2: " + problem + "\n");
  }
  // a row whose JSON is read instead is checked all the same
  const std::string good_json = write_result(dir + "/good.json", 0.1, 1);
  const std::string with_json = csv_with(dir + "/with_json.csv", {{"images_per_sec", "nan"}, {"json_file", good_json}});
  EXPECT_EQ(run_compare({with_json, good_json}).err,
            "cnnbench compare: " + with_json + ":2: images_per_sec 'nan' is not a number\n");
  EXPECT_EQ(run_compare({csv_with(dir + "/fine.csv", {{"json_file", good_json}}), good_json}).exit_code, 0);
}

// The columns compare reads are in the header, each once; the other columns are not its business
// (a later version adds some, and readers ignore fields they do not know).
TEST(Compare, CsvHeaderNamesEveryColumnCompareReadsOnce) {
  const std::string dir = fresh_dir("compare_csv_header");
  const std::string good = csv_with(dir + "/good.csv", {});
  std::ifstream in(good);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto with_header = [&](const std::string& name, const std::string& from, const std::string& to) {
    std::string changed = text;
    changed.replace(changed.find(from), from.size(), to);
    std::ofstream(dir + "/" + name) << changed;
    return dir + "/" + name;
  };
  const std::string renamed = with_header("renamed.csv", "fusion_threshold_mb,compression,images_per_sec,",
                                          "fusion_threshold_mb,compression,images_per_sec_total,");
  CommandRun r = run_compare({renamed, good});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "cnnbench compare: " + renamed + ": not a cnnbench results.csv: its header has no column "
                   "'images_per_sec'\n");
  const std::string twice = with_header("twice.csv", ",host,", ",images_per_sec_mean,");
  r = run_compare({good, twice});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "cnnbench compare: " + twice + ": not a cnnbench results.csv: its header has column "
                   "'images_per_sec_mean' twice\n");
  const std::string other = with_header("other.csv", ",host,", ",the_host,");  // not read by compare
  EXPECT_EQ(run_compare({good, other}).exit_code, 0);
}

// Empty cells where a convergence run writes them (its speed when it trained no epoch, its time
// when it missed the target) are read as such; anything else in them is checked like the rest.
TEST(Compare, ConvergenceRowsEmptyCellsMeanNotMeasured) {
  const std::string dir = fresh_dir("compare_csv_convergence_numbers");
  auto row = [](const Settings& changes) {
    Settings s = settings_with({{"model", "resnet20_fmnist"}, {"dataset", "fashion_mnist"}, {"synthetic", "false"},
                                {"mode", "convergence"}, {"batch_size_per_rank", "128"}});
    s["target_top_1_accuracy"] = "0.9";
    s["time_to_accuracy_sec"] = "100";
    s["epochs_to_accuracy"] = "10";
    s["images_to_accuracy"] = "600000";
    for (const auto& [k, v] : changes) s[k] = v;
    return s;
  };
  const std::string fine = dir + "/fine.csv";
  csv_append(fine, row({}));                                                      // images_per_sec empty
  csv_append(fine, row({{"images_per_sec", "2000"}}));
  csv_append(fine, row({{"time_to_accuracy_sec", ""}, {"epochs_to_accuracy", ""}, {"images_to_accuracy", ""}}));
  const CompareReport r = compare_results(fine, fine, {});
  ASSERT_EQ(r.accuracy.size(), 1u);
  EXPECT_EQ(r.accuracy[0].base_runs, 3);
  EXPECT_EQ(r.accuracy[0].base_reached, 2);
  const std::vector<std::pair<Settings, std::string>> refused = {
      {{{"images_per_sec", "nan"}}, "images_per_sec 'nan' is not a number"},
      {{{"images_per_sec", "-1"}}, "images_per_sec '-1' is not a number from 0 to 1.67772e+16 images/sec"},
      {{{"target_top_1_accuracy", "1.5"}}, "target_top_1_accuracy '1.5' is not a number from 0 to 1"},
      {{{"epochs_to_accuracy", "inf"}}, "epochs_to_accuracy 'inf' is not a number"},
      {{{"images_to_accuracy", "-600000"}}, "images_to_accuracy '-600000' is not a number from 0 to 1e+18"},
      {{{"time_to_accuracy_sec", ""}}, "epochs_to_accuracy '10' without a time_to_accuracy_sec"},
  };
  int n = 0;
  for (const auto& [changes, problem] : refused) {
    const std::string path = dir + "/bad" + std::to_string(n++) + ".csv";
    csv_append(path, row(changes));
    const CommandRun bad = run_compare({path, fine});
    EXPECT_EQ(bad.exit_code, 2) << problem;
    EXPECT_EQ(bad.err, "cnnbench compare: " + path + ":2: " + problem + "\n");
  }
}

// Numbers in range can still be far apart: every cell of the table stays narrow.
TEST(Compare, TableCellsStayNarrowForExtremeSpeeds) {
  const std::string dir = fresh_dir("compare_wide_numbers");
  const std::string base = csv_with(dir + "/base.csv", {{"images_per_sec", "1e-09"}, {"images_per_sec_mean", "1e-09"},
                                                       {"images_per_sec_stderr", "0"}});
  const std::string next = csv_with(dir + "/new.csv", {{"images_per_sec", "1.6e16"}, {"images_per_sec_mean", "1.6e16"},
                                                      {"images_per_sec_stderr", "1e16"}});
  const CommandRun r = run_compare({base, next});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  1.6e+16  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("+1.6e+27%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("     1e-09  "), std::string::npos) << "not 0.00: " << r.out;
  // the time-to-accuracy table the same way
  auto accuracy_csv = [&](const std::string& name, const std::string& seconds) {
    Settings s = settings_with({{"model", "resnet20_fmnist"}, {"dataset", "fashion_mnist"}, {"synthetic", "false"},
                                {"mode", "convergence"}, {"batch_size_per_rank", "128"}});
    s["target_top_1_accuracy"] = "0.9";
    s["time_to_accuracy_sec"] = seconds;
    s["epochs_to_accuracy"] = "10";
    s["images_to_accuracy"] = "600000";
    csv_append(dir + "/" + name, s);
    return dir + "/" + name;
  };
  const CommandRun a = run_compare({accuracy_csv("fast.csv", "0.001"), accuracy_csv("slow.csv", "1e12")});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("1e+12 s (1/1)"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("+1e+17%"), std::string::npos) << a.out;
  std::istringstream lines(r.out);  // the speed table's rows are about 120 characters here
  for (std::string line; std::getline(lines, line);) EXPECT_LT(line.size(), 150u) << line;
}

// The JSON side: summary speeds in range (the steps give the table's figures, but a result whose
// summary holds nan or a negative speed is damaged), step times below 31 years.
TEST(Compare, ResultJsonNumbersAreChecked) {
  const std::string dir = fresh_dir("compare_json_numbers");
  const std::string good = write_result(dir + "/good.json", 0.1, 1);
  const std::string speed = "is not a speed from 1e-09 to 1.67772e+16 images/sec";
  std::vector<std::pair<std::string, std::string>> cases;
  auto with = [&](const std::string& name, const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json doc = result_doc(settings_with(), step_times(0.1, 2));
    change(doc);
    return write_json(dir + "/" + name, doc);
  };
  cases.push_back({with("nan.json", [](auto& d) { d["summary"]["images_per_sec"] = NAN; }),  // written as null
                   "summary.images_per_sec " + speed});
  cases.push_back({with("negative.json", [](auto& d) { d["summary"]["images_per_sec"] = -100; }),
                   "summary.images_per_sec " + speed});
  cases.push_back({with("huge.json", [](auto& d) { d["summary"]["images_per_sec"] = 1e300; }),
                   "summary.images_per_sec " + speed});
  cases.push_back({with("text.json", [](auto& d) { d["summary"]["images_per_sec_mean"] = "fast"; }),
                   "summary.images_per_sec_mean " + speed});
  cases.push_back({with("stderr.json", [](auto& d) { d["summary"]["images_per_sec_stderr"] = -4.5; }),
                   "summary.images_per_sec_stderr is not a number from 0 to 1.67772e+16"});
  cases.push_back({with("no_summary.json", [](auto& d) { d.erase("summary"); }),
                   "no \"summary\" object (not a whole cnnbench result)"});
  cases.push_back({with("long_step.json", [](auto& d) { d["steps"]["time_sec"][3] = 2e9; }),
                   "steps.time_sec[3] is 2e+09 s, more than 1e9 s (31 years)"});
  for (const auto& [path, problem] : cases) {
    const CommandRun r = run_compare({good, path});
    EXPECT_EQ(r.exit_code, 2) << path;
    EXPECT_EQ(r.err, "cnnbench compare: " + path + ": " + problem + "\n");
  }
  // the other per-step arrays are not read (and not kept while parsing): whatever they hold
  const std::string other_arrays = with("other_arrays.json", [](auto& d) {
    d["steps"]["loss"] = {"not", "numbers"};
    d["steps"]["forward_sec"] = nlohmann::json::array({1, 2, 3});
  });
  const CompareReport r = compare_results(good, other_arrays, {});
  ASSERT_EQ(r.matched.size(), 1u);
  EXPECT_EQ(r.matched[0].new_runs, 1);
}

// Issue 35: compare read its inputs whole, whatever they were: /dev/zero grew without end (5 GB
// in 10 s) and a FIFO blocked forever. Every file it reads is a regular file within a cap.
TEST(Compare, InputsThatAreNoRegularFileOrTooLargeAreRefusedUnread) {
  const std::string dir = fresh_dir("compare_bounded");
  const std::string good = write_result(dir + "/good.json", 0.1, 1);
  const std::string fifo = dir + "/fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // sparse: as large as they say, with no disk behind them
  const std::string huge_json = dir + "/huge.json", huge_csv = dir + "/huge.csv";
  std::ofstream(huge_json).close();
  std::filesystem::resize_file(huge_json, (uint64_t{3} << 30) + 1);
  std::ofstream(huge_csv).close();
  std::filesystem::resize_file(huge_csv, (uint64_t{256} << 20) + 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/zero", "/dev/zero: is a device, not a regular file"},
      {fifo, fifo + ": is a pipe, not a regular file"},
      {huge_json, huge_json + ": larger than 3 GiB, not a cnnbench result"},
      {huge_csv, huge_csv + ": larger than 256 MiB, not a cnnbench results.csv"},
  };
  for (const auto& [path, message] : cases)
    for (const auto& args : {std::vector<std::string>{path, good}, std::vector<std::string>{good, path}}) {
      const CommandRun r = run_compare(args);
      EXPECT_EQ(r.exit_code, 2) << path;
      EXPECT_EQ(r.err, "cnnbench compare: " + message + "\n");
    }
  // in a folder: a results.csv or *.json that is a pipe is refused, not passed over
  make_folders(dir + "/folder");
  write_result(dir + "/folder/a.json", 0.1, 2);
  ASSERT_EQ(mkfifo((dir + "/folder/results.csv").c_str(), 0600), 0);
  EXPECT_EQ(run_compare({dir + "/folder", good}).err,
            "cnnbench compare: " + dir + "/folder/results.csv: is a pipe, not a regular file\n");
  std::filesystem::remove(dir + "/folder/results.csv");
  ASSERT_EQ(mkfifo((dir + "/folder/b.json").c_str(), 0600), 0);
  EXPECT_EQ(run_compare({dir + "/folder", good}).err,
            "cnnbench compare: " + dir + "/folder/b.json: is a pipe, not a regular file\n");
  std::filesystem::remove(dir + "/folder/b.json");
  EXPECT_EQ(run_compare({dir + "/folder", good}).exit_code, 0);
}

// ---- time to accuracy ----------------------------------------------------------------------------

// A convergence result of resnet20_fmnist on 1 rank with a 0.9 target: reached after `seconds`
// (and 10 epochs), or not reached when `seconds` < 0.
nlohmann::json convergence_doc(double seconds, const Settings& changes = {}) {
  Settings s = settings_with({{"model", "resnet20_fmnist"}, {"dataset", "fashion_mnist"}, {"synthetic", "false"},
                              {"mode", "convergence"}, {"batch_size_per_rank", "128"}});
  for (const auto& [k, v] : changes) s[k] = v;
  nlohmann::json doc = result_doc(s, {1.0});
  doc["schema"] = "cnnbench.convergence/1";
  doc["run"]["model"] = s.at("model");
  doc.erase("steps");
  doc.erase("model");
  doc["time_to_accuracy"] = {{"target_top_1_accuracy", 0.9}, {"reached", seconds >= 0}};
  if (seconds >= 0) {
    doc["time_to_accuracy"]["seconds"] = seconds;
    doc["time_to_accuracy"]["epochs"] = 10;
    doc["time_to_accuracy"]["images"] = 600000;
  }
  return doc;
}

// A folder of convergence results, one per entry of `seconds`, each a run of its own (its own
// start time: files with the same bytes are one run's copies, counted once).
std::string accuracy_folder(const std::string& dir, const std::vector<double>& seconds) {
  make_folders(dir);
  for (size_t i = 0; i < seconds.size(); ++i) {
    nlohmann::json doc = convergence_doc(seconds[i]);
    doc["context"]["time_utc"] = "2026-11-27T18:00:0" + std::to_string(i) + "Z";
    write_json(dir + "/run" + std::to_string(i) + ".json", doc);
  }
  return dir;
}

// Runs of one --seed are the same run again (the same data order and first weights: two real
// small_cnn runs of seed 1 ended on the same test top-1 and loss), so a side counts one run per
// seed, the one of median time; and runs on other data (their fingerprints differ, where every
// run records one) are not compared at all: 4 runs on a quarter of the training set read as 70%
// faster before.
TEST(Compare, TimeToAccuracyCountsASeedOnceAndRefusesOtherData) {
  const std::string dir = fresh_dir("compare_accuracy_seeds");
  auto folder = [&](const std::string& name, const std::vector<double>& seconds, const std::vector<std::string>& seeds,
                    const std::string& data) {
    make_folders(dir + "/" + name);
    for (size_t i = 0; i < seconds.size(); ++i) {
      nlohmann::json doc = convergence_doc(seconds[i]);
      doc["context"]["time_utc"] = "2026-11-27T18:00:0" + std::to_string(i) + "Z";
      doc["config"] = {{"seed", seeds[i]}};
      if (!data.empty()) doc["run"]["data_fingerprint"] = data;
      write_json(dir + "/" + name + "/run" + std::to_string(i) + ".json", doc);
    }
    return dir + "/" + name;
  };
  // 4 + 4 runs would decide (p = 0.03); of one seed a side they are 1 + 1 and cannot
  const std::string base = folder("base", {100, 101, 102, 103}, {"1", "1", "1", "1"}, "00000000000000aa");
  const std::string slow = folder("slow", {130, 131, 132, 133}, {"1", "1", "1", "1"}, "00000000000000aa");
  CompareReport r = compare_results(base, slow, {});
  ASSERT_EQ(r.accuracy.size(), 1u);
  EXPECT_EQ(r.accuracy[0].base_runs, 1);
  EXPECT_EQ(r.accuracy[0].base_same_seed, 3);
  EXPECT_DOUBLE_EQ(r.accuracy[0].base_seconds, 101);  // the median of the seed's runs
  EXPECT_FALSE(r.accuracy[0].enough_runs);
  EXPECT_EQ(r.exit_code(), 0);
  CommandRun run = run_compare({base, slow});
  EXPECT_NE(run.out.find("same seed: resnet20_fmnist b128 fp32, 1 rank x 2 threads, real data, convergence, to 90% "
                         "top-1: 3 base and 3 new runs repeated another's --seed (the same run again): counted once"),
            std::string::npos)
      << run.out;
  // four seeds a side decide
  const std::string seeded = folder("seeded", {130, 131, 132, 133}, {"1", "2", "3", "4"}, "00000000000000aa");
  const std::string seeded_base = folder("seeded_base", {100, 101, 102, 103}, {"1", "2", "3", "4"}, "00000000000000aa");
  EXPECT_EQ(compare_results(seeded_base, seeded, {}).exit_code(), 1);

  // other data: not compared, said so, never a regression
  const std::string subset = folder("subset", {30, 31, 32, 33}, {"1", "2", "3", "4"}, "00000000000000bb");
  r = compare_results(seeded_base, subset, {});
  ASSERT_EQ(r.accuracy.size(), 1u);
  EXPECT_EQ(r.accuracy[0].other_data, "base 00000000000000aa, new 00000000000000bb");
  EXPECT_EQ(r.accuracy[0].verdict, Verdict::no_change);
  run = run_compare({subset, seeded_base});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("not compared (other data)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("other data: resnet20_fmnist"), std::string::npos) << run.out;
  // a side that does not record its data (results written before) is compared as before
  EXPECT_EQ(compare_results(folder("unrecorded", {130, 131, 132, 133}, {"1", "2", "3", "4"}, ""), seeded_base, {})
                .accuracy[0]
                .other_data,
            "");
}

TEST(Compare, TimeToAccuracyIsTheMedianRunAndNeedsEnoughRuns) {
  const std::string dir = fresh_dir("compare_accuracy");
  // two runs a side cannot give p < 0.05, however far apart: say so, call no change
  CommandRun r = run_compare({accuracy_folder(dir + "/base2", {100, 101}), accuracy_folder(dir + "/new2", {200, 210})});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("too few runs to decide (2 + 2 cannot give p < 0.05)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("to 90% top-1"), std::string::npos) << r.out;

  // five a side, 30% more seconds: a regression, medians over the runs
  const std::string base = accuracy_folder(dir + "/base5", {104, 100, 102, 103, 101});
  const CompareReport slow = compare_results(base, accuracy_folder(dir + "/slow5", {130, 134, 131, 133, 132}), {});
  ASSERT_EQ(slow.accuracy.size(), 1u);
  EXPECT_TRUE(slow.matched.empty());
  EXPECT_DOUBLE_EQ(slow.accuracy[0].base_seconds, 102);
  EXPECT_DOUBLE_EQ(slow.accuracy[0].new_seconds, 132);
  EXPECT_NEAR(slow.accuracy[0].change, 132.0 / 102 - 1, 1e-12);
  EXPECT_TRUE(slow.accuracy[0].enough_runs);
  EXPECT_EQ(slow.accuracy[0].verdict, Verdict::regression);
  EXPECT_EQ(slow.exit_code(), 1);

  // runs of another learning rate are another configuration, not a slower one
  {
    const std::string other = dir + "/rate5";
    make_folders(other);
    for (int i = 0; i < 5; ++i) {
      nlohmann::json doc = convergence_doc(130 + i);
      doc["context"]["time_utc"] = "2026-11-27T18:00:0" + std::to_string(i) + "Z";
      doc["config"] = {{"init_learning_rate", "0.01"}, {"optimizer", "sgd"}};
      write_json(other + "/run" + std::to_string(i) + ".json", doc);
    }
    CommandRun r = run_compare({base, other});
    EXPECT_EQ(r.exit_code, 2) << "nothing to compare: " << r.out << r.err;
    EXPECT_NE(r.err.find("--init_learning_rate=0.01"), std::string::npos) << r.err;
  }
  // nor are runs that read their images another way (ImageNet: shards or JPEG folders); a result
  // written before run.input_format was kept read its files into memory
  {
    const std::string other = dir + "/shards5";
    make_folders(other);
    for (int i = 0; i < 5; ++i) {
      nlohmann::json doc = convergence_doc(130 + i);
      doc["context"]["time_utc"] = "2026-11-27T18:00:0" + std::to_string(i) + "Z";
      doc["run"]["input_format"] = "tfrecord";
      write_json(other + "/run" + std::to_string(i) + ".json", doc);
    }
    CommandRun r = run_compare({base, other});
    EXPECT_EQ(r.exit_code, 2) << "nothing to compare: " << r.out << r.err;
    EXPECT_NE(r.err.find("tfrecord input"), std::string::npos) << r.err;
    nlohmann::json kept = convergence_doc(101);
    kept["run"]["input_format"] = "in-memory";
    make_folders(dir + "/kept");
    write_json(dir + "/kept/run.json", kept);
    EXPECT_EQ(compare_results(base, dir + "/kept", {}).accuracy.size(), 1u) << "paired with the results before";
    // the shuffle buffer sets a TFRecord stream's order alone: elsewhere runs differing in it pair
    kept["config"] = {{"datasets_shuffle_buffer_size", "50"}};
    write_json(dir + "/kept/run.json", kept);
    EXPECT_EQ(compare_results(base, dir + "/kept", {}).accuracy.size(), 1u) << "in memory, the buffer did nothing";
    for (int i = 0; i < 5; ++i) {
      nlohmann::json doc = convergence_doc(130 + i);
      doc["context"]["time_utc"] = "2026-11-27T18:00:0" + std::to_string(i) + "Z";
      doc["run"]["input_format"] = "tfrecord";
      doc["config"] = {{"datasets_shuffle_buffer_size", "50"}};
      write_json(other + "/small_buffer" + std::to_string(i) + ".json", doc);
    }
    r = run_compare({other, other});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("--datasets_shuffle_buffer_size=50"), std::string::npos) << "on shards, two configurations: "
                                                                                  << r.out;
  }

  // faster, and the same within noise
  EXPECT_EQ(compare_results(base, accuracy_folder(dir + "/fast5", {80, 82, 81, 79, 83}), {}).accuracy[0].verdict,
            Verdict::faster);
  EXPECT_EQ(compare_results(base, accuracy_folder(dir + "/same5", {101, 105, 99, 102, 103}), {}).accuracy[0].verdict,
            Verdict::no_change);

  // three of five new runs miss the target: the median run missed it, slower than any that reached it
  const CompareReport missed =
      compare_results(base, accuracy_folder(dir + "/missed5", {140, -1, -1, 150, -1}), {});
  EXPECT_TRUE(std::isinf(missed.accuracy[0].new_seconds));
  EXPECT_EQ(missed.accuracy[0].new_reached, 2);
  EXPECT_EQ(missed.accuracy[0].verdict, Verdict::regression);
  r = run_compare({base, dir + "/missed5", "--json"});
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["time_to_accuracy"][0]["new_seconds"].is_null());
  EXPECT_EQ(doc["time_to_accuracy"][0]["verdict"], "regression");
  EXPECT_EQ(r.exit_code, 1);
  r = run_compare({base, dir + "/missed5"});
  EXPECT_NE(r.out.find("not reached (2/5)"), std::string::npos) << r.out;

  // most runs of both sides missed: the direction comes from the ranks, not the medians
  const std::vector<double> some = {100, 101, 102, 103, -1, -1, -1, -1, -1, -1};
  const std::vector<double> none(10, -1);
  const CompareReport worse =
      compare_results(accuracy_folder(dir + "/base_some", some), accuracy_folder(dir + "/new_none", none), {});
  EXPECT_TRUE(std::isinf(worse.accuracy[0].base_seconds));
  EXPECT_TRUE(std::isnan(worse.accuracy[0].change));
  EXPECT_LT(worse.accuracy[0].p_value, 0.05);
  EXPECT_EQ(worse.accuracy[0].verdict, Verdict::regression);
  EXPECT_EQ(compare_results(dir + "/new_none", dir + "/base_some", {}).accuracy[0].verdict, Verdict::faster);

  // another target is another configuration
  write_json(dir + "/other.json", [] {
    nlohmann::json d = convergence_doc(50);
    d["time_to_accuracy"]["target_top_1_accuracy"] = 0.8;
    return d;
  }());
  r = run_compare({base, dir + "/other.json"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("nothing to compare"), std::string::npos) << r.err;
}

// results.csv rows of convergence runs without their JSON: the target and the time from the row,
// an empty time meaning not reached; rows without a target and JSONs without one are skipped in
// a folder, and a lone one is refused.
TEST(Compare, TimeToAccuracyFromCsvRowsAndRunsWithoutATarget) {
  const std::string dir = fresh_dir("compare_accuracy_csv");
  auto row = [](const std::string& seconds) {
    Settings s = settings_with({{"model", "resnet20_fmnist"}, {"dataset", "fashion_mnist"}, {"synthetic", "false"},
                                {"mode", "convergence"}, {"batch_size_per_rank", "128"}});
    s["target_top_1_accuracy"] = "0.9";
    s["time_to_accuracy_sec"] = seconds;
    s["epochs_to_accuracy"] = seconds.empty() ? "" : "10";
    s["images_to_accuracy"] = seconds.empty() ? "" : "600000";
    return s;
  };
  for (const char* side : {"a", "b"}) {
    make_folders(dir + "/" + side);
    for (int i = 0; i < 4; ++i) {  // four runs a side, each its own time
      Settings s = row(side[0] == 'a' ? std::to_string(100 + i) : (i < 3 ? "" : "130"));
      s["time_utc"] = "2026-11-27T18:00:0" + std::to_string(i) + "Z";
      csv_append(dir + "/" + side + "/results.csv", s);
    }
    Settings no_target = row("");
    no_target["target_top_1_accuracy"] = "";
    csv_append(dir + "/" + side + "/results.csv", no_target);
    nlohmann::json plain = convergence_doc(1);
    plain.erase("time_to_accuracy");
    write_json(dir + "/" + side + "/plain.json", plain);
  }
  const CompareReport r = compare_results(dir + "/a", dir + "/b", {});
  ASSERT_EQ(r.accuracy.size(), 1u);
  EXPECT_EQ(r.accuracy[0].base_runs, 4);
  EXPECT_EQ(r.accuracy[0].new_reached, 1);
  EXPECT_DOUBLE_EQ(r.accuracy[0].base_seconds, 101.5);
  EXPECT_EQ(r.accuracy[0].verdict, Verdict::regression);
  EXPECT_EQ(r.skipped.size(), 2u);
  const CommandRun lone = run_compare({dir + "/a/plain.json", dir + "/a/plain.json"});
  EXPECT_EQ(lone.exit_code, 2);
  EXPECT_EQ(lone.err, "cnnbench compare: " + dir + "/a/plain.json: a convergence result without a target accuracy, "
                      "resumed from a checkpoint that did not hold the training time, timed on other rank counts "
                      "than its own, or evaluated on a test set a resume changed: no time to accuracy to compare\n");
  // a resumed run whose seconds leave out the epochs before the resume is skipped the same way
  nlohmann::json resumed = convergence_doc(50);
  resumed["time_to_accuracy"]["clock_complete"] = false;
  write_json(dir + "/a/resumed.json", resumed);
  EXPECT_EQ(compare_results(dir + "/a", dir + "/b", {}).skipped.size(), 3u);
  // and so is one whose seconds cover training on another rank count (a run resumed on 1 rank
  // after training on 2); one timed on its own rank count alone is compared
  nlohmann::json moved = convergence_doc(50);
  moved["time_to_accuracy"]["ranks"] = {moved["run"]["ranks"].get<int>() + 1, moved["run"]["ranks"]};
  write_json(dir + "/a/moved.json", moved);
  nlohmann::json stayed = convergence_doc(60);
  stayed["time_to_accuracy"]["ranks"] = {stayed["run"]["ranks"]};
  write_json(dir + "/a/stayed.json", stayed);
  const CompareReport with_moved = compare_results(dir + "/a", dir + "/b", {});
  EXPECT_EQ(with_moved.skipped.size(), 4u);
  ASSERT_EQ(with_moved.accuracy.size(), 1u);
  EXPECT_EQ(with_moved.accuracy[0].base_runs, 5);
  // and so is one whose evaluations before a resume were on another test set
  nlohmann::json retested = convergence_doc(40);
  retested["time_to_accuracy"]["evaluated_from_epoch"] = 3;
  write_json(dir + "/a/retested.json", retested);
  nlohmann::json from_first = convergence_doc(70);
  from_first["time_to_accuracy"]["evaluated_from_epoch"] = 1;
  write_json(dir + "/a/from_first.json", from_first);
  const CompareReport with_retested = compare_results(dir + "/a", dir + "/b", {});
  EXPECT_EQ(with_retested.skipped.size(), 5u);
  ASSERT_EQ(with_retested.accuracy.size(), 1u);
  EXPECT_EQ(with_retested.accuracy[0].base_runs, 6);
  retested["time_to_accuracy"]["evaluated_from_epoch"] = "3";
  write_json(dir + "/a/retested.json", retested);
  EXPECT_EQ(run_compare({dir + "/a", dir + "/b"}).err,
            "cnnbench compare: " + dir + "/a/retested.json: time_to_accuracy.evaluated_from_epoch is not an epoch\n");
  std::filesystem::remove(dir + "/a/retested.json");
  moved["time_to_accuracy"]["ranks"] = "1, 2";
  write_json(dir + "/a/moved.json", moved);
  EXPECT_EQ(run_compare({dir + "/a", dir + "/b"}).err,
            "cnnbench compare: " + dir + "/a/moved.json: time_to_accuracy.ranks is not a list of rank counts\n");
  std::filesystem::remove(dir + "/a/moved.json");
  Settings bad = row("-5");
  csv_append(dir + "/bad.csv", bad);
  EXPECT_EQ(run_compare({dir + "/bad.csv", dir + "/bad.csv"}).err,
            "cnnbench compare: " + dir + "/bad.csv:2: time_to_accuracy_sec '-5' is not a number from 0 to 1e+12\n");
}

// --baseline reads a result JSON the same way: a regular file within the cap.
TEST(Compare, BaselineIsReadBounded) {
  const std::string dir = fresh_dir("compare_baseline_file");
  const std::string fifo = dir + "/fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(testing::error_of([&] { read_baseline(fifo); }), "--baseline: " + fifo + ": is a pipe, not a regular file");
  EXPECT_EQ(testing::error_of([] { read_baseline("/dev/zero"); }),
            "--baseline: /dev/zero: is a device, not a regular file");
  nlohmann::json doc = result_doc(settings_with(), step_times(0.1, 1));
  doc["summary"]["images_per_sec"] = 320;
  EXPECT_EQ(read_baseline(write_json(dir + "/good.json", doc)).images_per_sec, 320);
}

// --baseline checks the numbers it takes: whole ranks in range (1e300 was converted to int out
// of range, undefined behaviour), epochs' seconds and speeds finite and not negative.
TEST(Compare, BaselineNumbersAreChecked) {
  const std::string dir = fresh_dir("compare_baseline_numbers");
  nlohmann::json doc = result_doc(settings_with(), step_times(0.1, 1));
  doc["run"]["ranks"] = 1e300;
  const std::string ranks = write_json(dir + "/ranks.json", doc);
  EXPECT_EQ(testing::error_of([&] { read_baseline(ranks); }),
            "--baseline: " + ranks + ": run.ranks is not a whole number from 1 to 16777216");
  doc = result_doc(settings_with(), step_times(0.1, 1));
  doc["summary"]["images_per_sec"] = 1e300;
  const std::string speed = write_json(dir + "/speed.json", doc);
  EXPECT_EQ(testing::error_of([&] { read_baseline(speed); }),
            "--baseline: " + speed + ": summary.images_per_sec is not a number from 0 to 1.67772e+16 images/sec");
  nlohmann::json convergence = convergence_doc(100);
  convergence.erase("summary");
  convergence["epochs"] = {{{"seconds", 10}, {"images_per_sec", 100}}, {{"seconds", -5}, {"images_per_sec", -20}}};
  const std::string epochs = write_json(dir + "/epochs.json", convergence);
  EXPECT_EQ(testing::error_of([&] { read_baseline(epochs); }),
            "--baseline: " + epochs + ": epochs[].seconds is not a number from 0 to 1e+12");
  convergence["epochs"] = {{{"seconds", 10}, {"images_per_sec", 100}}, {{"seconds", 30}, {"images_per_sec", 200}}};
  EXPECT_DOUBLE_EQ(read_baseline(write_json(dir + "/fine.json", convergence)).images_per_sec, 175);
}

TEST(Compare, BadUsageIsRefused) {
  const std::vector<std::vector<std::string>> bad = {
      {"only_one.json"}, {"a", "b", "c"},   {"a", "b", "--tolerance=-1"},      {"a", "b", "--tolerance=abc"},
      {"a", "b", "--tolerance"}, {"a", "b", "--speed"}, {"a", "b", "--check_only=maybe"}};
  for (const auto& args : bad) {
    const CommandRun r = run_compare(args);
    EXPECT_EQ(r.exit_code, 2) << args.back();
    EXPECT_EQ(r.err.rfind("cnnbench compare: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const CommandRun help = run_compare({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--tolerance"), std::string::npos);
}

}  // namespace
}  // namespace cnnbench
