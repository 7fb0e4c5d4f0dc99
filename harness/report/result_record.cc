#include "harness/report/result_record.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fmt/format.h>
#include <stdexcept>

#include "harness/report/csv.h"
#include "harness/report/output_paths.h"
#include "harness/report/result_fields.h"
#include "harness/report/result_files.h"

namespace cnnbench {

namespace {

// A share measured (0 to 1), or null where it was not (negative: the kernel gave no figure).
nlohmann::json share_or_null(double fraction) { return fraction >= 0 ? nlohmann::json(fraction) : nullptr; }

}  // namespace

// A value that was not measured is null, never 0: scaling without --baseline, loss scaling on a
// run without it, shares the machine did not give (results.csv leaves the cell empty).
nlohmann::json result_json(const ResultInputs& in) {
  const RunSettings& s = in.settings;
  const RunSummary& m = in.summary;
  const bool with_baseline = m.baseline_images_per_sec > 0, scaled = m.loss_scale > 0;
  nlohmann::json config = nlohmann::json::object();
  for (const auto& [key, value] : config_values(in.config)) config[key] = value;
  nlohmann::json steps = {{"time_sec", nlohmann::json::array()},     {"forward_sec", nlohmann::json::array()},
                          {"backward_sec", nlohmann::json::array()}, {"update_sec", nlohmann::json::array()},
                          {"comm_sec", nlohmann::json::array()},     {"exposed_comm_sec", nlohmann::json::array()},
                          {"comm_hidden_by_forward_sec", nlohmann::json::array()},
                          {"loss", nlohmann::json::array()},         {"top1_correct", nlohmann::json::array()},
                          {"learning_rate", nlohmann::json::array()}};
  for (const StepRecord& r : in.steps) {
    steps["time_sec"].push_back(r.time_sec);
    steps["forward_sec"].push_back(r.forward_sec);
    steps["backward_sec"].push_back(r.backward_sec);
    steps["update_sec"].push_back(r.update_sec);
    steps["comm_sec"].push_back(r.comm_sec);
    steps["exposed_comm_sec"].push_back(r.exposed_sec);
    steps["comm_hidden_by_forward_sec"].push_back(r.hidden_by_forward_sec);
    steps["loss"].push_back(r.loss);
    steps["top1_correct"].push_back(r.top1_correct);
    steps["learning_rate"].push_back(r.learning_rate);
  }
  nlohmann::json doc = {
      {"schema", "cnnbench.result/1"},
      {"context", to_json(in.context)},
      {"config", config},
      {"model", model_fields(s, in.graph)},
      {"run", run_fields(in.config, s,
                         {s.training ? "training" : "forward-only", in.backend, in.allreduce, in.hosts, s.timed_steps,
                          m.overlap_forward})},
      {"steps", steps},
      {"summary",
       {{"images_per_sec", m.images_per_sec},
        {"images_per_sec_mean", m.speed.mean},
        {"images_per_sec_stderr", m.speed.stderr_},
        {"images_per_sec_jitter", m.speed.jitter},
        {"elapsed_sec", m.elapsed_sec},
        {"step_time_mean_sec", m.step_mean_sec},
        {"step_time_p50_sec", m.step_p50_sec},
        {"step_time_p90_sec", m.step_p90_sec},
        {"step_time_p99_sec", m.step_p99_sec},
        {"forward_mean_sec", m.forward_mean_sec},
        {"backward_mean_sec", m.backward_mean_sec},
        {"update_mean_sec", m.update_mean_sec},
        {"achieved_gflops", m.achieved_gflops},
        {"peak_gflops_per_rank", m.peak.gflops},
        {"peak_isa", m.peak.isa},
        {"fraction_of_peak", m.peak.supported && m.fraction_of_peak >= 0 ? nlohmann::json(m.fraction_of_peak) : nullptr},
        {"peak_rss_bytes", m.peak_rss_bytes},
        {"working_memory_bytes", m.working_memory_bytes},
        {"unshared_working_memory_bytes", m.unshared_working_memory_bytes},
        {"peak_device_memory_bytes", m.peak_device_memory_bytes > 0 ? nlohmann::json(m.peak_device_memory_bytes) : nullptr},
        {"final_loss", m.final_loss},
        {"comm_mean_sec", m.comm_mean_sec},
        {"exposed_comm_mean_sec", m.exposed_mean_sec},
        {"comm_hidden_by_forward_mean_sec", m.hidden_by_forward_mean_sec},
        {"rank_skew", m.rank_skew},
        {"baseline_images_per_sec", with_baseline ? nlohmann::json(m.baseline_images_per_sec) : nullptr},
        {"baseline_ranks", with_baseline ? nlohmann::json(m.baseline_ranks) : nullptr},
        {"scaling_efficiency", with_baseline ? nlohmann::json(m.scaling_efficiency) : nullptr},
        {"loss_scale", scaled ? nlohmann::json(m.loss_scale) : nullptr},
        {"skipped_steps", scaled ? nlohmann::json(m.skipped_steps) : nullptr},
        {"cpu_wait_fraction", share_or_null(m.cpu_wait_fraction)}}},
  };
  doc["model"]["gflop_per_image"] = m.gflop_per_image;
  doc["run"]["warmup_steps"] = s.warmup_steps;
  doc["run"]["learning_rate"] = s.schedule_base_rate;
  doc["run"]["forward_priority"] = m.overlap_forward && in.config.forward_priority;
  doc["run"]["buckets"] = m.buckets;
  doc["run"]["sent_mib_per_step"] = m.sent_mib_per_step;
  if (in.repeats) {
    doc["repeats"] = {{"count", in.repeats->images_per_sec.size()},
                      {"images_per_sec", in.repeats->images_per_sec},
                      {"cpu_wait_fraction", [&] {
                         nlohmann::json waits = nlohmann::json::array();
                         for (double w : in.repeats->cpu_wait_fraction) waits.push_back(share_or_null(w));
                         return waits;
                       }()},
                      {"reported_run", in.repeats->median_index + 1},
                      {"images_per_sec_median", in.repeats->median()},
                      {"images_per_sec_min", in.repeats->min()},
                      {"images_per_sec_max", in.repeats->max()},
                      {"spread", in.repeats->spread()}};
  }
  if (in.layers) {
    nlohmann::json layers = nlohmann::json::array();
    const double n = static_cast<double>(std::max<int64_t>(1, m.timed_steps));
    for (const Node& node : in.graph.nodes) {
      const LayerTime& t = (*in.layers)[node.id];
      if (t.forward_sec + t.backward_sec <= 0 && node.params.empty()) continue;
      // gradient sizes per layer let scripts/predict_scaling.py replay the bucket pipeline
      // (and their first dimension, 0 for a vector: the rows of PowerSGD's matrices)
      nlohmann::json gradients = nlohmann::json::array(), rows = nlohmann::json::array();
      for (const ParamSpec& p : node.params) {
        gradients.push_back(p.elements());
        rows.push_back(p.dims.size() > 1 ? p.dims[0] : 0);
      }
      layers.push_back({{"name", node.name},
                        {"op", op_name(node.kind)},
                        {"forward_sec_per_step", t.forward_sec / n},
                        {"backward_sec_per_step", t.backward_sec / n},
                        {"weight_grad_sec_per_step", t.weight_grad_sec / n},
                        {"forward_macs", node.forward_macs},
                        {"gradient_elements", gradients},
                        {"gradient_rows", rows}});
    }
    doc["layers"] = layers;
  }
  return doc;
}

std::string write_results(const ResultInputs& in) {
  std::string json_path = in.config.result_json;
  make_folders(in.config.benchmark_log_dir);
  // a setting that is not UTF-8 (a Latin-1 path) is written as U+FFFD, never lost to an exception
  const nlohmann::json doc = result_json(in);
  const std::string text = doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (json_path.empty()) {
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::gmtime(&now));
    // a new name, never another run's file (two runs in the same second: NAME-2.json)
    json_path = write_new_file(fmt::format("{}/{}_{}_{}r_{}_{}", in.config.benchmark_log_dir, in.settings.model.name,
                                           dtype_name(in.settings.precision), in.settings.ranks, stamp, getpid()),
                               ".json", text);
  } else {
    const auto slash = json_path.rfind('/');
    if (slash != std::string::npos) make_folders(json_path.substr(0, slash));
    check_replaceable_result(json_path, "--result_json");  // checked before the run too; a file may appear since
    write_file_atomically(json_path, text);
  }
  append_csv_row(in.config.benchmark_log_dir + "/results.csv", csv_header(), csv_row(doc, json_path));
  return json_path;
}

}  // namespace cnnbench
