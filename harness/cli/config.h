// harness/cli/config.h — Config: every setting of a run, with tf_cnn_benchmarks' flag names and
// meanings. Set from a TOML file (--config) and then from the command line, which wins.
// parse_command_line() throws ConfigError with one line naming the flag or key and the reason.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/cli/limits.h"
#include "harness/cli/printable.h"

namespace cnnbench {

struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Config {
  // what to run
  std::string model = "trivial";
  int64_t batch_size = 0;          // per rank; 0 = the model's default
  int64_t num_batches = 100;
  bool num_batches_set = false;    // given: a --data_dir run trains that many steps, not an epoch
  int64_t num_warmup_batches = -1; // -1 = min(10, max(1, num_batches / 4))
  double num_epochs = 0;           // > 0 overrides num_batches
  int64_t display_every = 10;
  std::string progress_bar = "auto";  // real data: auto (a terminal outside a launcher) | true | false
  int64_t repeats = 1;             // whole runs of the synthetic benchmark; results: the median one
  std::string data_name;           // imagenet, cifar10, fashion_mnist; empty = the model's
  std::string data_dir;            // empty = synthetic data
  bool forward_only = false;
  bool print_training_accuracy = false;
  // optimizer
  std::string optimizer = "sgd";   // sgd | momentum | lars
  double lars_eta = 0.001;         // LARS trust coefficient (MLPerf's ResNet-50 reference)
  double label_smoothing = 0;      // target (1 - s) on the label, s / classes on every class
  double init_learning_rate = -1;  // < 0 = 0.1 x global batch / 256 (ImageNet), 0.1 otherwise
  double momentum = 0.9;
  double weight_decay = 4e-5;
  bool weight_decay_on_batch_norm = false;  // tf_cnn_benchmarks leaves batch norm's out of its L2 loss
  bool nesterov = false;  // not given: true with --optimizer=momentum (tf_cnn_benchmarks'), else false
  // compute
  std::string backend = "onednn";   // onednn | ref | cuda (set by --device=gpu)
  std::string device = "cpu";       // cpu | gpu
  int64_t num_gpus = 1;             // GPUs per rank: one (ranks take GPUs by local rank)
  bool cuda_graphs = false;         // replay forward and backward as CUDA graphs (NCCL allreduces inside)
  std::string algorithm_cache;      // GPU: a file that keeps the timed algorithm search's choices between runs
  bool share_memory = true;         // CPU: tensors whose lifetimes do not overlap share bytes
  bool fuse_ops = true;             // let the backend fuse ops (false: each op alone, to compare)
  int64_t num_intra_threads = 0;   // 0 = every CPU this rank may run on
  std::string data_format = "NCHW";// layout of the input batch: NCHW | NHWC
  bool use_fp16 = false;            // the device's fast half type: bf16 on this CPU
  std::string precision = "fp32";   // fp32 | bf16 | fp16 (compute type of activations)
  double fp16_loss_scale = 0;        // > 0: static loss scale (initial scale when auto)
  bool fp16_enable_auto_loss_scale = false;
  int64_t fp16_inc_loss_scale_every_n = 1000;
  std::string variable_update = "horovod";
  // distributed
  std::string allreduce = "mpi";        // mpi | gloo | nccl
  double fusion_threshold_mb = 16;      // bucket size; 0 = one allreduce per tensor
  double first_layers_bucket_mb = 0;    // > 0: buckets planned from the input side, the first this size
  double allreduce_max_mb = 256;        // largest size of --mode=allreduce
  bool hierarchical_allreduce = false;  // sum within each host first, then across hosts
  bool overlap_forward = false;         // updates wait for the next forward pass, layer by layer
  bool forward_priority = true;         // with overlap_forward: send the first layers' buckets first
  std::string compression = "none";     // none | fp16 | bf16 (wire type of gradients) | powersgd
  int64_t powersgd_rank = 2;            // PowerSGD: columns of the low-rank factors
  int64_t powersgd_warmup_steps = 10;   // PowerSGD: steps sent uncompressed first
  double collective_timeout_sec = 300;  // a collective stuck this long ends the job, naming the rank
  std::string baseline;                 // JSON result of a reference run, for scaling efficiency
  std::string mode = "training";        // training ("train" is taken too) | allreduce | input
  uint64_t seed = 1;
  int64_t num_classes = 0;              // the head's outputs; 0: the model's (1001 on ImageNet TFRecord shards)
  // convergence (real data)
  std::string piecewise_learning_rate_schedule;  // "rate;epoch;rate;...": tf_cnn_benchmarks' form
  double num_learning_rate_warmup_epochs = 0;
  bool cosine_learning_rate = false;
  int64_t learning_rate_base_batch = 0;  // > 0: rate x global batch / this (linear scaling)
  double eval_during_training_every_n_epochs = 0;  // 0 = evaluate once, at the end
  double stop_at_top_1_accuracy = 0;     // stop once test top-1 reaches this (0..1)
  double target_top_1_accuracy = 0;      // report the time, epochs and images to reach this (0..1)
  std::string train_augmentation = "auto";  // auto (the data set's recipe) | none | crop_flip
  int64_t num_data_workers = 2;          // input threads per rank
  int64_t datasets_shuffle_buffer_size = 10000;  // TFRecord training: records shuffled per rank
  bool resume = false;                   // continue from the newest valid checkpoint in train_dir
  bool overwrite_train_dir = false;      // start afresh in a train_dir holding another run's checkpoints
  int64_t save_model_steps = 0;          // > 0: a checkpoint inside the epoch every this many steps
  double save_model_secs = 0;            // > 0: a checkpoint inside the epoch every this many seconds
  int64_t max_ckpts_to_keep = 5;         // the newest checkpoints kept in train_dir (0: all)
  bool allow_nonfinite_loss = false;     // a NaN/inf loss ends the run (non-zero) unless this is set
  // output
  std::string train_dir;
  std::string benchmark_log_dir = "cnnbench_results";
  std::string result_json;         // empty = <benchmark_log_dir>/<model>_<time>_<pid>.json
  bool layer_timing = false;
  std::string summary_dir;         // TensorBoard event files; empty = none
  int64_t summary_verbosity = 1;   // 0 = none; 1-3 = the scalars
  int64_t save_summaries_steps = 1;
  std::string timeline;            // Chrome trace-event JSON of the run (--timeline=FILE), rank 0 writes
  // modes
  bool peak = false;               // measure the FMA peak and exit
  bool list_models = false;
  bool version = false;             // print the build and exit
  bool list_result_fields = false;  // the result record's fields as JSON, and exit
  bool help = false;
  std::string config_file;
  std::vector<std::string> given;  // the flags set by the command line or the config file, in order
  // tf_cnn_benchmarks' flags cnnbench has no counterpart for (harness/cli/tf_cnn_flags.h), as
  // given: name and value, each named in a note
  std::vector<std::pair<std::string, std::string>> tf_cnn_noted;

  bool was_given(const std::string& name) const {
    return std::find(given.begin(), given.end(), name) != given.end();
  }
  // A --data_dir run given --num_batches (never beside --num_epochs) is a benchmark on real data:
  // it trains that many steps and evaluates only where --eval_during_training_every_n_epochs asks
  bool steps_benchmark() const { return num_batches_set && num_epochs == 0; }
  bool evaluates_test_set() const { return !steps_benchmark() || eval_during_training_every_n_epochs > 0; }
};

// The kinds of run a flag can apply to (a flag table's `runs`): the synthetic training benchmark
// (training or forward-only), training on real data (--data_dir), --mode=allreduce, --mode=input,
// and the flags that print something and exit before any run (--help, --list_models,
// --list_result_fields, --peak).
enum RunKind : unsigned { kSynthetic = 1, kRealData = 2, kAllreduce = 4, kInput = 8, kNoRun = 16 };
RunKind run_kind(const Config& config);
const char* run_kind_name(RunKind kind);

// How a test shows that a flag does something where the table says it is read: in a run of
// `kind`, setting the flag to `value` (with `context` flags on both sides) changes `shows`:
// "json:PATH" (a value in the run's result JSON, dotted path), "out:TEXT" (the output lines
// holding TEXT), "path" (the flag's value names a file or folder the run makes) or "exit".
struct FlagProbe {
  RunKind kind;
  std::string value, shows, context;
};
struct FlagInfo {
  std::string name;
  unsigned runs = 0;             // RunKind bits
  std::vector<FlagProbe> probes;
  std::string unprobed;          // why no probe can show it here (a GPU, 2 ranks, ...), if none
};
// The flag table as data, in --help's order (tests walk it).
std::vector<FlagInfo> flag_table();
// One line for each flag the user gave that this run does not read, and why ("--nesterov: only
// with --optimizer=momentum or lars; ignored"), and one for each tf_cnn_benchmarks flag that does
// not apply here ("--xla=true: tf_cnn_benchmarks' flag, TensorFlow's XLA compiler; ...; not used").
std::vector<std::string> flag_notes(const Config& config);
// The same for the gradient exchange's flags given to a run that exchanges no gradients (one
// rank, forward only, --variable_update=independent), saying which.
std::vector<std::string> exchange_flag_notes(const Config& config, int ranks, bool training);
// Whether a run exchanges gradients: more than one rank, training, not --variable_update=independent.
bool exchanges_gradients(const Config& config, int ranks, bool training);

// tf_cnn_benchmarks' piecewise schedule "rate;epoch;rate;...;rate": rates in (0, 1000], epochs
// positive and increasing; throws ConfigError naming the flag and the problem.
struct PiecewiseSchedule {
  std::vector<double> rates, boundaries;
};
PiecewiseSchedule parse_piecewise_schedule(const std::string& text);

// Applies the TOML file named by --config (if any), then every flag. argv[0] is skipped.
Config parse_command_line(int argc, const char* const* argv);
// --device=gpu means the cuda backend and --backend=cuda means the GPU; throws ConfigError for
// combinations that contradict each other (nccl on the CPU, gpu with a CPU backend, --repeats
// with what it does not repeat).
void resolve_device(Config& config);
// Applies one TOML file's keys (the flag names) to `config`.
void apply_config_file(const std::string& path, Config& config);
// The same for a TOML document already read; `path` names it in errors.
void apply_config_text(const std::string& text, const std::string& path, Config& config);
// Applies one flag value, validated, as if given as --name=value.
void apply_flag(Config& config, const std::string& name, const std::string& value, const std::string& source);

// A whole string as a finite number; throws ConfigError("'v' is not a number") otherwise.
double parse_real(const std::string& value);

std::string usage();
// name=value for every setting, for the JSON result.
std::vector<std::pair<std::string, std::string>> config_values(const Config& config);

}  // namespace cnnbench
