#include "harness/cli/config.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <toml++/toml.h>

#include "harness/cli/bounded_file.h"
#include "harness/cli/toml_shield.h"

namespace cnnbench {

std::string printable(const std::string& text, size_t most) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < most; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > most) out += "...";
  return out;
}

namespace {

enum class Kind { integer, real, boolean, text };

struct FlagSpec {
  const char* name;
  Kind kind;
  const char* help;
  std::function<void(Config&, const std::string&)> set;  // value already type-checked
  std::function<std::string(const Config&)> get;
  // Where it is read (RunKind bits), how a test shows it (or why it cannot), and, for a run of a
  // kind it applies to, why this run still does not read it ("" when it does).
  unsigned runs = 0;
  std::vector<FlagProbe> probes;
  std::string unprobed;
  std::function<std::string(const Config&)> unused;

  FlagSpec reads(unsigned kinds) && {
    runs = kinds;
    return std::move(*this);
  }
  FlagSpec probe(RunKind kind, std::string value, std::string shows, std::string context = "") && {
    probes.push_back({kind, std::move(value), std::move(shows), std::move(context)});
    return std::move(*this);
  }
  FlagSpec no_probe(std::string why) && {
    unprobed = std::move(why);
    return std::move(*this);
  }
  FlagSpec unless(std::function<std::string(const Config&)> why_unused) && {
    unused = std::move(why_unused);
    return std::move(*this);
  }
};

constexpr unsigned S = kSynthetic, D = kRealData, A = kAllreduce, I = kInput, X = kNoRun;
constexpr unsigned training_runs = S | D;

// The run does not update weights: optimizer settings go unread.
std::string not_training(const Config& c) { return c.forward_only ? "forward-only runs do not train" : ""; }
std::string fp32_run(const Config& c) {
  return !c.use_fp16 && c.precision == "fp32" ? "only with --precision=bf16/fp16 or --use_fp16 (loss scaling)" : "";
}

int64_t to_int(const std::string& v) {
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size()) throw ConfigError("'" + printable(v) + "' is not an integer");
  return out;
}


bool to_bool(const std::string& v) {
  if (v == "true" || v == "True" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "False" || v == "0" || v == "no") return false;
  throw ConfigError("'" + printable(v) + "' is not true or false");
}

std::string real_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

