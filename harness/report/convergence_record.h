// harness/report/convergence_record.h — the result files of a run on real data: one row per
// epoch in <name>_epochs.csv (rewritten after every epoch), the JSON document
// "cnnbench.convergence/1" (context, config, run, every epoch, summary, input verdict, time to
// accuracy) and its results.csv row, read off that document through result_fields.h.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/cli/config.h"
#include "harness/cli/run_settings.h"
#include "harness/report/epoch_metrics.h"
#include "harness/report/run_context.h"
#include "models/graph.h"
#include "harness/report/run_summary.h"
#include "harness/report/time_to_accuracy.h"

namespace cnnbench {


// Whether the input pipeline held the run back: its workers' rate (images made per second of
// their busy time, all workers of all ranks) against the compute's (images per second of the
// time not spent waiting for input), and the share of the time spent waiting.
// What one rank's CPUs carry on a CPU backend: its compute threads and input workers, on the
// CPUs it may use (cpus 0: not known, or the compute runs on a GPU).
struct RankCores {
  int compute_threads = 0, input_workers = 0, cpus = 0;
  bool shared() const { return cpus > 0 && compute_threads + input_workers > cpus; }
};

// Why an input-bound run waited, the cause the line names: too few workers (more would keep
// up), the cores (workers would have to share the rank's CPUs with its compute threads, where
// more of them only take turns), or neither (its workers make enough: the wait is reading the
// files, or the pipeline's first batches of the run and of each epoch).
enum class InputCause { none, workers, cores, start_or_reading };
const char* input_cause_name(InputCause cause);

struct InputVerdict {
  double pipeline_images_per_sec = 0, compute_images_per_sec = 0, stall_fraction = 0;
  double slowest_worker_images_per_sec = 0;  // the slowest rank's workers, each
  int workers = 0;         // all ranks'
  int workers_needed = 0;  // at the slowest rank's rate, to keep up with the compute (0 with cause cores)
  int rank_workers_needed = 0;  // the same, each rank (--num_data_workers)
  int ranks = 1;
  bool input_bound = false;
  InputCause cause = InputCause::none;
  // Where the workers share the CPUs with the compute threads, their rate measured while busy is
  // more than they deliver while the compute runs: more workers would only take turns on the
  // same cores, and the line says so instead of naming a count of workers.
  RankCores cores;

  std::string line() const;
  nlohmann::json to_json() const;
};
// capacity: all ranks' workers' images per second of their busy time; slowest_worker_rate: the
// slowest rank's per worker (0: every rank's the same), which the steps wait for.
InputVerdict input_verdict(double capacity, int workers, int64_t images, double seconds, double stall_sec,
                           RankCores cores = {}, double slowest_worker_rate = 0);

std::string epochs_csv(const std::vector<EpochMetrics>& epochs);

// The result names a run claims at its start: a new <stem>_epochs.csv (its header alone until
// the first epoch) and the JSON beside it, so that runs started in the same second keep a pair
// of files each; with --result_json, that path and the CSV beside it. Rank 0 only.
struct ResultNames {
  std::string json, epochs_csv;
  bool claimed = false;  // epochs_csv was created now (removed again if no epoch ends)
};
ResultNames claim_result_names(const Config& config, const RunSettings& settings, int ranks);

struct ConvergenceOutcome {
  const Config& config;
  const RunSettings& settings;
  const RunContext& context;
  int ranks = 1, hosts = 1;
  std::string allreduce;  // the backend, or none
  bool overlap_forward = false;
  int64_t steps_per_epoch = 0, first_epoch = 0, steps_done = 0;
  const std::vector<EpochMetrics>& history;
  double training_seconds = 0;  // this run's training epochs (evaluations and checkpoints left out)
  int64_t images = 0;           // trained by all ranks in them
  const BaselineSpeed* baseline = nullptr;
  const InputVerdict& input;
  const TimeToAccuracy& to_target;  // target 0: none asked for
  int64_t peak_rss_bytes = 0;
  const Graph* graph = nullptr;  // the model as trained (its head's classes, its parameters)
  double loss_scale = 0;          // with loss scaling: the final scale (0: none)
  int64_t skipped_steps = 0;      // with loss scaling: steps skipped for inf/NaN gradients since the run began
  std::string input_format = "in-memory";  // DataSplits::format(): "tfrecord", "jpeg", "in-memory"
  int64_t train_images = 0;        // in the training set (an epoch trains steps_per_epoch x global batch)
  int64_t test_set_from_epoch = 1;  // > 1: a --resume changed the test set; the first epoch evaluated on this one
  std::string data_fingerprint;     // of the training and test data, 16 hex digits (real_data.h)

  double images_per_sec() const { return training_seconds > 0 ? static_cast<double>(images) / training_seconds : 0; }
};

nlohmann::json convergence_json(const ConvergenceOutcome& run);
// Writes the JSON to the claimed name (a new one if another run's JSON took it) and appends
// the results.csv row; returns the JSON's path.
std::string write_convergence_results(const ConvergenceOutcome& run, const ResultNames& names);

}  // namespace cnnbench
