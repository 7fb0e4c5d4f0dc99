#include "harness/compare/baseline.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "harness/cli/bounded_file.h"
#include "harness/cli/limits.h"  // max_global_batch
#include "harness/cli/printable.h"
#include "harness/compare/result_numbers.h"
#include "harness/compare/result_reader.h"  // max_result_json_bytes, ResultReadError

namespace cnnbench {

BaselineSpeed read_baseline(const std::string& path) {
  std::string text;
  try {  // a regular file of at most a result JSON's size: a pipe or /dev/zero is refused unread
    text = read_bounded_file(path, max_result_json_bytes, "a cnnbench result");
  } catch (const BoundedFileError& e) {
    throw std::runtime_error(std::string("--baseline: ") + e.what());
  }
  const std::string where = "--baseline: " + printable(path, 4096);
  // a number the baseline gives, within the range a result can hold (finite: nan, inf and
  // 1e300 would make the efficiency meaningless)
  auto number = [&](const nlohmann::json& v, const char* name, const NumberRange& range) {
    try {
      return json_number(v, where, name, range);
    } catch (const ResultReadError& e) {
      throw std::runtime_error(e.what());
    }
  };
  BaselineSpeed b;
  try {
    // the per-step arrays are never read here: dropped as they are parsed
    const auto doc = nlohmann::json::parse(text, [](int depth, nlohmann::json::parse_event_t event, nlohmann::json& key) {
      return !(depth == 1 && event == nlohmann::json::parse_event_t::key && key == "steps");
    });
    for (const char* key : {"model", "dataset", "synthetic", "mode", "backend", "precision", "batch_size_per_rank"})
      if (const auto v = doc.at("run").find(key); v != doc.at("run").end())
        b.workload[key] = v->is_string() ? v->get<std::string>() : v->dump();
    // another head, fusion or input layout is another workload too (absent: not compared)
    if (const auto m = doc.find("model"); m != doc.end() && m->is_object() && m->contains("classes"))
      b.workload["classes"] = m->at("classes").dump();
    if (const auto c = doc.find("config"); c != doc.end() && c->is_object()) {
      if (const auto v = c->find("fuse_ops"); v != c->end() && v->is_string()) b.workload["fuse_ops"] = *v;
      const bool synthetic = b.workload.count("synthetic") && b.workload["synthetic"] == "true";
      if (const auto v = c->find("data_format"); synthetic && v != c->end() && v->is_string())
        b.workload["data_format"] = *v;
    }
    b.ranks = static_cast<int>(number(doc.at("run").at("ranks"), "run.ranks",
                                      {1, static_cast<double>(max_global_batch), true, "a whole number", ""}));
    if (const auto summary = doc.find("summary"); summary != doc.end()) {
      b.images_per_sec = number(summary->at("images_per_sec"), "summary.images_per_sec", speed_or_zero_range);
    } else {  // a convergence result: the images its epochs trained over their seconds
      double images = 0, seconds = 0;
      for (const auto& e : doc.at("epochs")) {
        const double epoch_seconds = number(e.at("seconds"), "epochs[].seconds", accuracy_seconds_range);
        images += number(e.at("images_per_sec"), "epochs[].images_per_sec", speed_or_zero_range) * epoch_seconds;
        seconds += epoch_seconds;
      }
      if (seconds > 0) b.images_per_sec = images / seconds;
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(where + " is not a cnnbench JSON result: " + e.what());
  }
  if (!(b.images_per_sec > 0) || !std::isfinite(b.images_per_sec))
    throw std::runtime_error(where + " holds no speed to compare with");
  return b;
}

std::map<std::string, std::string> baseline_workload(const RunSettings& s, const std::string& mode,
                                                     const std::string& backend, int64_t classes, bool fused,
                                                     const std::string& data_format) {
  std::map<std::string, std::string> w = {{"model", s.model.name},
                                          {"dataset", s.dataset},
                                          {"synthetic", s.synthetic ? "true" : "false"},
                                          {"mode", mode},
                                          {"backend", backend},
                                          {"precision", dtype_name(s.precision)},
                                          {"batch_size_per_rank", std::to_string(s.batch_size)},
                                          {"classes", std::to_string(classes)},
                                          {"fuse_ops", fused ? "true" : "false"}};
  if (s.synthetic) w["data_format"] = data_format;
  return w;
}

void check_baseline_workload(const BaselineSpeed& b, const std::string& path,
                             const std::map<std::string, std::string>& ours) {
  std::string differs;
  for (const auto& [key, value] : ours)
    if (const auto theirs = b.workload.find(key); theirs != b.workload.end() && theirs->second != value)
      differs += (differs.empty() ? "" : ", ") + key + " " + printable(theirs->second) + " (this run: " + value + ")";
  if (!differs.empty())
    throw std::runtime_error("--baseline: " + printable(path, 4096) + " ran another workload (" + differs +
                             "): a scaling efficiency compares one workload on other numbers of ranks");
}

void apply_baseline(RunSummary& s, const std::string& path, int ranks) {
  const BaselineSpeed b = read_baseline(path);
  s.baseline_images_per_sec = b.images_per_sec;
  s.baseline_ranks = b.ranks;
  s.scaling_efficiency = b.efficiency(s.images_per_sec, ranks);
}

}  // namespace cnnbench