void one_of(const std::string& v, std::initializer_list<const char*> allowed, const char* hint = nullptr) {
  std::string list;
  for (const char* a : allowed) {
    if (v == a) return;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw ConfigError("'" + printable(v) + "' is not one of " + list + (hint ? std::string(" (") + hint + ")" : ""));
}

#define INT_FLAG(field, check, help)                                                              \
  FlagSpec{#field, Kind::integer, help,                                                           \
           [](Config& c, const std::string& v) { c.field = to_int(v); check; },                   \
           [](const Config& c) { return std::to_string(c.field); }, 0, {}, {}, {}}
#define REAL_FLAG(field, check, help)                                                             \
  FlagSpec{#field, Kind::real, help, [](Config& c, const std::string& v) { c.field = parse_real(v); check; }, \
           [](const Config& c) { return real_text(c.field); }, 0, {}, {}, {}}
#define BOOL_FLAG(field, help)                                                                    \
  FlagSpec{#field, Kind::boolean, help, [](Config& c, const std::string& v) { c.field = to_bool(v); }, \
           [](const Config& c) { return std::string(c.field ? "true" : "false"); }, 0, {}, {}, {}}
#define TEXT_FLAG(field, check, help)                                                             \
  FlagSpec{#field, Kind::text, help, [](Config& c, const std::string& v) { c.field = v; check; }, \
           [](const Config& c) { return c.field; }, 0, {}, {}, {}}

void positive(int64_t v) {
  if (v < 1) throw ConfigError("must be at least 1, not " + std::to_string(v));
}
void non_negative(double v) {
  if (v < 0) throw ConfigError("must not be negative");
}
// The upper ends keep every product and conversion further on (steps x global batch, MiB to
// bytes, double to int64 or float) well inside its type; each flag's help names its range.
void at_most(int64_t v, int64_t most) {
  if (v > most) throw ConfigError("must be at most " + std::to_string(most) + ", not " + std::to_string(v));
}
void real_at_most(double v, double most) {
  char limit[32];
  std::snprintf(limit, sizeof(limit), "%.15g", most);  // 16777216, not 1.67772e+07
  if (v > most) throw ConfigError("must be at most " + std::string(limit) + ", not " + real_text(v));
}

const std::vector<FlagSpec>& flag_specs() {
  static const std::vector<FlagSpec> specs = [] {
    std::vector<FlagSpec> v;
    v.push_back(TEXT_FLAG(model, , "model to run (see --list_models)")
                    .reads(S | D | A | I)
                    .probe(kSynthetic, "small_cnn", "json:model.name")
                    .probe(kRealData, "resnet20_fmnist", "json:run.model")
                    .probe(kAllreduce, "resnet20", "json:run.model"));
    v.push_back(INT_FLAG(batch_size, non_negative(c.batch_size); at_most(c.batch_size, max_batch_size),
                         "images per rank per step, at most 65536; 0 = the model's default")
                    .reads(S | D | I)
                    .probe(kSynthetic, "8", "json:run.batch_size_per_rank")
                    .probe(kRealData, "32", "json:run.batch_size_per_rank")
                    .probe(kInput, "32", "json:run.batch_size"));
    v.push_back(INT_FLAG(num_batches, positive(c.num_batches); at_most(c.num_batches, max_steps); c.num_batches_set = true,
                         "timed steps, at most 10000000; with --data_dir, the steps to train (otherwise one epoch)")
                    .reads(S | D | I)
                    .probe(kSynthetic, "3", "json:run.timed_steps")
                    .probe(kRealData, "3", "json:summary.images")
                    .probe(kInput, "3", "json:result.images"));
    v.push_back(INT_FLAG(num_warmup_batches, if (c.num_warmup_batches < -1) throw ConfigError("must be >= 0");
                         at_most(c.num_warmup_batches, max_steps),
                         "untimed steps first, at most 10000000; -1 = min(10, max(1, num_batches / 4))")
                    .reads(S)
                    .probe(kSynthetic, "2", "json:run.warmup_steps"));
    v.push_back(REAL_FLAG(num_epochs, non_negative(c.num_epochs); real_at_most(c.num_epochs, max_epochs),
                          "epochs of the data set to run, at most 10000; overrides num_batches")
                    .reads(S | D | I)
                    .probe(kSynthetic, "0.00001", "json:run.timed_steps")
                    .probe(kRealData, "1", "json:summary.images"));
    v.push_back(INT_FLAG(display_every, positive(c.display_every); at_most(c.display_every, max_steps),
                         "print a step line every N steps (real data: the progress bar on a terminal)")
                    .reads(S | D | I)
                    .probe(kSynthetic, "1", "out:images/sec:"));
    v.push_back(INT_FLAG(repeats, positive(c.repeats); at_most(c.repeats, max_repeats),
                         "run the synthetic benchmark N times, each on a new plan with fresh memory and its own warm-up; "
                         "results are the median run's, with every run's images/sec and the spread, at most 1000")
                    .reads(S)
                    .probe(kSynthetic, "2", "json:repeats.count"));
    v.push_back(TEXT_FLAG(data_name,
                          if (!c.data_name.empty()) one_of(c.data_name, {"imagenet", "cifar10", "fashion_mnist"}),
                          "data set: imagenet, cifar10, fashion_mnist (default: the model's; it must be the model's)")
                    .reads(S | D | I)
                    .probe(kSynthetic, "cifar10", "exit"));
    v.push_back(TEXT_FLAG(data_dir, , "folder of real data; absent = synthetic data")
                    .reads(S | D | I)
                    .probe(kSynthetic, ".", "json:schema", "--model=small_cnn --batch_size=16"));
    v.push_back(BOOL_FLAG(forward_only, "time inference (forward) only, on synthetic data")
                    .reads(S)
                    .probe(kSynthetic, "true", "json:run.mode"));
    v.push_back(BOOL_FLAG(print_training_accuracy, "add top-1/top-5 training accuracy to step lines")
                    .reads(S)
                    .probe(kSynthetic, "true", "out:top_1_accuracy"));
    v.push_back(TEXT_FLAG(optimizer, one_of(c.optimizer, {"sgd", "momentum", "lars"},
                                            "cnnbench trains with SGD, with or without momentum, or LARS"),
                          "sgd, momentum, or lars (layer-wise rates for large batches; with --momentum)")
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "momentum", "json:steps.loss")
                    .probe(kRealData, "momentum", "json:epochs.0.train_loss", "--num_batches=3"));
    v.push_back(REAL_FLAG(label_smoothing,
                          if (!(c.label_smoothing >= 0 && c.label_smoothing < 1)) throw ConfigError("must be in [0, 1)"),
                          "label smoothing in [0, 1): the loss's target is 1 - s on the label and s / classes on every class")
                    .reads(training_runs)
                    .probe(kSynthetic, "0.1", "json:steps.loss"));
    v.push_back(REAL_FLAG(lars_eta, if (!(c.lars_eta > 0 && c.lars_eta <= 1)) throw ConfigError("must be in (0, 1]"),
                          "LARS trust coefficient eta in (0, 1] (optimizer=lars)")
                    .reads(training_runs)
                    .unless([](const Config& c) { return c.optimizer != "lars" ? "only with --optimizer=lars" : ""; })
                    .probe(kSynthetic, "0.01", "json:steps.loss", "--optimizer=lars"));
    v.push_back(REAL_FLAG(init_learning_rate, if (c.init_learning_rate <= 0) throw ConfigError("must be positive");
                          real_at_most(c.init_learning_rate, max_learning_rate),
                          "learning rate, at most 1000; default 0.1 x global batch / 256 (ImageNet), 0.1 (CIFAR-10, Fashion-MNIST), "
                          "trivial 0.0005")
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "0.5", "json:run.learning_rate")
                    .probe(kRealData, "0.5", "json:epochs.0.learning_rate"));
    v.push_back(REAL_FLAG(momentum, non_negative(c.momentum); real_at_most(c.momentum, 1),
                          "momentum in [0, 1] (optimizer=momentum or lars)")
                    .reads(training_runs)
                    .unless([](const Config& c) {
                      return c.optimizer == "sgd" ? "only with --optimizer=momentum or lars" : not_training(c);
                    })
                    .probe(kSynthetic, "0.5", "json:steps.loss", "--optimizer=momentum"));
    v.push_back(REAL_FLAG(weight_decay, non_negative(c.weight_decay); real_at_most(c.weight_decay, 1),
                          "L2 weight decay in [0, 1]")
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "0.1", "json:steps.loss"));
    v.push_back(BOOL_FLAG(nesterov, "Nesterov momentum (optimizer=momentum or lars)")
                    .reads(training_runs)
                    .unless([](const Config& c) {
                      return c.nesterov && c.optimizer == "sgd" ? "only with --optimizer=momentum or lars"
                                                                : not_training(c);
                    })
                    .probe(kSynthetic, "true", "json:steps.loss", "--optimizer=momentum"));
    v.push_back(TEXT_FLAG(backend, one_of(c.backend, {"onednn", "ref", "cuda"}),
                          "compute backend: onednn, ref (slow reference), or cuda (GPU; --device=gpu picks it)")
                    .reads(training_runs)
                    .probe(kSynthetic, "ref", "json:run.backend"));
    v.push_back(TEXT_FLAG(device, one_of(c.device, {"cpu", "gpu"}), "cpu, or gpu: one GPU per rank, chosen by local rank")
                    .reads(training_runs)
                    .probe(kSynthetic, "gpu", "json:run.backend"));
    v.push_back(BOOL_FLAG(cuda_graphs, "GPU: replay forward and backward as CUDA graphs (when gradients are not exchanged)")
                    .reads(training_runs)
                    .unless([](const Config& c) { return c.device != "gpu" ? "only with --device=gpu" : ""; })
                    .no_probe("needs a GPU: test_cuda_ops"));
    v.push_back(BOOL_FLAG(share_memory, "CPU: tensors whose lifetimes in a step do not overlap share bytes "
                                        "(--share_memory=false gives every tensor its own, to compare)")
                    .reads(training_runs)
                    .probe(kSynthetic, "false", "json:summary.working_memory_bytes"));
    v.push_back(INT_FLAG(num_gpus, if (c.num_gpus != 1) throw ConfigError(
                             "cnnbench runs one rank per GPU: launch N ranks (mpiexec -np N) instead of --num_gpus=N"),
                         "GPUs per rank (1; ranks on a host take GPU local_rank mod visible GPUs)")
                    .reads(training_runs)
                    .probe(kSynthetic, "2", "exit"));
    v.push_back(INT_FLAG(num_intra_threads, non_negative(c.num_intra_threads); at_most(c.num_intra_threads, max_threads),
                         "compute threads per rank, at most 1024 and at most 64 per CPU the rank may run on; 0 = the "
                         "CPUs the rank is bound to, or the host's shared among its ranks")
                    .reads(training_runs)
                    .probe(kSynthetic, "2", "json:run.threads_per_rank"));
    v.push_back(TEXT_FLAG(data_format, one_of(c.data_format, {"NCHW", "NHWC"}), "layout of the input images: NCHW or NHWC")
                    .reads(training_runs)
                    .probe(kSynthetic, "NHWC", "out:Data format:"));
    v.push_back(BOOL_FLAG(use_fp16, "compute in the half type the device runs fastest (bf16 on CPUs)")
                    .reads(training_runs)
                    .probe(kSynthetic, "true", "json:run.precision"));
    v.push_back(REAL_FLAG(fp16_loss_scale, non_negative(c.fp16_loss_scale); real_at_most(c.fp16_loss_scale, max_loss_scale),
                          "loss scale, at most 16777216 (2^24) (static; the initial scale with auto scaling, default "
                          "65536 then)")
                    .reads(training_runs)
                    .unless(fp32_run)
                    .probe(kSynthetic, "128", "json:summary.loss_scale", "--precision=bf16"));
    v.push_back(BOOL_FLAG(fp16_enable_auto_loss_scale, "dynamic loss scaling: halve on inf/NaN and skip the step")
                    .reads(training_runs)
                    .unless(fp32_run)
                    .probe(kSynthetic, "true", "json:summary.loss_scale", "--precision=bf16"));
    v.push_back(INT_FLAG(fp16_inc_loss_scale_every_n, positive(c.fp16_inc_loss_scale_every_n),
                         "double the dynamic loss scale after this many good steps")
                    .reads(training_runs)
                    .unless([](const Config& c) {
                      return !c.fp16_enable_auto_loss_scale ? "only with --fp16_enable_auto_loss_scale" : fp32_run(c);
                    })
                    .probe(kSynthetic, "1", "json:summary.loss_scale", "--precision=bf16 --fp16_enable_auto_loss_scale"));
    v.push_back(TEXT_FLAG(precision, one_of(c.precision, {"fp32", "bf16", "fp16"}),
                          "compute type: fp32, bf16 or fp16 (master weights, optimizer and loss stay fp32)")
                    .reads(training_runs)
                    .probe(kSynthetic, "bf16", "json:run.precision"));
    v.push_back(TEXT_FLAG(variable_update,
                          one_of(c.variable_update, {"horovod", "replicated", "independent"},
                                 "parameter_server and distributed_* need parameter servers, which cnnbench does not model"),
                          "horovod (averaged gradients by allreduce), replicated, independent")
                    .reads(training_runs)
                    .probe(kSynthetic, "independent", "json:run.variable_update"));
    v.push_back(TEXT_FLAG(allreduce, one_of(c.allreduce, {"mpi", "gloo", "nccl"}),
                          "allreduce backend: mpi or gloo (host memory), nccl (GPU memory, --device=gpu)")
                    .reads(S | D | A | I)
                    .probe(kAllreduce, "gloo", "json:run.backend"));
    v.push_back(REAL_FLAG(collective_timeout_sec,
                          if (!(c.collective_timeout_sec >= min_timeout_sec)) throw ConfigError("must be at least 1");
                          real_at_most(c.collective_timeout_sec, max_timeout_sec),
                          "end the job, naming the rank that did not arrive, when a collective has waited this many "
                          "seconds (1 to 86400)")
                    .reads(S | D | A | I)
                    .no_probe("shows only when a rank stops answering: tests/fault_trials.sh"));
    v.push_back(REAL_FLAG(fusion_threshold_mb, non_negative(c.fusion_threshold_mb);
                          real_at_most(c.fusion_threshold_mb, max_fusion_threshold_mb),
                          "gradient bucket size in MiB, at most 4096; 0 = one allreduce per tensor")
                    .reads(S | D | A)
                    .probe(kAllreduce, "1", "json:run.fusion_threshold_mb"));
    v.push_back(REAL_FLAG(first_layers_bucket_mb, non_negative(c.first_layers_bucket_mb);
                          real_at_most(c.first_layers_bucket_mb, max_fusion_threshold_mb),
                          "plan the buckets from the network's input: the first layers' bucket at most this many MiB, "
                          "each next one twice the one before, up to --fusion_threshold_mb; with --overlap_forward the "
                          "next forward starts once that small bucket is back (0 = off: buckets filled in backward order)")
                    .reads(training_runs)
                    .no_probe("buckets exist with 2 ranks: test_mpi_forward_overlap, test_bucket_plan"));
    v.push_back(BOOL_FLAG(hierarchical_allreduce,
                          "mpi, gloo: sum within each host first (shared memory), then across hosts from every rank's "
                          "share (needs the same number of ranks on every host)")
                    .reads(S | D | A)
                    .probe(kAllreduce, "true", "json:run.hierarchical"));
    v.push_back(BOOL_FLAG(overlap_forward,
                          "CPU, mpi/gloo: leave each bucket's update to the next forward pass, which applies it just "
                          "before the first layer that reads it, so gradients still on the wire overlap forward too "
                          "(bit-identical training)")
                    .reads(training_runs)
                    .no_probe("needs 2 ranks: test_mpi_forward_overlap"));
    v.push_back(BOOL_FLAG(forward_priority,
                          "with --overlap_forward: the communication thread sends the queued bucket the next forward "
                          "needs first (the first layers') instead of the oldest")
                    .reads(training_runs)
                    .unless([](const Config& c) { return !c.overlap_forward ? "only with --overlap_forward" : ""; })
                    .no_probe("needs 2 ranks: test_mpi_forward_overlap"));
    v.push_back(TEXT_FLAG(compression, one_of(c.compression, {"none", "fp16", "bf16", "powersgd"}),
                          "gradients on the wire: none (fp32), fp16, bf16, powersgd (low-rank factors with error "
                          "feedback, as PyTorch DDP's PowerSGD hook)")
                    .reads(S | D | A)
                    .probe(kAllreduce, "bf16", "json:run.type"));
    v.push_back(INT_FLAG(powersgd_rank, positive(c.powersgd_rank); at_most(c.powersgd_rank, 64),
                         "--compression=powersgd: rank of each gradient matrix's approximation (1 to 64; default 2)")
                    .reads(S | D | A)
                    .unless([](const Config& c) {
                      return c.compression != "powersgd" ? "only with --compression=powersgd" : "";
                    })
                    .no_probe("needs 2 ranks: test_mpi_allreduce, test_powersgd"));
    v.push_back(INT_FLAG(powersgd_warmup_steps, non_negative(c.powersgd_warmup_steps);
                         at_most(c.powersgd_warmup_steps, max_steps),
                         "--compression=powersgd: steps whose gradients are sent uncompressed first (default 10)")
                    .reads(training_runs)
                    .unless([](const Config& c) {
                      return c.compression != "powersgd" ? "only with --compression=powersgd" : "";
                    })
                    .probe(kSynthetic, "3", "json:run.warmup_steps", "--compression=powersgd"));
    v.push_back(TEXT_FLAG(baseline, ,
                          "JSON result of a reference run (e.g. 1 rank): report scaling efficiency against it")
                    .reads(training_runs)
                    .probe(kSynthetic, "base.json", "json:summary.scaling_efficiency"));
    v.push_back(TEXT_FLAG(mode, one_of(c.mode, {"train", "allreduce", "input"}),
                          "train; allreduce: the allreduce microbenchmark (4 KB to --allreduce_max_mb); input: the "
                          "input pipeline alone on --data_dir (images/sec it can deliver)")
                    .reads(S | D | A | I)
                    .probe(kSynthetic, "allreduce", "json:schema"));
    v.push_back(REAL_FLAG(allreduce_max_mb,
                          if (!(c.allreduce_max_mb >= 0.004 && c.allreduce_max_mb <= 1024))
                              throw ConfigError("must be in [0.004, 1024]"),
                          "largest message of the allreduce microbenchmark in MiB (default 256; less on slow links)")
                    .reads(A)
                    .probe(kAllreduce, "0.02", "json:sizes"));
    v.push_back(INT_FLAG(seed, if (static_cast<int64_t>(c.seed) < 0) throw ConfigError("must not be negative"),
                         "seed for weights and synthetic data")
                    .reads(training_runs)
                    .probe(kSynthetic, "2", "json:steps.loss"));
    v.push_back(TEXT_FLAG(piecewise_learning_rate_schedule, if (!c.piecewise_learning_rate_schedule.empty())
                              parse_piecewise_schedule(c.piecewise_learning_rate_schedule),
                          "rate;epoch;rate;...: e.g. 0.1;82;0.01;123;0.001 (synthetic runs: epochs of the data set's "
                          "size, as tf_cnn_benchmarks counts them)")
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "0.01;0.000001;0.5", "json:steps.learning_rate"));
    v.push_back(REAL_FLAG(num_learning_rate_warmup_epochs, non_negative(c.num_learning_rate_warmup_epochs);
                          real_at_most(c.num_learning_rate_warmup_epochs, max_epochs),
                          "linear warm-up of the learning rate over these epochs (at most 10000)")
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "1", "json:steps.learning_rate"));
    v.push_back(BOOL_FLAG(cosine_learning_rate, "cosine decay of the learning rate to zero over the run")
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "true", "json:steps.learning_rate"));
    v.push_back(INT_FLAG(learning_rate_base_batch, non_negative(c.learning_rate_base_batch);
                         at_most(c.learning_rate_base_batch, max_global_batch),
                         "scale the learning rate by global batch / this, at most 16777216 (0: no scaling)")
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "64", "json:steps.learning_rate"));
    v.push_back(REAL_FLAG(eval_during_training_every_n_epochs, non_negative(c.eval_during_training_every_n_epochs);
                          real_at_most(c.eval_during_training_every_n_epochs, max_epochs),
                          "evaluate on the test set every N epochs, at most 10000 (0: at the end only)")
                    .reads(D)
                    .probe(kRealData, "1", "json:epochs.0.test_top1"));
    v.push_back(REAL_FLAG(stop_at_top_1_accuracy,
                          if (c.stop_at_top_1_accuracy < 0 || c.stop_at_top_1_accuracy > 1)
                              throw ConfigError("must be in [0, 1]"),
                          "stop training once test top-1 accuracy reaches this (and report the time to reach it)")
                    .reads(D)
                    .probe(kRealData, "0.01", "out:Reached test top-1", "--eval_during_training_every_n_epochs=1"));
    v.push_back(REAL_FLAG(target_top_1_accuracy,
                          if (c.target_top_1_accuracy < 0 || c.target_top_1_accuracy > 1)
                              throw ConfigError("must be in [0, 1]"),
                          "report the seconds, epochs and images until test top-1 first reaches this "
                          "(time-to-accuracy); training goes on")
                    .reads(D)
                    .probe(kRealData, "0.01", "json:time_to_accuracy", "--eval_during_training_every_n_epochs=1"));
    v.push_back(TEXT_FLAG(train_augmentation, one_of(c.train_augmentation, {"auto", "none", "crop_flip"}),
                          "CIFAR-10 and Fashion-MNIST training images: auto (CIFAR-10 crop_flip, Fashion-MNIST none), "
                          "none, crop_flip (4-pixel zero pad, random crop, horizontal flip)")
                    .reads(D | I)
                    .probe(kRealData, "crop_flip", "json:epochs.0.train_loss"));
    v.push_back(INT_FLAG(num_data_workers, positive(c.num_data_workers); at_most(c.num_data_workers, max_data_workers),
                         "input pipeline threads per rank, at most 64 (each keeps batches in flight)")
                    .reads(D | I)
                    .probe(kRealData, "2", "json:input.workers")
                    .probe(kInput, "2", "json:run.workers_per_rank"));
    v.push_back(INT_FLAG(datasets_shuffle_buffer_size, positive(c.datasets_shuffle_buffer_size);
                         at_most(c.datasets_shuffle_buffer_size, max_shuffle_buffer),
                         "TFRecord training: records in the shuffle buffer per rank (about 110 kB each for ImageNet), "
                         "at most 1000000")
                    .reads(D | I)
                    .no_probe("TFRecord shards only: test_tfrecord"));
    v.push_back(BOOL_FLAG(resume, "continue from the newest checkpoint of this run in --train_dir")
                    .reads(D)
                    .probe(kRealData, "true", "out:t/checkpoint-epoch-0001.ckpt", "--train_dir=t"));
    v.push_back(TEXT_FLAG(train_dir, , "folder for checkpoints (one per epoch, real data); it belongs to the run "
                                       "that made it (see --resume, --overwrite_train_dir)")
                    .reads(D)
                    .probe(kRealData, "t", "path"));
    v.push_back(BOOL_FLAG(overwrite_train_dir,
                          "start afresh in a --train_dir that holds another run's checkpoints (or, without --resume, "
                          "any): they are removed first")
                    .reads(D)
                    .unless([](const Config& c) { return c.train_dir.empty() ? "only with --train_dir" : ""; })
                    .no_probe("needs a train_dir of another run: Cli.TrainDirBelongsToItsRun"));
    v.push_back(BOOL_FLAG(allow_nonfinite_loss,
                          "go on when the loss is NaN or infinite (a diverged run otherwise ends, exit 3, naming the "
                          "step; steps the dynamic loss scaler skips are not that)")
                    .reads(training_runs)
                    .probe(kSynthetic, "true", "exit", "--init_learning_rate=1000 --num_batches=20"));
    v.push_back(TEXT_FLAG(benchmark_log_dir, if (c.benchmark_log_dir.empty()) throw ConfigError("must not be empty"),
                          "folder for results.csv and the JSON results")
                    .reads(S | D | A | I)
                    .probe(kSynthetic, "logs2", "path"));
    v.push_back(TEXT_FLAG(result_json, ,
                          "path of the JSON result (default: a new name in benchmark_log_dir); an existing file is "
                          "replaced only if it is a cnnbench result")
                    .reads(S | D | A | I)
                    .probe(kSynthetic, "x.json", "path"));
    v.push_back(TEXT_FLAG(summary_dir, ,
                          "write TensorBoard event files (scalars by step and epoch) into this folder, rank 0")
                    .reads(training_runs)
                    .probe(kSynthetic, "sum", "path"));
    v.push_back(INT_FLAG(summary_verbosity, if (c.summary_verbosity < 0 || c.summary_verbosity > 3)
                             throw ConfigError("must be 0, 1, 2 or 3");,
                         "0: no event files; 1-3: the scalars (as tf_cnn_benchmarks' 1; cnnbench writes no histograms)")
                    .reads(training_runs)
                    .unless([](const Config& c) { return c.summary_dir.empty() ? "only with --summary_dir" : ""; })
                    .probe(kSynthetic, "0", "out:summaries", "--summary_dir=sum"));
    v.push_back(INT_FLAG(save_summaries_steps, positive(c.save_summaries_steps); at_most(c.save_summaries_steps, max_steps),
                         "write the step scalars every N steps (synthetic runs: at each display point, for the steps since)")
                    .reads(training_runs)
                    .unless([](const Config& c) { return c.summary_dir.empty() ? "only with --summary_dir" : ""; })
                    .probe(kSynthetic, "2", "out:summaries", "--summary_dir=sum"));
    v.push_back(TEXT_FLAG(timeline, ,
                          "write a Chrome trace (Perfetto, chrome://tracing) of every rank's steps, buckets and updates")
                    .reads(training_runs)
                    .probe(kSynthetic, "t.json", "path"));
    v.push_back(BOOL_FLAG(layer_timing, "print forward/backward time per layer")
                    .reads(S)
                    .probe(kSynthetic, "true", "json:layers"));
    v.push_back(BOOL_FLAG(peak, "measure this machine's FMA peak GFLOP/s (--precision, --num_intra_threads) and exit")
                    .reads(X)
                    .probe(kSynthetic, "true", "out:GFLOP/s"));
    v.push_back(BOOL_FLAG(list_models, "list the models and exit").reads(X).probe(kSynthetic, "true", "out:resnet50"));
    v.push_back(BOOL_FLAG(help, "print this help and exit").reads(X).probe(kSynthetic, "true", "out:usage:"));
    return v;
  }();
  return specs;
}

