#include "harness/report/result_fields.h"

#include <algorithm>
#include <map>
#include <set>

#include "harness/report/csv.h"

namespace cnnbench {

namespace {
constexpr unsigned T = kTrainingResult, C = kConvergenceResult, TC = T | C;
constexpr bool cfg = true;
}  // namespace

const std::vector<ResultField>& result_fields() {
  static const std::vector<ResultField> fields = {
      // results.csv's columns, in its order
      {"context.time_utc", "time_utc", "ISO 8601, UTC", TC},
      {"run.model", "model", "text", TC, cfg},
      {"run.dataset", "dataset", "text", TC, cfg},
      {"run.synthetic", "synthetic", "boolean", TC, cfg},
      {"run.mode", "mode", "text", TC, cfg},
      {"run.backend", "backend", "text", TC, cfg},
      {"run.precision", "precision", "text", TC, cfg},
      {"run.ranks", "ranks", "count", TC, cfg},
      {"run.hosts", "hosts", "count", TC, cfg},
      {"run.threads_per_rank", "threads_per_rank", "count", TC, cfg},
      {"run.batch_size_per_rank", "batch_size_per_rank", "images", TC, cfg},
      {"run.global_batch", "global_batch", "images", TC},
      {"run.timed_steps", "timed_steps", "steps", TC},
      {"run.variable_update", "variable_update", "text", TC, cfg},
      {"run.allreduce", "allreduce", "text", TC, cfg},
      {"run.fusion_threshold_mb", "fusion_threshold_mb", "MiB", TC, cfg},
      {"run.compression", "compression", "text", TC, cfg},
      {"summary.images_per_sec", "images_per_sec", "images/s", TC},
      {"summary.images_per_sec_mean", "images_per_sec_mean", "images/s", T},
      {"summary.images_per_sec_stderr", "images_per_sec_stderr", "images/s", T},
      {"summary.images_per_sec_jitter", "images_per_sec_jitter", "images/s", T},
      {"summary.step_time_p50_sec", "step_time_p50_sec", "s", T},
      {"summary.step_time_p90_sec", "step_time_p90_sec", "s", T},
      {"summary.step_time_p99_sec", "step_time_p99_sec", "s", T},
      {"summary.achieved_gflops", "achieved_gflops", "GFLOP/s", T},
      {"summary.fraction_of_peak", "fraction_of_peak", "fraction", T},
      {"summary.comm_mean_sec", "comm_mean_sec", "s", T},
      {"summary.exposed_comm_mean_sec", "exposed_comm_mean_sec", "s", T},
      {"summary.rank_skew", "rank_skew", "fraction", T},
      {"summary.scaling_efficiency", "scaling_efficiency", "fraction", TC},
      {"summary.peak_rss_bytes", "peak_rss_bytes", "bytes", TC},
      {"summary.final_loss", "final_loss", "nats", TC},
      {"context.host", "host", "text", TC},
      {"context.git_revision", "git_revision", "text", TC},
      {"", "json_file", "path", TC},
      {"summary.test_top1", "test_top1", "fraction", C},
      {"summary.target_top_1_accuracy", "target_top_1_accuracy", "fraction", C},
      {"summary.time_to_accuracy_sec", "time_to_accuracy_sec", "s", C},
      {"summary.epochs_to_accuracy", "epochs_to_accuracy", "epochs", C},
      {"summary.images_to_accuracy", "images_to_accuracy", "images", C},
      // JSON only
      {"schema", "", "text", TC},
      {"context.cpu_model", "", "text", TC},
      {"context.cpus", "", "count", TC},
      {"context.isa", "", "list of text", TC},
      {"context.cnnbench_version", "", "text", TC},
      {"context.compiler", "", "text", TC},
      {"context.library_versions.onednn", "", "text", TC},
      {"context.mpi_settings.*", "", "text", TC},
      {"config.*", "", "text", TC},
      {"model.name", "", "text", TC},
      {"model.network", "", "text", TC},
      {"model.classes", "", "count", TC},
      {"model.parameters", "", "count", TC},
      {"model.forward_gmacs_per_image", "", "GMAC", TC},
      {"model.gflop_per_image", "", "GFLOP", T},
      {"run.warmup_steps", "", "steps", T},
      {"run.learning_rate", "", "rate", T},
      {"run.first_layers_bucket_mb", "", "MiB", TC, cfg, "0"},
      {"run.hierarchical_allreduce", "", "boolean", TC, cfg, "false"},
      {"run.overlap_forward", "", "boolean", TC, cfg, "false"},
      {"run.forward_priority", "", "boolean", T},
      {"run.flag_notes", "", "list of text", TC},
      {"run.buckets", "", "count", T},
      {"run.sent_mib_per_step", "", "MiB", T},
      {"run.steps_per_epoch", "", "steps", C},
      {"run.first_epoch", "", "epoch", C},
      {"run.train_images", "", "images", C},
      {"run.images_per_epoch", "", "images", C},
      {"run.test_set_from_epoch", "", "epoch", C},
      {"run.data_fingerprint", "", "text", C},
      // ImageNet comes as shards or as JPEG folders (1001 classes or 1000, another pipeline)
      {"run.input_format", "", "text", C, cfg, "in-memory"},
      {"steps.time_sec", "", "s", T},
      {"steps.forward_sec", "", "s", T},
      {"steps.backward_sec", "", "s", T},
      {"steps.update_sec", "", "s", T},
      {"steps.comm_sec", "", "s", T},
      {"steps.exposed_comm_sec", "", "s", T},
      {"steps.comm_hidden_by_forward_sec", "", "s", T},
      {"steps.loss", "", "nats", T},
      {"steps.top1_correct", "", "images", T},
      {"steps.learning_rate", "", "rate", T},
      {"summary.elapsed_sec", "", "s", T},
      {"summary.step_time_mean_sec", "", "s", T},
      {"summary.forward_mean_sec", "", "s", T},
      {"summary.backward_mean_sec", "", "s", T},
      {"summary.update_mean_sec", "", "s", T},
      {"summary.peak_gflops_per_rank", "", "GFLOP/s", T},
      {"summary.peak_isa", "", "text", T},
      {"summary.working_memory_bytes", "", "bytes", T},
      {"summary.unshared_working_memory_bytes", "", "bytes", T},
      {"summary.peak_device_memory_bytes", "", "bytes", T},
      {"summary.comm_hidden_by_forward_mean_sec", "", "s", T},
      {"summary.baseline_images_per_sec", "", "images/s", TC},
      {"summary.baseline_ranks", "", "count", TC},
      {"summary.loss_scale", "", "factor", TC},
      {"summary.skipped_steps", "", "steps", TC},
      {"summary.cpu_wait_fraction", "", "fraction", T},
      {"summary.training_seconds", "", "s", C},
      {"summary.images", "", "images", C},
      {"repeats.count", "", "runs", T},
      {"repeats.images_per_sec", "", "images/s", T},
      {"repeats.cpu_wait_fraction", "", "fraction", T},
      {"repeats.reported_run", "", "run", T},
      {"repeats.images_per_sec_median", "", "images/s", T},
      {"repeats.images_per_sec_min", "", "images/s", T},
      {"repeats.images_per_sec_max", "", "images/s", T},
      {"repeats.spread", "", "fraction", T},
      {"layers[].name", "", "text", T},
      {"layers[].op", "", "text", T},
      {"layers[].forward_sec_per_step", "", "s", T},
      {"layers[].backward_sec_per_step", "", "s", T},
      {"layers[].weight_grad_sec_per_step", "", "s", T},
      {"layers[].forward_macs", "", "MAC", T},
      {"layers[].gradient_elements", "", "elements", T},
      {"layers[].gradient_rows", "", "rows", T},
      {"epochs[].epoch", "", "epoch", C},
      {"epochs[].train_loss", "", "nats", C},
      {"epochs[].train_top1", "", "fraction", C},
      {"epochs[].train_steps", "", "steps", C},
      {"epochs[].learning_rate", "", "rate", C},
      {"epochs[].seconds", "", "s", C},
      {"epochs[].images_per_sec", "", "images/s", C},
      {"epochs[].compute_images_per_sec", "", "images/s", C},
      {"epochs[].input_stall_sec", "", "s", C},
      {"epochs[].test_loss", "", "nats", C},
      {"epochs[].test_top1", "", "fraction", C},
      {"epochs[].test_top5", "", "fraction", C},
      {"epochs[].images", "", "images", C},
      {"epochs[].elapsed_sec", "", "s", C},
      {"input.pipeline_images_per_sec", "", "images/s", C},
      {"input.slowest_worker_images_per_sec", "", "images/s", C},
      {"input.compute_images_per_sec", "", "images/s", C},
      {"input.stall_fraction", "", "fraction", C},
      {"input.workers", "", "count", C},
      {"input.workers_needed", "", "count", C},
      {"input.input_bound", "", "boolean", C},
      {"input.cause", "", "text", C},
      {"time_to_accuracy.target_top_1_accuracy", "", "fraction", C},
      {"time_to_accuracy.reached", "", "boolean", C},
      {"time_to_accuracy.best_test_top1", "", "fraction", C},
      {"time_to_accuracy.evaluations", "", "count", C},
      {"time_to_accuracy.clock_complete", "", "boolean", C},
      {"time_to_accuracy.ranks", "", "counts", C},
      {"time_to_accuracy.evaluated_from_epoch", "", "epoch", C},
      {"time_to_accuracy.seconds", "", "s", C},
      {"time_to_accuracy.epochs", "", "epochs", C},
      {"time_to_accuracy.images", "", "images", C},
      {"time_to_accuracy.test_top1", "", "fraction", C},
  };
  return fields;
}

namespace {

// What the run printed about the flags given that it did not use ("cnnbench: note: ..."): the
// config section lists every flag's value, used or not; this says which were not.
std::vector<std::string> run_flag_notes(const Config& config, const RunSettings& s) {
  std::vector<std::string> notes = flag_notes(config);
  for (std::string& note : exchange_flag_notes(config, s.ranks, s.training)) notes.push_back(std::move(note));
  return notes;
}

}  // namespace

nlohmann::json run_fields(const Config& config, const RunSettings& s, const RunFacts& f) {
  return {{"model", s.model.name},
          {"mode", f.mode},
          {"dataset", s.dataset},
          {"synthetic", s.synthetic},
          {"backend", f.backend},
          {"precision", dtype_name(s.precision)},
          {"ranks", s.ranks},
          {"hosts", f.hosts},
          {"threads_per_rank", s.threads},
          {"batch_size_per_rank", s.batch_size},
          {"global_batch", s.global_batch},
          {"timed_steps", f.timed_steps},
          {"variable_update", config.variable_update},
          {"allreduce", f.allreduce},
          // no buckets where no gradients are exchanged: the defaults, so that runs differing only
          // in a bucket size they ignored pair in compare
          {"fusion_threshold_mb", f.allreduce == "none" ? Config{}.fusion_threshold_mb : config.fusion_threshold_mb},
          {"first_layers_bucket_mb", f.allreduce == "none" ? Config{}.first_layers_bucket_mb : config.first_layers_bucket_mb},
          // what applied: a run that exchanges no gradients (allreduce "none") sends none compressed
          {"compression", f.allreduce == "none" ? std::string("none") : config.compression},
          {"hierarchical_allreduce", f.allreduce != "none" && config.hierarchical_allreduce},
          {"overlap_forward", f.overlap_forward},
          {"flag_notes", run_flag_notes(config, s)}};
}

nlohmann::json result_fields_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const ResultField& f : result_fields()) {
    nlohmann::json schemas = nlohmann::json::array();
    if (f.schemas & kTrainingResult) schemas.push_back("cnnbench.result/1");
    if (f.schemas & kConvergenceResult) schemas.push_back("cnnbench.convergence/1");
    out.push_back({{"json_path", *f.json_path ? nlohmann::json(f.json_path) : nlohmann::json(nullptr)},
                   {"csv_column", *f.csv_column ? nlohmann::json(f.csv_column) : nlohmann::json(nullptr)},
                   {"unit", f.unit},
                   {"schemas", schemas},
                   {"configuration", f.configuration}});
  }
  return out;
}

