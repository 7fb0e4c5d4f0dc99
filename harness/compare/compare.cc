#include "harness/compare/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <map>
#include <set>

#include "harness/compare/result_numbers.h"
#include "harness/report/stats.h"
#include "models/model_zoo.h"

namespace cnnbench {
namespace {

// Runs grouped by configuration, in the order their configurations first appear, and each
// configuration's place among them (a results.csv of thousands of configurations took seconds
// searched one by one).
template <typename Run>
struct Groups {
  std::vector<std::pair<RunConfiguration, std::vector<Run>>> in_order;
  std::map<RunConfiguration, size_t> index;
  const std::vector<Run>* find(const RunConfiguration& config) const {
    const auto it = index.find(config);
    return it == index.end() ? nullptr : &in_order[it->second].second;
  }
};
template <typename Run>
Groups<Run> group_by_configuration(const std::vector<Run>& runs) {
  Groups<Run> groups;
  for (const Run& run : runs) {
    const auto [it, added] = groups.index.emplace(run.config, groups.in_order.size());
    if (added) groups.in_order.push_back({run.config, {}});
    groups.in_order[it->second].second.push_back(run);
  }
  return groups;
}

// Each configuration both sides have, compared (`compare`) into `out`, regressions counted; the
// others listed by `label` as only in base or only in new.
template <typename Run, typename Compared, typename CompareFn, typename LabelFn>
void match_configurations(const std::vector<Run>& base_runs, const std::vector<Run>& new_runs, CompareFn compare,
                          LabelFn label, std::vector<Compared>& out, CompareReport& report) {
  const Groups<Run> base = group_by_configuration(base_runs), next = group_by_configuration(new_runs);
  for (const auto& [config, runs] : base.in_order) {
    const std::vector<Run>* match = next.find(config);
    if (!match) {
      report.only_in_base.push_back(label(config));
      continue;
    }
    out.push_back(compare(runs, *match));
    if (out.back().verdict == Verdict::regression) ++report.regressions;
  }
  for (const auto& [config, runs] : next.in_order)
    if (!base.find(config)) report.only_in_new.push_back(label(config));
}

// Every run's images/sec of one side, in file order.
std::vector<double> run_speeds(const std::vector<RunSpeeds>& runs) {
  std::vector<double> all;
  for (const RunSpeeds& r : runs) all.insert(all.end(), r.run_speeds.begin(), r.run_speeds.end());
  return all;
}

// "warm-up steps: base 2, new 0" for each context setting (RunSpeeds::context) whose values on
// one side are not the other's; a setting some run does not record is left out.
std::vector<std::string> context_differences(const std::vector<RunSpeeds>& base, const std::vector<RunSpeeds>& next) {
  std::map<std::string, std::array<std::set<std::string>, 2>> values;
  std::map<std::string, int> recorded;  // by how many runs of both sides
  const std::vector<RunSpeeds>* sides[2] = {&base, &next};
  for (int side = 0; side < 2; ++side)
    for (const RunSpeeds& r : *sides[side])
      for (const auto& [name, value] : r.context) {
        values[name][side].insert(value);
        ++recorded[name];
      }
  std::vector<std::string> out;
  const int runs = static_cast<int>(base.size() + next.size());
  for (const auto& [name, sets] : values) {
    if (recorded[name] != runs || sets[0] == sets[1]) continue;
    // a line of bounded width whatever the files held: two values of 32 characters a side at most
    auto listed = [](const std::set<std::string>& set) {
      std::string text;
      size_t shown = 0;
      for (const std::string& v : set) {
        if (shown++ == 2) return text + fmt::format(" (+{} more)", set.size() - 2);
        text += (text.empty() ? "" : " / ") + (v.size() > 32 ? v.substr(0, 29) + "..." : v);
      }
      return text;
    };
    out.push_back(fmt::format("{}: base {}, new {}", name, listed(sets[0]), listed(sets[1])));
  }
  return out;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : separator) + s;
  return out;
}

std::string percent(double fraction) { return fmt::format("{:g}%", 100 * fraction); }

std::string p_text(double p) { return p < 0.001 ? "<0.001" : fmt::format("{:.3f}", p); }

std::string test_text(const ComparedConfiguration& c) {
  const char* name = c.test.kind == RunTest::welch             ? "Welch t"
                     : c.test.kind == RunTest::one_side_spread ? "t, one side's spread"
                                                               : "no test";
  return fmt::format("{}, {}+{} runs", name, c.base_runs, c.new_runs);
}

std::string plural(int n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::faster: return "faster";
    case Verdict::slower: return "slower";
    case Verdict::regression: return "regression";
    case Verdict::no_change: break;
  }
  return "no significant change";
}