const FlagSpec* find_flag(const std::string& name) {
  for (const FlagSpec& f : flag_specs())
    if (name == f.name) return &f;
  return nullptr;
}

}  // namespace

RunKind run_kind(const Config& config) {
  if (config.help || config.list_models || config.peak) return kNoRun;
  if (config.mode == "allreduce") return kAllreduce;
  if (config.mode == "input") return kInput;
  return config.data_dir.empty() ? kSynthetic : kRealData;
}

const char* run_kind_name(RunKind kind) {
  switch (kind) {
    case kSynthetic: return "synthetic-data runs";
    case kRealData: return "runs on real data (--data_dir)";
    case kAllreduce: return "--mode=allreduce";
    case kInput: return "--mode=input";
    case kNoRun: return "--help, --list_models and --peak";
  }
  return "?";
}

std::vector<FlagInfo> flag_table() {
  std::vector<FlagInfo> out;
  for (const FlagSpec& f : flag_specs()) out.push_back({f.name, f.runs, f.probes, f.unprobed});
  return out;
}

std::vector<std::string> flag_notes(const Config& config) {
  const RunKind kind = run_kind(config);
  std::vector<std::string> notes;
  for (const std::string& name : config.given) {
    if (std::find(config.given.begin(), config.given.end(), name) - config.given.begin() !=
        &name - config.given.data())
      continue;  // given twice (a config file and a flag): one note
    const FlagSpec* f = find_flag(name);
    if (!f || kind == kNoRun) continue;
    std::string why;
    if (!(f->runs & kind)) {
      std::string where;
      for (RunKind k : {kSynthetic, kRealData, kAllreduce, kInput, kNoRun})
        if (f->runs & k) where += (where.empty() ? "" : ", ") + std::string(run_kind_name(k));
      why = "applies to " + where + ", not " + run_kind_name(kind);
    } else if (f->unused) {
      why = f->unused(config);
    }
    if (!why.empty()) notes.push_back("--" + name + ": " + why + "; ignored");
  }
  return notes;
}

