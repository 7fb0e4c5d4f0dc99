#include "harness/report/run_summary.h"

#include "kernels/threads.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <string>


namespace cnnbench {

// More CPU wait than this and a run's speed says more about its neighbours than about itself.
constexpr double kContendedWait = 0.02;

int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

RunSummary summarize(const RunSettings& settings, const Graph& graph, const std::vector<StepRecord>& steps,
                     const PeakResult& peak, double elapsed_sec) {
  RunSummary s;
  s.timed_steps = static_cast<int64_t>(steps.size());
  std::vector<double> times, forward, backward, update;
  for (const StepRecord& r : steps) {
    times.push_back(r.time_sec);
    forward.push_back(r.forward_sec);
    backward.push_back(r.backward_sec);
    update.push_back(r.update_sec);
    s.elapsed_sec += r.time_sec;
  }
  if (elapsed_sec > 0) s.elapsed_sec = elapsed_sec;
  s.images_per_sec = static_cast<double>(settings.global_batch * s.timed_steps) / s.elapsed_sec;
  s.speed = speed_stats(step_speeds(steps, settings.global_batch));
  s.step_mean_sec = mean(times);
  s.step_p50_sec = percentile(times, 50);
  s.step_p90_sec = percentile(times, 90);
  s.step_p99_sec = percentile(times, 99);
  s.forward_mean_sec = mean(forward);
  s.backward_mean_sec = mean(backward);
  s.update_mean_sec = mean(update);
  s.gflop_per_image = 2.0 * static_cast<double>(graph.forward_macs_per_image()) * (settings.training ? 3 : 1) / 1e9;
  s.achieved_gflops = s.gflop_per_image * s.images_per_sec;
  s.peak = peak;
  // peak is per rank; all ranks together have `ranks` times as much
  // above the peak: the peak's measurement ran low (a busy machine), no fraction of it is reported
  if (peak.supported && peak.gflops > 0) s.fraction_of_peak = s.achieved_gflops / (peak.gflops * settings.ranks);
  if (s.fraction_of_peak > 1) s.fraction_of_peak = -1;
  s.peak_rss_bytes = peak_rss_bytes();
  s.final_loss = steps.empty() ? 0 : steps.back().loss;
  std::vector<double> comm, exposed, hidden;
  for (const StepRecord& r : steps) {
    comm.push_back(r.comm_sec);
    exposed.push_back(r.exposed_sec);
    hidden.push_back(r.hidden_by_forward_sec);
  }
  s.comm_mean_sec = mean(comm);
  s.exposed_mean_sec = mean(exposed);
  s.hidden_by_forward_mean_sec = mean(hidden);
  return s;
}

double RepeatSpeeds::min() const {
  return images_per_sec.empty() ? 0 : *std::min_element(images_per_sec.begin(), images_per_sec.end());
}

double RepeatSpeeds::max() const {
  return images_per_sec.empty() ? 0 : *std::max_element(images_per_sec.begin(), images_per_sec.end());
}

double RepeatSpeeds::spread() const { return median() > 0 ? (max() - min()) / median() : 0; }

RepeatSpeeds repeat_speeds(const std::vector<double>& images_per_sec, const std::vector<double>& cpu_wait_fraction) {
  RepeatSpeeds r;
  r.images_per_sec = images_per_sec;
  r.cpu_wait_fraction = cpu_wait_fraction;
  std::vector<size_t> order(images_per_sec.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return images_per_sec[a] < images_per_sec[b]; });
  if (!order.empty()) r.median_index = order[(order.size() - 1) / 2];
  return r;
}

void print_repeats(FILE* out, const RepeatSpeeds& r) {
  std::string runs;
  for (size_t i = 0; i < r.images_per_sec.size(); ++i) {
    runs += fmt::format("{}{:.2f}", runs.empty() ? "" : ", ", r.images_per_sec[i]);
    if (i < r.cpu_wait_fraction.size() && r.cpu_wait_fraction[i] >= 0)
      runs += fmt::format(" (waited {:.1f}%)", 100 * r.cpu_wait_fraction[i]);
  }
  fmt::print(out, "  repeats         {} runs: median {:.2f} img/s (run {}, whose figures are above), range {:.2f}-{:.2f} "
                  "(spread {:.1f}% of the median)\n",
             r.images_per_sec.size(), r.median(), r.median_index + 1, r.min(), r.max(), 100 * r.spread());
  fmt::print(out, "                  images/sec of each run, in order: {}\n", runs);
}

double BaselineSpeed::efficiency(double images_per_sec_here, int ranks_here) const {
  return images_per_sec_here / (images_per_sec / ranks * ranks_here);
}