std::string configuration_label(const RunConfiguration& c) {
  const int ranks = std::atoi(c["ranks"].c_str()), threads = std::atoi(c["threads_per_rank"].c_str());
  std::string label = fmt::format("{} b{} {}, {} rank{} x {} thread{}", c["model"], c["batch_size_per_rank"],
                                  c["precision"], ranks, ranks == 1 ? "" : "s", threads, threads == 1 ? "" : "s");
  // then only what differs from the usual, so every configuration still reads differently
  const auto model = find_model(c["model"]);
  if (!model || model->dataset != c["dataset"]) label += ", " + c["dataset"];
  if (c["synthetic"] != "true") label += ", real data";
  if (c["mode"] != "training") label += ", " + c["mode"];
  if (c["backend"] != "onednn") label += ", " + c["backend"] + " backend";
  if (c["hosts"] != "1") label += ", " + c["hosts"] + " hosts";
  if (c["allreduce"] != "none") label += ", " + c["allreduce"];
  if (c["variable_update"] != "horovod") label += ", " + c["variable_update"];
  if (c["fusion_threshold_mb"] != "16") label += ", " + c["fusion_threshold_mb"] + " MB buckets";
  if (c["compression"] != "none") label += ", " + c["compression"] + " on the wire";
  if (c["hierarchical_allreduce"] == "true") label += ", hierarchical";
  if (c["overlap_forward"] == "true") label += ", updates in the next forward";
  if (!c["input_format"].empty() && c["input_format"] != "in-memory") label += ", " + c["input_format"] + " input";
  if (c["first_layers_bucket_mb"] != "0")
    label += ", first layers' bucket " + c["first_layers_bucket_mb"] + " MB";
  for (const std::string& flag : speed_flags())  // "--fuse_ops=false"
    if (!c[flag].empty() && c[flag] != flag_default(flag)) label += ", --" + flag + "=" + c[flag];
  return label;
}

ComparedConfiguration compare_speeds(const std::vector<RunSpeeds>& base, const std::vector<RunSpeeds>& next,
                                     double tolerance) {
  ComparedConfiguration c;
  c.config = base.front().config;
  c.label = configuration_label(c.config);
  c.flags_assumed = any_flags_assumed(base, next);
  const std::vector<double> a = run_speeds(base), b = run_speeds(next);
  c.base_runs = static_cast<int>(a.size());
  c.new_runs = static_cast<int>(b.size());
  c.test = test_run_speeds(a, b);
  c.base_speed = c.test.base_mean;
  c.new_speed = c.test.new_mean;
  c.change = c.test.ratio - 1;
  c.differences = context_differences(base, next);
  const bool significant = c.test.kind != RunTest::none && c.test.p_value < significance_level;
  if (c.change < -tolerance && (significant || c.test.kind == RunTest::none))
    c.verdict = Verdict::regression;  // with one run a side, the tolerance alone decides
  else if (significant)
    c.verdict = c.change >= 0 ? Verdict::faster : Verdict::slower;
  return c;
}

CompareReport compare_results(const std::string& base, const std::string& next, const CompareOptions& options) {
  CompareReport report;
  report.base_path = base;
  report.new_path = next;
  report.options = options;
  const ResultSet base_set = read_results(base), new_set = read_results(next);
  report.base_runs = static_cast<int>(base_set.runs.size() + base_set.accuracy_runs.size());
  report.new_runs = static_cast<int>(new_set.runs.size() + new_set.accuracy_runs.size());
  report.skipped = base_set.skipped;
  report.skipped.insert(report.skipped.end(), new_set.skipped.begin(), new_set.skipped.end());
  const double tolerance = options.tolerance;
  match_configurations(
      base_set.runs, new_set.runs,
      [&](const auto& a, const auto& b) { return compare_speeds(a, b, tolerance); }, configuration_label,
      report.matched, report);
  // time-to-accuracy runs: matched the same way, their target included
  match_configurations(
      base_set.accuracy_runs, new_set.accuracy_runs,
      [&](const auto& a, const auto& b) { return compare_time_to_accuracy(a, b, tolerance); }, accuracy_label,
      report.accuracy, report);
  if (report.matched.empty() && report.accuracy.empty())
    throw ResultReadError(fmt::format("nothing to compare: no configuration of {} ({}) is in {} ({})", base,
                                      join(report.only_in_base, "; "), next, join(report.only_in_new, "; ")));
  return report;
}