PiecewiseSchedule parse_piecewise_schedule(const std::string& text) {
  const std::string flag;  // the flag names itself in the message around this one
  std::vector<double> values;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(';', start);
    const std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    try {
      values.push_back(parse_real(item));
    } catch (const ConfigError& e) {
      throw ConfigError(flag + e.what());
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (values.size() % 2 == 0)
    throw ConfigError(flag + "expected rate;epoch;rate;...;rate (an odd count of numbers)");
  PiecewiseSchedule out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i % 2 == 0) {
      if (values[i] <= 0) throw ConfigError(flag + "rates must be positive");
      if (values[i] > max_learning_rate) throw ConfigError(flag + "rates must be at most 1000");
      out.rates.push_back(values[i]);
    } else {
      if (values[i] <= 0) throw ConfigError(flag + "epochs must be positive");
      if (values[i] > max_epochs) throw ConfigError(flag + "epochs must be at most 10000");
      if (!out.boundaries.empty() && values[i] <= out.boundaries.back())
        throw ConfigError(flag + "epochs must increase");
      out.boundaries.push_back(values[i]);
    }
  }
  return out;
}

double parse_real(const std::string& v) {
  // strtod, not stod: a value too small for a double (1e-320) is a number, read as the nearest
  // one (stod throws for it); only text that is not a number, or one beyond a double, is refused
  const bool blank = v.empty() || std::isspace(static_cast<unsigned char>(v[0]));
  char* end = nullptr;
  errno = 0;
  const double out = blank ? 0 : std::strtod(v.c_str(), &end);
  if (blank || end != v.c_str() + v.size() || std::isnan(out) || (std::isinf(out) && errno != ERANGE))
    throw ConfigError("'" + printable(v) + "' is not a number");
  if (std::isinf(out)) throw ConfigError("'" + printable(v) + "' is out of range (a double holds at most 1.8e308)");
  return out;
}