std::string BaselineSpeed::text(double images_per_sec_here, int ranks_here) const {
  return fmt::format("{:.1f}% efficiency: {:.2f} img/s on {} rank{} vs {:.2f} img/s on {} (per rank {:.2f} vs {:.2f})",
                     100 * efficiency(images_per_sec_here, ranks_here), images_per_sec_here, ranks_here,
                     ranks_here == 1 ? "" : "s", images_per_sec, ranks, images_per_sec_here / ranks_here,
                     images_per_sec / ranks);
}

void print_summary(FILE* out, const RunSummary& s, const RunSettings& settings) {
  const double step = s.step_mean_sec > 0 ? s.step_mean_sec : 1;
  fmt::print(out, "cnnbench summary ({} timed steps, {} rank{} x {} thread{})\n", s.timed_steps, settings.ranks,
             settings.ranks == 1 ? "" : "s", settings.threads, settings.threads == 1 ? "" : "s");
  fmt::print(out, "  images/sec      {:.2f} total, {:.2f} per rank\n", s.images_per_sec, s.images_per_sec / settings.ranks);
  fmt::print(out, "  step time       p50 {:.4f} s  p90 {:.4f} s  p99 {:.4f} s  (mean {:.4f} s)\n", s.step_p50_sec,
             s.step_p90_sec, s.step_p99_sec, s.step_mean_sec);
  fmt::print(out, "  split           forward+loss {:.4f} s ({:.0f}%)  backward {:.4f} s ({:.0f}%)  update {:.4f} s ({:.0f}%)\n",
             s.forward_mean_sec, 100 * s.forward_mean_sec / step, s.backward_mean_sec, 100 * s.backward_mean_sec / step,
             s.update_mean_sec, 100 * s.update_mean_sec / step);
  if (s.peak.supported && s.fraction_of_peak < 0)
    fmt::print(out, "  compute         {:.1f} GFLOP/s, above the measured {} peak {:.1f} GFLOP/s: the peak's measurement "
                    "ran low (a busy machine; --peak measures it again), no fraction of it reported ({} per image)\n",
               s.achieved_gflops, dtype_name(settings.precision), s.peak.gflops * settings.ranks,
               fmt::format("{:.2f} GFLOP", s.gflop_per_image));
  else if (s.peak.supported)
    fmt::print(out, "  compute         {:.1f} GFLOP/s = {:.1f}% of the measured {} peak {:.1f} GFLOP/s ({} per image)\n",
               s.achieved_gflops, 100 * s.fraction_of_peak, dtype_name(settings.precision),
               s.peak.gflops * settings.ranks, fmt::format("{:.2f} GFLOP", s.gflop_per_image));
  else
    fmt::print(out, "  compute         {:.1f} GFLOP/s (no {} peak measurable on this CPU)\n", s.achieved_gflops,
               dtype_name(settings.precision));
  fmt::print(out, "  memory          peak RSS {:.2f} GiB per rank", static_cast<double>(s.peak_rss_bytes) / (1 << 30));
  // a GPU plan's working memory is the device's, not part of the RSS
  if (s.working_memory_bytes > 0)
    fmt::print(out, "{} {:.2f} GiB ({:.2f} GiB without sharing)",
               s.working_memory_on_device ? "; working memory on the GPU" : ", of which working memory",
               static_cast<double>(s.working_memory_bytes) / (1 << 30),
               static_cast<double>(s.unshared_working_memory_bytes) / (1 << 30));
  if (s.peak_device_memory_bytes > 0)
    fmt::print(out, "; GPU memory in use at most {:.2f} GiB (the device's, as nvidia-smi counts it)",
               static_cast<double>(s.peak_device_memory_bytes) / (1 << 30));
  fmt::print(out, "\n");
  // a rank with more threads than CPUs waits for itself: that is no neighbour's doing
  const int cpus = available_cpus();
  if (s.cpu_wait_fraction >= 0 && settings.threads > cpus)
    fmt::print(out, "  CPU wait        {:.1f}% of the compute threads' time waiting for a CPU: this rank runs {} threads "
                    "on {} CPU{}, which wait for each other (--num_intra_threads)\n",
               100 * s.cpu_wait_fraction, settings.threads, cpus, cpus == 1 ? "" : "s");
  else if (s.cpu_wait_fraction >= 0)
    fmt::print(out, "  CPU wait        {:.1f}% of the compute threads' time waiting for a CPU another process held{}\n",
               100 * s.cpu_wait_fraction,
               s.cpu_wait_fraction > kContendedWait ? ": this run lost its cores to a neighbour and its figure is low; "
                                                      "quote the median of several (--repeats)"
                                                    : "");
  if (settings.ranks > 1 && s.buckets == 0)
    fmt::print(out, "  allreduce       none: ranks train independently (the upper bound for gradient exchange)\n");
  if (settings.ranks > 1 && s.buckets > 0)
    fmt::print(out,
               "  allreduce       {:.4f} s per step in {} bucket{}, {:.4f} s ({:.1f}% of the step) exposed {}; "
               "{:.2f} MiB sent per step ({:.1f}% of the fp32 gradients)\n",
               s.comm_mean_sec, s.buckets, s.buckets == 1 ? "" : "s", s.exposed_mean_sec, 100 * s.exposed_mean_sec / step,
               s.overlap_forward ? fmt::format("in the next forward, {:.4f} s hidden behind its compute",
                                               s.hidden_by_forward_mean_sec)
                                 : std::string("after backward"),
               s.sent_mib_per_step, s.gradient_mib > 0 ? 100 * s.sent_mib_per_step / s.gradient_mib : 0.0);
  if (settings.ranks > 1)
    fmt::print(out, "  rank skew       slowest rank computes {:.1f}% longer than the fastest\n", 100 * s.rank_skew);
  if (s.loss_scale > 0)
    fmt::print(out, "  loss scaling    final scale {:g}, {} step{} skipped for inf/NaN gradients\n", s.loss_scale,
               s.skipped_steps, s.skipped_steps == 1 ? "" : "s");
  if (s.baseline_ranks > 0)
    fmt::print(out, "  scaling         {}\n",
               BaselineSpeed{s.baseline_images_per_sec, s.baseline_ranks, {}}.text(s.images_per_sec, settings.ranks));
  std::fflush(out);
}

