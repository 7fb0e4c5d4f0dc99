#include "harness/report/convergence_record.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "harness/report/csv.h"
#include "harness/report/output_paths.h"
#include "harness/report/result_fields.h"
#include "harness/report/result_files.h"

namespace cnnbench {

const char* input_cause_name(InputCause cause) {
  switch (cause) {
    case InputCause::workers: return "workers";
    case InputCause::cores: return "cores";
    case InputCause::start_or_reading: return "start_or_reading";
    case InputCause::none: break;
  }
  return "none";
}

namespace {

std::string count_of(int n, const char* what) { return fmt::format("{} {}{}", n, what, n == 1 ? "" : "s"); }
std::string workers_decode(int n) { return count_of(n, "worker") + (n == 1 ? " decodes" : " decode"); }

std::string cause_text(const InputVerdict& v) {
  const RankCores& c = v.cores;
  const std::string cpus = count_of(c.cpus, "CPU"), threads = count_of(c.compute_threads, "compute thread");
  switch (v.cause) {
    case InputCause::none: return "not input-bound";
    case InputCause::workers:  // --num_data_workers is per rank
      return v.ranks == 1 ? fmt::format("input-bound (about {} workers would keep up)", v.workers_needed)
                          : fmt::format("input-bound (about {} workers a rank would keep up)", v.rank_workers_needed);
    case InputCause::cores:
      return c.shared() ? fmt::format("input-bound: each rank's {} beside its {} on {}, taking turns on the "
                                      "cores, so more workers would not keep up (more CPUs would, or a GPU for the "
                                      "compute)",
                                      workers_decode(c.input_workers), threads, cpus)
                        : fmt::format("input-bound: each rank would need about {} beside its {}, more than its {} "
                                      "hold (more CPUs would keep up{})",
                                      count_of(v.rank_workers_needed, "worker"), threads, cpus,
                                      // the workers alone fit where the compute goes to a GPU
                                      v.rank_workers_needed <= c.cpus ? ", or a GPU for the compute" : "");
    case InputCause::start_or_reading: break;
  }
  // the workers' rate counts their busy time: what they wait for is the files, or the start
  return fmt::format("input-bound, though its {} fast enough: the wait is reading the files or, in a "
                     "short run, the pipeline's first batches (of the run and of each epoch)",
                     workers_decode(v.workers));
}

}  // namespace

std::string InputVerdict::line() const {
  const double average = pipeline_images_per_sec / std::max(1, workers);
  // a rank whose workers are slower holds every step back: name it where it is 10% or more behind
  const std::string slowest = slowest_worker_images_per_sec < 0.9 * average
                                  ? fmt::format(", the slowest rank's {:.1f}", slowest_worker_images_per_sec)
                                  : std::string();
  return fmt::format("input pipeline: {:.1f} images/sec ({}, {:.1f} each{}), compute {:.1f} images/sec, "
                     "waiting for input {:.1f}% of the time: {}",
                     pipeline_images_per_sec, count_of(workers, "worker"), average, slowest, compute_images_per_sec,
                     100 * stall_fraction, cause_text(*this));
}

nlohmann::json InputVerdict::to_json() const {
  return {{"pipeline_images_per_sec", pipeline_images_per_sec},
          {"slowest_worker_images_per_sec", slowest_worker_images_per_sec},
          {"compute_images_per_sec", compute_images_per_sec},
          {"stall_fraction", stall_fraction},
          {"workers", workers},
          {"workers_needed", workers_needed},
          {"input_bound", input_bound},
          {"cause", input_cause_name(cause)}};
}

InputVerdict input_verdict(double capacity, int workers, int64_t images, double seconds, double stall_sec,
                           RankCores cores, double slowest_worker_rate) {
  InputVerdict v;
  v.cores = cores;
  v.pipeline_images_per_sec = capacity;
  v.workers = workers;
  v.stall_fraction = seconds > 0 ? stall_sec / seconds : 0;
  v.compute_images_per_sec = seconds > stall_sec ? static_cast<double>(images) / (seconds - stall_sec) : 0;
  const double average = capacity / std::max(1, workers);
  // a rank that made no batch sends no rate (infinite): unknown, where every rank did so
  const bool known = slowest_worker_rate > 0 && std::isfinite(slowest_worker_rate);
  const double per_worker = known ? std::min(slowest_worker_rate, average) : average;
  v.slowest_worker_images_per_sec = per_worker;
  // every rank runs as many workers and trains as many images: the slowest rank needs the most
  const int ranks = cores.input_workers > 0 ? std::max(1, workers / cores.input_workers) : 1;
  v.ranks = ranks;
  v.rank_workers_needed =
      per_worker > 0 ? static_cast<int>(std::ceil(v.compute_images_per_sec / ranks / per_worker - 1e-9)) : 0;
  v.workers_needed = v.rank_workers_needed * ranks;
  // a few percent of waiting is the first batches' and the epochs' starts
  v.input_bound = v.stall_fraction > 0.05;
  if (!v.input_bound)
    v.cause = InputCause::none;
  else if (v.workers_needed <= workers)
    v.cause = InputCause::start_or_reading;
  else if (cores.cpus > 0 && (cores.shared() || cores.compute_threads + v.rank_workers_needed > cores.cpus))
    v.cause = InputCause::cores, v.workers_needed = 0;  // no count of workers would keep up
  else
    v.cause = InputCause::workers;
  return v;
}


std::string epochs_csv(const std::vector<EpochMetrics>& epochs) {
  std::string out =
      "epoch,train_loss,train_top1,test_loss,test_top1,test_top5,learning_rate,seconds,images_per_sec,"
      "compute_images_per_sec,input_stall_sec\n";
  for (const EpochMetrics& m : epochs) {
    auto test = [&](double v) { return m.evaluated ? csv_number(v) : std::string(); };
    out += csv_line({std::to_string(m.epoch), csv_number(m.train_loss), csv_number(m.train_top1), test(m.test_loss),
                     test(m.test_top1), test(m.test_top5), csv_number(m.learning_rate), csv_number(m.seconds),
                     csv_number(m.images_per_sec), csv_number(m.compute_images_per_sec),
                     csv_number(m.input_stall_sec)});
  }
  return out;
}

ResultNames claim_result_names(const Config& config, const RunSettings& settings, int ranks) {
  ResultNames names;
  if (!config.result_json.empty()) {
    names.json = config.result_json;
    names.epochs_csv = epochs_csv_path(config.result_json);
    return names;
  }
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::gmtime(&now));
  make_folders(config.benchmark_log_dir);
  const std::string stem = fmt::format("{}/{}_{}_{}r_{}_{}", config.benchmark_log_dir, settings.model.name,
                                       settings.dataset, ranks, stamp, getpid());
  names.epochs_csv = write_new_file(stem, "_epochs.csv", epochs_csv({}));
  names.json = names.epochs_csv.substr(0, names.epochs_csv.size() - std::string("_epochs.csv").size()) + ".json";
  names.claimed = true;
  return names;
}