void apply_flag(Config& config, const std::string& name, const std::string& value, const std::string& source) {
  const FlagSpec* spec = find_flag(name);
  if (!spec) throw ConfigError(printable(source) + ": unknown flag '" + printable(name) + "' (see --help)");
  try {
    spec->set(config, value);
  } catch (const ConfigError& e) {
    throw ConfigError(source + ": " + e.what());
  }
  config.given.push_back(name);
}

void apply_config_file(const std::string& path, Config& config) {
  // at most 1 MiB of a regular file: a config is a page of keys, and /dev/zero or a pipe is not one
  std::string text;
  try {
    text = read_bounded_file(path, 1 << 20, "a cnnbench config");
  } catch (const BoundedFileError& e) {
    throw ConfigError(e.what());
  }
  apply_config_text(text, path, config);
}

void apply_config_text(const std::string& text, const std::string& path_as_given, Config& config) {
  const std::string path = printable(path_as_given, 4096);  // in errors
  toml::table table;
  try {
    table = toml::parse(shield_from_toml(text, path), path_as_given);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw ConfigError(path + ":" + std::to_string(where.line) + ": " +
                      printable(unshield_from_toml(std::string(e.description())), 300));
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception& e) {
    throw ConfigError(path + ": " + printable(e.what(), 300));
  }
  for (const auto& [key, node] : table) {
    const std::string name = unshield_from_toml(std::string(key.str()));
    const std::string source = path + ": key '" + printable(name) + "'";
    const FlagSpec* spec = find_flag(name);
    if (!spec || name == "config") throw ConfigError(path + ": unknown key '" + printable(name) + "'");
    std::string value;
    if (auto v = node.value_exact<int64_t>(); v && (spec->kind == Kind::integer || spec->kind == Kind::real))
      value = std::to_string(*v);
    else if (auto d = node.value_exact<double>(); d && spec->kind == Kind::real)
      value = real_text(*d);
    else if (auto b = node.value_exact<bool>(); b && spec->kind == Kind::boolean)
      value = *b ? "true" : "false";
    else if (auto s = node.value_exact<std::string>(); s && spec->kind == Kind::text)
      value = unshield_from_toml(*s);
    else
      throw ConfigError(source + ": wrong type for this setting");
    apply_flag(config, name, value, source);
  }
}