nlohmann::json model_fields(const RunSettings& s, const Graph& graph) {
  return {{"name", s.model.name},
          {"network", s.model.network},
          {"classes", graph.num_classes()},
          {"parameters", graph.param_count()},
          {"forward_gmacs_per_image", static_cast<double>(graph.forward_macs_per_image()) / 1e9}};
}

std::vector<std::string> csv_header() {
  std::vector<std::string> header;
  for (const ResultField& f : result_fields())
    if (*f.csv_column) header.emplace_back(f.csv_column);
  return header;
}

std::vector<std::string> allreduce_csv_header() {
  // hierarchical last: an allreduce.csv of the columns before it is widened, not refused
  return {"time_utc",   "backend",    "ranks", "hosts",       "type", "bytes", "time_sec",
          "algbw_gbps", "busbw_gbps", "wrong", "hierarchical"};
}

std::vector<std::string> input_csv_header() {
  return {"time_utc",   "model",          "format", "ranks", "workers_per_rank", "batch_size", "cpus_allowed",
          "images_per_sec", "images_per_sec_per_worker"};
}

std::vector<std::string> csv_row(const nlohmann::json& doc, const std::string& json_file) {
  std::vector<std::string> row;
  for (const ResultField& f : result_fields()) {
    if (!*f.csv_column) continue;
    if (!*f.json_path) {  // json_file, the one column without a JSON field
      row.push_back(json_file);
      continue;
    }
    std::string pointer = "/";
    pointer += f.json_path;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    const nlohmann::json::json_pointer at(pointer);
    if (!doc.contains(at)) {
      row.emplace_back();
      continue;
    }
    const nlohmann::json& v = doc.at(at);
    if (v.is_string())
      row.push_back(v.get<std::string>());
    else if (v.is_boolean())
      row.emplace_back(v.get<bool>() ? "true" : "false");
    else if (v.is_number_integer())
      row.push_back(v.dump());
    else if (v.is_number())
      row.push_back(csv_number(v.get<double>()));
    else
      row.emplace_back();  // null: a number that was not finite
  }
  return row;
}

namespace {

void collect_paths(const nlohmann::json& v, const std::string& path, std::set<std::string>& out) {
  if (path == "config" || path == "context.mpi_settings") {  // open maps: settings by name
    out.insert(path + ".*");
    return;
  }
  if (v.is_object()) {
    for (const auto& [key, member] : v.items()) collect_paths(member, path.empty() ? key : path + "." + key, out);
  } else if (v.is_array() && !v.empty() && v.front().is_object()) {
    for (const auto& item : v) collect_paths(item, path + "[]", out);
  } else {
    out.insert(path);  // a value, or an array of values (steps.loss, layers[].gradient_elements)
  }
}

}  // namespace

std::vector<std::string> json_field_paths(const nlohmann::json& doc) {
  std::set<std::string> paths;
  collect_paths(doc, "", paths);
  return {paths.begin(), paths.end()};
}

}  // namespace cnnbench