void print_layer_table(FILE* out, const Graph& graph, const std::vector<LayerTime>& layers, int64_t steps,
                       const std::vector<std::string>& kernels) {
  double total = 0;
  for (const LayerTime& t : layers) total += t.forward_sec + t.backward_sec;
  if (total <= 0 || steps <= 0) return;
  const auto ms = [steps](double sec) { return 1e3 * sec / static_cast<double>(steps); };
  fmt::print(out, "Layer timing: milliseconds per step, averaged over {} steps (fused ops are timed with their producer;\n"
                  "  backward includes the weight gradient, shown again under 'weights')\n",
             steps);
  const bool with_kernels = std::any_of(kernels.begin(), kernels.end(), [](const std::string& k) { return !k.empty(); });
  fmt::print(out, "{:<34} {:<16} {:>10} {:>10} {:>9} {:>7} {:>9}{}\n", "layer", "op", "forward", "backward", "weights",
             "share", "GFLOP/s", with_kernels ? "  kernels" : "");
  // per op kind, in the order the kinds first appear
  std::vector<OpKind> kinds;
  std::vector<LayerTime> by_kind;
  for (const Node& node : graph.nodes) {
    const LayerTime& t = layers[node.id];
    if (t.forward_sec + t.backward_sec <= 0) continue;
    // backward: the weight gradient, and the data gradient unless the input is the images (the
    // first convolution computes none)
    const bool data_grad = !node.inputs.empty() && graph.nodes[node.inputs[0]].kind != OpKind::input;
    const double passes = t.backward_sec > 0 ? 2.0 + (data_grad ? 1.0 : 0.0) : 1.0;
    const double flop = 2.0 * static_cast<double>(node.forward_macs) * passes;
    const std::string rate = flop > 0 ? fmt::format("{:.1f}", flop / (t.forward_sec + t.backward_sec) * steps / 1e9) : "";
    const std::string weights = t.weight_grad_sec > 0 ? fmt::format("{:.3f}", ms(t.weight_grad_sec)) : "";
    const std::string chosen = static_cast<size_t>(node.id) < kernels.size() && !kernels[node.id].empty()
                                   ? "  " + kernels[node.id] : "";
    fmt::print(out, "{:<34} {:<16} {:>10.3f} {:>10.3f} {:>9} {:>6.1f}% {:>9}{}\n", node.name, op_name(node.kind),
               ms(t.forward_sec), ms(t.backward_sec), weights, 100 * (t.forward_sec + t.backward_sec) / total, rate,
               chosen);
    const size_t k = std::find(kinds.begin(), kinds.end(), node.kind) - kinds.begin();
    if (k == kinds.size()) {
      kinds.push_back(node.kind);
      by_kind.push_back({});
    }
    by_kind[k].forward_sec += t.forward_sec;
    by_kind[k].backward_sec += t.backward_sec;
    by_kind[k].weight_grad_sec += t.weight_grad_sec;
  }
  fmt::print(out, "Per op, milliseconds per step:\n");
  for (size_t k = 0; k < kinds.size(); ++k) {
    const LayerTime& t = by_kind[k];
    const std::string weights = t.weight_grad_sec > 0 ? fmt::format("{:.3f}", ms(t.weight_grad_sec)) : "";
    fmt::print(out, "{:<34} {:<16} {:>10.3f} {:>10.3f} {:>9} {:>6.1f}%\n", "total", op_name(kinds[k]), ms(t.forward_sec),
               ms(t.backward_sec), weights, 100 * (t.forward_sec + t.backward_sec) / total);
  }
  std::fflush(out);
}

}  // namespace cnnbench