Config parse_command_line(int argc, const char* const* argv) {
  struct Item {
    std::string name, value;
  };
  std::vector<Item> items;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      throw ConfigError("unexpected argument '" + printable(arg) + "' (flags look like --name=value)");
    arg = arg.substr(2);
    const size_t eq = arg.find('=');
    Item item;
    if (eq != std::string::npos) {
      item = {arg.substr(0, eq), arg.substr(eq + 1)};
    } else {
      item.name = arg;
      const FlagSpec* spec = find_flag(item.name);
      const bool is_bool = spec && spec->kind == Kind::boolean;
      const bool next_is_value = i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0;
      if (item.name == "config" || (!is_bool && spec)) {
        if (!next_is_value) throw ConfigError("flag --" + printable(item.name) + " needs a value");
        item.value = argv[++i];
      } else if (is_bool && next_is_value &&
                 (std::string(argv[i + 1]) == "true" || std::string(argv[i + 1]) == "false" ||
                  std::string(argv[i + 1]) == "True" || std::string(argv[i + 1]) == "False")) {
        item.value = argv[++i];
      } else {
        item.value = "true";
      }
    }
    items.push_back(item);
  }
  Config config;
  for (const Item& item : items)
    if (item.name == "config") {
      config.config_file = item.value;
      apply_config_file(item.value, config);
    }
  for (const Item& item : items)
    if (item.name != "config") apply_flag(config, item.name, item.value, "--" + item.name);
  resolve_device(config);
  return config;
}