namespace {

std::string speed_verdict_text(const ComparedConfiguration& c) {
  if (c.test.kind != RunTest::none) return verdict_name(c.verdict);
  if (c.verdict == Verdict::regression) return "regression (by the tolerance alone)";
  return "no test (1 run a side)";
}

}  // namespace

std::string format_report(const CompareReport& r) {
  std::string out = fmt::format("cnnbench compare: base {} ({}), new {} ({})\n", r.base_path,
                                plural(r.base_runs, "run"), r.new_path, plural(r.new_runs, "run"));
  out += fmt::format("regression: slower by more than {} and significant over the runs (p < {:g}); with 1 run a "
                     "side, slower by more than {}\n\n",
                     percent(r.options.tolerance), significance_level, percent(r.options.tolerance));
  if (!r.matched.empty()) {
    size_t width = std::string("configuration").size(), test_width = 4;
    for (const ComparedConfiguration& c : r.matched) {
      width = std::max(width, c.label.size());
      test_width = std::max(test_width, test_text(c).size());
    }
    out += fmt::format("{:<{}}  {:>10}  {:>10}  {:>7}  {:>7}  {:<12}  {:<{}}  {}\n", "configuration", width,
                       "base img/s", "new img/s", "change", "p-value", "new/base 95%", "test", test_width, "verdict");
    for (const ComparedConfiguration& c : r.matched) {
      // every number in a cell of bounded width, whatever the files held (1e16 img/s: 1e+16)
      const std::string interval = c.test.kind != RunTest::none ? number_text(c.test.ratio_ci.low, 3, 9) + "-" +
                                                                       number_text(c.test.ratio_ci.high, 3, 9)
                                                                 : "-";
      out += fmt::format("{:<{}}  {:>10}  {:>10}  {:>7}  {:>7}  {:<12}  {:<{}}  {}\n", c.label, width,
                         number_text(c.base_speed, 2, 10), number_text(c.new_speed, 2, 10), change_text(c.change),
                         c.test.kind != RunTest::none ? p_text(c.test.p_value) : "-", interval, test_text(c),
                         test_width, speed_verdict_text(c));
    }
    out += "img/s: a run's own figure (all its images over all its time; each repeat of --repeats a run), the "
           "geometric mean of a side's runs\n"
           "test: over the runs' log speeds, the run being the unit; with 1 run a side, none (the tolerance alone)\n";
  }
  if (!r.matched.empty() && !r.accuracy.empty()) out += "\n";
  out += format_accuracy_rows(r.accuracy);
  for (const ComparedConfiguration& c : r.matched)
    if (c.flags_assumed) out += "flags assumed: " + c.label + flags_assumed_note;
  for (const ComparedConfiguration& c : r.matched)
    for (const std::string& d : c.differences) out += "differs: " + c.label + ": " + d + "\n";
  for (const ComparedAccuracy& c : r.accuracy)
    if (c.flags_assumed) out += "flags assumed: " + c.label + flags_assumed_note;
  for (const std::string& label : r.only_in_base) out += "only in base (not compared): " + label + "\n";
  for (const std::string& label : r.only_in_new) out += "only in new (not compared): " + label + "\n";
  for (const std::string& file : r.skipped) out += "skipped, not a training result: " + file + "\n";
  if (r.regressions == 0)
    out += fmt::format("no regression ({} compared)\n",
                       plural(static_cast<int>(r.matched.size() + r.accuracy.size()), "configuration"));
  else if (r.options.check_only)
    out += fmt::format("{} reported, not gated (--check_only)\n", plural(r.regressions, "regression"));
  else
    out += fmt::format("REGRESSION: {} slower than the base by more than {}\n",
                       plural(r.regressions, "configuration"), percent(r.options.tolerance));
  if (r.incomplete())
    out += fmt::format("INCOMPLETE: {} of the base not in new (only in base, above); --allow_missing accepts that\n",
                       plural(static_cast<int>(r.only_in_base.size()), "configuration"));
  return out;
}

