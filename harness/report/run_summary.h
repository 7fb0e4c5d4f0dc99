// harness/report/run_summary.h — what a user acts on after a run: throughput, step-time percentiles,
// the forward/backward/update split, achieved GFLOP/s against the measured peak, peak memory;
// and the per-layer table of --layer_timing.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "harness/report/step_record.h"
#include "kernels/cpu_peak.h"
#include "harness/cli/run_settings.h"
#include "harness/report/stats.h"
#include "kernels/plan.h"

namespace cnnbench {

struct RunSummary {
  int64_t timed_steps = 0;
  double elapsed_sec = 0;
  double images_per_sec = 0;  // all timed images / elapsed (tf's "total images/sec")
  SpeedStats speed;           // over per-step speeds
  double step_mean_sec = 0, step_p50_sec = 0, step_p90_sec = 0, step_p99_sec = 0;
  double forward_mean_sec = 0, backward_mean_sec = 0, update_mean_sec = 0;
  double gflop_per_image = 0;  // conv + linear: 2 x MACs forward, x 3 when training
  double achieved_gflops = 0;
  PeakResult peak;
  double fraction_of_peak = 0;  // achieved / (peak x ranks); -1 where achieved is above the measured peak
  int64_t peak_rss_bytes = 0;
  int64_t working_memory_bytes = 0, unshared_working_memory_bytes = 0;  // the plan's, as planned (0: not said)
  bool working_memory_on_device = false;  // a GPU plan's: in the device's memory, not in the RSS
  int64_t peak_device_memory_bytes = 0;  // a GPU's memory in use at its fullest (the worst rank; 0: no device)
  double final_loss = 0;
  // across ranks
  double comm_mean_sec = 0;       // allreduce time per step (communication thread, max over ranks)
  double exposed_mean_sec = 0;    // of it, not hidden behind backward (max over ranks)
  bool overlap_forward = false;   // --overlap_forward: exposed in the next forward pass instead
  double hidden_by_forward_mean_sec = 0;  // of comm, what ran beside forward's compute (min over ranks)
  double rank_skew = 0;           // slowest rank's compute time / fastest's - 1
  int buckets = 0;                // allreduce buckets per step
  double sent_mib_per_step = 0;   // gradient bytes one rank sends per step, MiB
  double gradient_mib = 0;        // the gradients in fp32, MiB
  double baseline_images_per_sec = 0;  // from --baseline (0: none)
  int baseline_ranks = 0;
  double scaling_efficiency = 0;  // images/sec / (ranks x baseline per-rank images/sec)
  double loss_scale = 0;          // final loss scale (0: no loss scaling)
  int64_t skipped_steps = 0;      // steps skipped for inf/NaN gradients (warm-up included)
  // time the compute threads waited for a CPU another process held, over threads x the timed
  // steps' wall time (the worst rank; negative: not reported by this kernel)
  double cpu_wait_fraction = -1;
};

// --repeats: the images/sec of each whole run, in run order, and the one whose figures the
// results report (the median run; of an even count, the slower of the middle two).
struct RepeatSpeeds {
  std::vector<double> images_per_sec;
  std::vector<double> cpu_wait_fraction;  // of each run (RunSummary::cpu_wait_fraction)
  size_t median_index = 0;
  double median() const { return images_per_sec.empty() ? 0 : images_per_sec[median_index]; }
  double min() const;
  double max() const;
  double spread() const;  // (max - min) / median
};
RepeatSpeeds repeat_speeds(const std::vector<double>& images_per_sec, const std::vector<double>& cpu_wait_fraction = {});
// "  repeats         5 runs: median ... img/s, range ...-... (spread ...% of the median)"
void print_repeats(FILE* out, const RepeatSpeeds& repeats);

// `steps`: every timed step with time_sec already the max over ranks. `elapsed_sec` > 0: the
// timed steps' wall time, where it is not their sum (ranks that never wait for each other: the
// slowest rank's own total, less than the sum of each step's slowest); images/sec and GFLOP/s
// are over it, the step statistics over `steps`.
RunSummary summarize(const RunSettings& settings, const Graph& graph, const std::vector<StepRecord>& steps,
                     const PeakResult& peak, double elapsed_sec = 0);
// --baseline: a reference run's speed (harness/compare/baseline.h reads it from its result).
struct BaselineSpeed {
  double images_per_sec = 0;
  int ranks = 0;
  // the baseline's workload as its "run" fields say it (model, dataset, synthetic, mode,
  // backend, precision, batch_size_per_rank), as text; a field its version did not write is absent
  std::map<std::string, std::string> workload;
  // images/sec on `ranks` against ranks x the baseline's images/sec per rank
  double efficiency(double images_per_sec_here, int ranks_here) const;
  // "95.0% efficiency: 7.60 img/s on 2 ranks vs 4.00 img/s on 1 (per rank 3.80 vs 4.00)"
  std::string text(double images_per_sec_here, int ranks_here) const;
};
void print_summary(FILE* out, const RunSummary& summary, const RunSettings& settings);
// `kernels`: per node, what Plan::layer_kernels() says (empty: no such column).
void print_layer_table(FILE* out, const Graph& graph, const std::vector<LayerTime>& layers, int64_t steps,
                       const std::vector<std::string>& kernels = {});
int64_t peak_rss_bytes();

}  // namespace cnnbench