void resolve_device(Config& config) {
  auto given = [&](const char* name) {
    return std::find(config.given.begin(), config.given.end(), name) != config.given.end();
  };
  if (config.use_fp16 && given("precision") && config.precision == "fp32")
    throw ConfigError("--use_fp16 asks for half precision, --precision=fp32 for none: give one of them");
  if (!config.piecewise_learning_rate_schedule.empty() && config.cosine_learning_rate)
    throw ConfigError("--piecewise_learning_rate_schedule and --cosine_learning_rate exclude each other");
  if (config.forward_only && !config.data_dir.empty())
    throw ConfigError("--forward_only: times inference on synthetic data; a --data_dir run trains and evaluates "
                      "(leave out one of them)");
  if (config.data_dir.empty() && config.mode == "train" && !config.train_dir.empty())
    throw ConfigError("--train_dir: checkpoints are written when training on real data (--data_dir)");
  if (config.data_dir.empty() && config.mode == "train" && config.resume)
    throw ConfigError("--resume: needs --data_dir and --train_dir");
  if (config.resume && config.train_dir.empty() && !config.data_dir.empty())
    throw ConfigError("--resume: needs --train_dir (the folder of the run's checkpoints)");

  if (config.device == "gpu" && config.backend == "onednn") config.backend = "cuda";
  if (config.backend == "cuda") config.device = "gpu";
  if (config.device == "gpu" && config.backend != "cuda")
    throw ConfigError("--device=gpu runs the cuda backend, not --backend=" + config.backend);
  if (config.compression == "powersgd" && config.allreduce == "nccl")
    throw ConfigError("--compression=powersgd runs on the host allreduce (mpi, gloo), not nccl");
  if (config.hierarchical_allreduce && config.allreduce == "nccl")
    throw ConfigError("--hierarchical_allreduce sums in host memory (mpi, gloo), not nccl");
  if (config.first_layers_bucket_mb > 0 && config.fusion_threshold_mb == 0)
    throw ConfigError("--first_layers_bucket_mb: with --fusion_threshold_mb=0 every tensor is a bucket already");
  if (config.overlap_forward && config.device == "gpu")
    throw ConfigError("--overlap_forward: CPU ranks (mpi, gloo); on a GPU the update is ordered after each bucket's "
                      "allreduce on the device's streams already");
  if (config.overlap_forward && (config.fp16_loss_scale > 0 || config.fp16_enable_auto_loss_scale))
    throw ConfigError("--overlap_forward: not with loss scaling, which must see every bucket finite before any update");
  if (config.allreduce == "nccl" && config.device != "gpu")
    throw ConfigError("--allreduce=nccl reduces gradients in GPU memory: use it with --device=gpu");
  if (config.repeats > 1 && config.mode == "allreduce")
    throw ConfigError("--repeats: repeats the training benchmark, not --mode=allreduce");
  if (config.mode == "input" && config.data_dir.empty())
    throw ConfigError("--mode=input: measures the input pipeline on real data; give --data_dir");
  if (config.mode == "input" && config.device == "gpu")
    throw ConfigError("--mode=input: runs the input pipeline on the host's cores alone; leave out --device=gpu");
  if (config.repeats > 1 && config.mode == "input")
    throw ConfigError("--repeats: repeats the training benchmark, not --mode=input");
  if (config.repeats > 1 && !config.data_dir.empty())
    throw ConfigError("--repeats: repeats the synthetic benchmark; a --data_dir run trains once");
}