nlohmann::json report_json(const CompareReport& r) {
  nlohmann::json matched = nlohmann::json::array();
  for (const ComparedConfiguration& c : r.matched) {
    nlohmann::json config = nlohmann::json::object();
    for (const auto& [name, value] : c.config.values) config[name] = value;
    nlohmann::json row = {{"label", c.label},
                          {"config", config},
                          {"base_runs", c.base_runs},
                          {"new_runs", c.new_runs},
                          {"test", c.test.kind == RunTest::welch             ? "welch"
                                   : c.test.kind == RunTest::one_side_spread ? "t-one-side-spread"
                                                                             : "none"},
                          {"base_images_per_sec", c.base_speed},
                          {"new_images_per_sec", c.new_speed},
                          {"change", c.change},
                          {"flags_assumed", c.flags_assumed},
                          {"differences", c.differences},
                          {"verdict", speed_verdict_text(c)}};
    if (c.test.kind != RunTest::none) {
      row["p_value"] = c.test.p_value;
      row["degrees_of_freedom"] = c.test.degrees_of_freedom;
      row["ratio_ci95"] = {c.test.ratio_ci.low, c.test.ratio_ci.high};
    }
    matched.push_back(row);
  }
  nlohmann::json accuracy = nlohmann::json::array();
  for (const ComparedAccuracy& c : r.accuracy) accuracy.push_back(accuracy_json(c));
  return {{"schema", "cnnbench.compare/2"},
          {"base", r.base_path},
          {"new", r.new_path},
          {"tolerance", r.options.tolerance},
          {"check_only", r.options.check_only},
          {"allow_missing", r.options.allow_missing},
          {"matched", matched},
          {"time_to_accuracy", accuracy},
          {"only_in_base", r.only_in_base},
          {"only_in_new", r.only_in_new},
          {"skipped", r.skipped},
          {"regressions", r.regressions},
          {"exit_code", r.exit_code()}};
}

std::string compare_usage() {
  return "usage: cnnbench compare BASE NEW [--tolerance=PCT] [--check_only] [--allow_missing] [--json]\n"
         "  BASE, NEW      a result JSON, a results.csv, or a folder of them\n"
         "  --tolerance    a regression is slower than BASE by more than PCT percent, and significant over the runs\n"
         "                 (with 1 run a side: beyond PCT alone) [5]\n"
         "  --check_only   check the files and the matching; report speed changes without failing on them\n"
         "  --allow_missing  a configuration of BASE that NEW has no run of is listed, not failed on\n"
         "  --json         print the report as JSON\n"
         "exit code: 0 no regression, 1 a regression, 2 bad input or nothing matched,\n"
         "           3 a configuration of BASE has no run in NEW (without --allow_missing)\n";
}

int compare_command(const std::vector<std::string>& args, FILE* out, FILE* err) {
  auto refuse = [&](const std::string& message) {
    fmt::print(err, "cnnbench compare: {}\n", message);
    std::fflush(err);
    return 2;
  };
  CompareOptions options;
  std::vector<std::string> paths;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(compare_usage().c_str(), out);
      return 0;
    }
    if (arg.rfind("--", 0) != 0) {
      paths.push_back(arg);
      continue;
    }
    const auto eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::string value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (name == "tolerance") {
      if (eq == std::string::npos) {
        if (i + 1 == args.size()) return refuse("--tolerance needs a value (a percentage)");
        value = args[++i];
      }
      std::string number = value;
      if (!number.empty() && number.back() == '%') number.pop_back();
      char* end = nullptr;
      const double pct = std::strtod(number.c_str(), &end);
      if (number.empty() || *end != '\0' || !(pct >= 0 && pct < 100))
        return refuse("--tolerance: '" + value + "' is not a percentage from 0 to 100");
      options.tolerance = pct / 100;
      // a fraction where a percentage is asked (0.05 for 5%) would gate on 0.05%: said, not guessed
      if (pct > 0 && pct < 1 && value.back() != '%')
        fmt::print(err, "cnnbench compare: note: --tolerance={} is {}% (a percentage: 5% is --tolerance=5)\n", value,
                   value);
    } else if (name == "check_only" || name == "json" || name == "allow_missing") {
      if (value != "" && value != "true" && value != "false")
        return refuse("--" + name + ": '" + value + "' is not true or false");
      (name == "json" ? options.json : name == "allow_missing" ? options.allow_missing : options.check_only) =
          value != "false";
    } else {
      return refuse("unknown flag " + arg + " (compare takes --tolerance, --check_only, --allow_missing, --json)");
    }
  }
  if (paths.size() != 2)
    return refuse(fmt::format("expected BASE and NEW, got {} path{}; usage: cnnbench compare BASE NEW "
                              "[--tolerance=PCT] [--check_only] [--allow_missing] [--json]",
                              paths.size(), paths.size() == 1 ? "" : "s"));
  CompareReport report;
  try {
    report = compare_results(paths[0], paths[1], options);
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  if (options.json)
    // a setting that is not UTF-8 (a Latin-1 path) is written as U+FFFD, never lost to an exception
    fmt::print(out, "{}\n", report_json(report).dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
  else
    std::fputs(format_report(report).c_str(), out);
  std::fflush(out);
  return report.exit_code();
}

}  // namespace cnnbench
