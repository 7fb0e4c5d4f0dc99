#include "harness/report/tf_log.h"

#include <fmt/format.h>

#include "harness/report/stats.h"

namespace cnnbench {

void TfLog::header(const std::string& devices, const std::string& backend_note, const Graph& graph) {
  if (!out_) return;
  const RunSettings& s = settings_;
  // where tf_cnn_benchmarks builds another network under the name, the log says so beside it
  const std::string tf_cnn_other = tf_cnn_benchmarks_network(s.model.name);
  fmt::print(out_, "Model:       {}{}\n", s.model.name, tf_cnn_other.empty() ? "" : " (" + tf_cnn_other + ")");
  fmt::print(out_, "Dataset:     {}{}\n", s.dataset, s.synthetic ? " (synthetic)" : "");
  fmt::print(out_, "Mode:        {}\n", s.training ? "training" : "forward only");  // tf_cnn_benchmarks' BenchmarkMode
  fmt::print(out_, "Batch size:  {} global\n", s.global_batch);
  fmt::print(out_, "             {} per device\n", s.batch_size);
  fmt::print(out_, "Num batches: {}\n", s.timed_steps);
  fmt::print(out_, "Num epochs:  {:.2f}\n", s.epochs);
  fmt::print(out_, "Classes:     {} (a label is its output, 0 to {})\n", graph.num_classes(), graph.num_classes() - 1);
  fmt::print(out_, "Parameters:  {}\n", graph.param_count());
  fmt::print(out_, "Devices:     {}\n", devices);
  fmt::print(out_, "Data format: {}\n", config_.data_format);
  fmt::print(out_, "Optimizer:   {}\n", config_.optimizer);
  fmt::print(out_, "Variables:   {}\n", config_.variable_update);
  fmt::print(out_, "Precision:   {}{}\n", dtype_name(s.precision),
             !config_.use_fp16          ? ""
             : config_.device == "gpu" ? " (--use_fp16: tensor cores; fp32 master weights)"
                                       : " (--use_fp16: bf16 is this CPU's fast half type; fp32 master weights)");
  fmt::print(out_, "Backend:     {}\n", backend_note);
  fmt::print(out_, "==========\n");
  fmt::print(out_, "Generating {} model\n", s.training ? "training" : "forward-only");
  std::fflush(out_);
}

void TfLog::warmup_started() {
  if (!out_) return;
  fmt::print(out_, "Running warm up\n");
  std::fflush(out_);
}

void TfLog::warmup_done() {
  if (!out_) return;
  fmt::print(out_, "Done warm up\n");
  fmt::print(out_, "Step\tImg/sec\ttotal_loss{}\n", accuracy_columns() ? "\ttop_1_accuracy\ttop_5_accuracy" : "");
  std::fflush(out_);
}

void TfLog::step(int64_t index, const std::vector<StepRecord>& steps) {
  if (!out_) return;
  if (!step_line_shown(index, config_.display_every)) return;
  // under horovod, tf_cnn_benchmarks' step lines are each rank's own speed (its batch over the
  // step) and only the total is the job's: a Horovod log's parsers read them so
  const bool per_rank = config_.variable_update == "horovod" && settings_.ranks > 1;
  const SpeedStats stats = speed_stats(step_speeds(steps, per_rank ? settings_.batch_size : settings_.global_batch));
  const StepRecord& last = steps.back();
  fmt::print(out_, "{}\timages/sec: {:.1f} +/- {:.1f} (jitter = {:.1f})\t{:.3f}", index + 1, stats.mean, stats.stderr_,
             stats.jitter, last.loss + last.l2_loss);  // tf_cnn_benchmarks' total_loss: the L2 term added
  // the counts are rank 0's (as tf_cnn_benchmarks prints its first device's): out of its batch,
  // not the global one, which kept the figure under 1 / ranks
  if (accuracy_columns())
    fmt::print(out_, "\t{:.3f}\t{:.3f}", static_cast<double>(last.top1_correct) / static_cast<double>(settings_.batch_size),
               static_cast<double>(last.top5_correct) / static_cast<double>(settings_.batch_size));
  fmt::print(out_, "\n");
  std::fflush(out_);
}

void print_total_images_per_sec(FILE* out, double images_per_sec) {
  fmt::print(out, "----------------------------------------------------------------\n");
  fmt::print(out, "total images/sec: {:.2f}\n", images_per_sec);
  fmt::print(out, "----------------------------------------------------------------\n");
  std::fflush(out);
}

void TfLog::total(double images_per_sec) {
  if (out_) print_total_images_per_sec(out_, images_per_sec);
}

void TfLog::repeat_started(int64_t index, int64_t count) {
  if (!out_) return;
  fmt::print(out_, "Repeat {} of {}: a new plan on fresh memory\n", index, count);
  std::fflush(out_);
}

void TfLog::repeat_done(int64_t index, int64_t count, double images_per_sec) {
  if (!out_) return;
  fmt::print(out_, "Run {} of {} done: {:.2f} img/s\n", index, count, images_per_sec);
  std::fflush(out_);
}

}  // namespace cnnbench