std::string usage() {
  std::ostringstream s;
  s << "usage: cnnbench [--config FILE.toml] [--flag=value | --flag value]...\n"
       "       mpiexec -np N cnnbench ...   (one rank per process)\n"
       "       cnnbench compare BASE NEW [--tolerance=PCT] [--check_only] [--json]   (cnnbench compare --help)\n"
       "       cnnbench make_tfrecords JPEG_ROOT OUT_DIR [--train_shards=N] ...   (cnnbench make_tfrecords --help)\n\nflags:\n";
  const Config defaults;
  for (const FlagSpec& f : flag_specs()) {
    std::string name = std::string("  --") + f.name;
    name.resize(std::max<size_t>(name.size() + 1, 28), ' ');
    const std::string d = f.get(defaults);
    s << name << f.help << (d.empty() ? "" : " [" + d + "]") << "\n";
  }
  s << "  --config FILE               TOML file setting the same keys; flags override it\n";
  return s.str();
}

std::vector<std::pair<std::string, std::string>> config_values(const Config& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const FlagSpec& f : flag_specs())
    if (std::string(f.name) != "help" && std::string(f.name) != "list_models") out.emplace_back(f.name, f.get(config));
  out.emplace_back("config", config.config_file);
  return out;
}

}  // namespace cnnbench