nlohmann::json convergence_json(const ConvergenceOutcome& r) {
  const RunSettings& s = r.settings;
  // "run" holds what `cnnbench compare` matches runs by, named as in training results
  nlohmann::json doc = {{"schema", "cnnbench.convergence/1"},
                        {"context", to_json(r.context)},
                        {"config", nlohmann::json::object()},
                        {"model", model_fields(s, *r.graph)},
                        {"run", run_fields(r.config, s,
                                           {"convergence", r.config.backend, r.allreduce, r.hosts, r.steps_done,
                                            r.overlap_forward})},
                        {"epochs", nlohmann::json::array()}};
  doc["run"]["steps_per_epoch"] = r.steps_per_epoch;
  doc["run"]["first_epoch"] = r.first_epoch;
  doc["run"]["input_format"] = r.input_format;
  doc["run"]["train_images"] = r.train_images;
  doc["run"]["images_per_epoch"] = r.steps_per_epoch * s.global_batch;
  doc["run"]["test_set_from_epoch"] = r.test_set_from_epoch;
  doc["run"]["data_fingerprint"] = r.data_fingerprint;
  for (const auto& [key, value] : config_values(r.config)) doc["config"][key] = value;
  for (const EpochMetrics& m : r.history) doc["epochs"].push_back(epoch_json(m));
  const double images_per_sec = r.images_per_sec();
  nlohmann::json& summary = doc["summary"];
  summary = {{"images_per_sec", images_per_sec},
             {"training_seconds", r.training_seconds},
             {"images", r.images},
             {"peak_rss_bytes", r.peak_rss_bytes}};
  if (!r.history.empty()) summary["final_loss"] = r.history.back().train_loss;
  if (!r.history.empty() && r.history.back().evaluated) summary["test_top1"] = r.history.back().test_top1;
  if (r.loss_scale > 0) {
    summary["loss_scale"] = r.loss_scale;
    summary["skipped_steps"] = r.skipped_steps;
  }
  if (r.baseline && images_per_sec > 0) {
    summary["baseline_images_per_sec"] = r.baseline->images_per_sec;
    summary["baseline_ranks"] = r.baseline->ranks;
    summary["scaling_efficiency"] = r.baseline->efficiency(images_per_sec, r.ranks);
  }
  const TimeToAccuracy& t = r.to_target;
  // a time that leaves out epochs before a resume, covers training on other rank counts than this
  // run's, or counts evaluations on a test set a resume changed, is not this configuration's time
  // to accuracy: no target in the summary (nor in the results.csv row read off it);
  // time_to_accuracy below keeps the detail
  if (t.target > 0 && t.comparable(r.ranks)) {
    summary["target_top_1_accuracy"] = t.target;
    // not reached: the time, epochs and images stay absent, read as "not reached"
    if (t.reached) {
      summary["time_to_accuracy_sec"] = t.seconds;
      summary["epochs_to_accuracy"] = t.epochs;
      summary["images_to_accuracy"] = t.images;
    }
  }
  doc["input"] = r.input.to_json();
  if (t.target > 0) doc["time_to_accuracy"] = t.to_json();
  return doc;
}

std::string write_convergence_results(const ConvergenceOutcome& r, const ResultNames& names) {
  const nlohmann::json doc = convergence_json(r);
  // a setting that is not UTF-8 (a Latin-1 path) is written as U+FFFD, never lost to an exception
  const std::string text = doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::string json_path = names.json;
  if (r.config.result_json.empty()) {
    // the name claimed at the start by its CSV: a JSON there is another run's, never replaced
    json_path = write_new_file(json_path.substr(0, json_path.size() - 5), ".json", text);
  } else {
    check_replaceable_result(json_path, "--result_json");
    write_file_atomically(json_path, text);
  }
  make_folders(r.config.benchmark_log_dir);
  append_csv_row(r.config.benchmark_log_dir + "/results.csv", csv_header(), csv_row(doc, json_path));
  return json_path;
}

}  // namespace cnnbench
