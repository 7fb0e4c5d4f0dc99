// harness/cli/flag_table.cc — the flag table: each flag's default, bounds, help, the runs that
// read it and the probes that show it; flag_spec.cc holds what reads a row.
#include "harness/cli/flag_spec.h"

#include <algorithm>

namespace cnnbench {
namespace {

constexpr unsigned S = kSynthetic, D = kRealData, A = kAllreduce, I = kInput, X = kNoRun;
constexpr unsigned training_runs = S | D;

// The run does not update weights: optimizer settings go unread.
std::string not_training(const Config& c) { return c.forward_only ? "forward-only runs do not train" : ""; }
// Loss scaling: half-precision training alone (make_loss_scaler makes no scaler otherwise).
std::string fp32_run(const Config& c) {
  if (c.forward_only) return "forward-only runs have no gradients to scale";
  return !c.use_fp16 && c.precision == "fp32" ? "only with --precision=bf16/fp16 or --use_fp16 (loss scaling)" : "";
}

// The reference backend runs each op alone, on tensors of its own (ref_plan.cc).
std::string ref_backend(const Config& c) {
  return c.backend == "ref" ? "the ref backend runs each op alone on tensors of its own" : "";
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
           [](Config& c, const std::string& v) { c.field = flag_integer(v); check; },              \
           [](const Config& c) { return std::to_string(c.field); }, 0, {}, {}, {}, false, 0, 0, {}}
#define REAL_FLAG(field, check, help)                                                             \
  FlagSpec{#field, Kind::real, help, [](Config& c, const std::string& v) { c.field = parse_real(v); check; }, \
           [](const Config& c) { return real_text(c.field); }, 0, {}, {}, {}, false, 0, 0, {}}
#define BOOL_FLAG(field, help)                                                                    \
  FlagSpec{#field, Kind::boolean, help, [](Config& c, const std::string& v) { c.field = flag_boolean(v); }, \
           [](const Config& c) { return std::string(c.field ? "true" : "false"); }, 0, {}, {}, {}, false, 0, 0, {}}
#define TEXT_FLAG(field, check, help)                                                             \
  FlagSpec{#field, Kind::text, help, [](Config& c, const std::string& v) { c.field = v; check; }, \
           [](const Config& c) { return c.field; }, 0, {}, {}, {}, false, 0, 0, {}}

void positive(int64_t v) {
  if (v < 1) throw ConfigError("must be at least 1, not " + std::to_string(v));
}
}  // namespace

const std::vector<FlagSpec>& flag_specs() {
  static const std::vector<FlagSpec> specs = [] {
    std::vector<FlagSpec> v;
    v.push_back(TEXT_FLAG(model, , "model to run (see --list_models)")
                    .reads(S | D | A | I)
                    .probe(kSynthetic, "small_cnn", "json:model.name")
                    .probe(kRealData, "resnet20_fmnist", "json:run.model")
                    .probe(kAllreduce, "resnet20", "json:run.model"));
    v.push_back(INT_FLAG(batch_size, , "images per rank per step; 0 = the model's default")
                    .within(0, max_batch_size)
                    .reads(S | D | I)
                    .probe(kSynthetic, "8", "json:run.batch_size_per_rank")
                    .probe(kRealData, "32", "json:run.batch_size_per_rank")
                    .probe(kInput, "32", "json:run.batch_size"));
    v.push_back(INT_FLAG(num_batches, c.num_batches_set = true, "timed steps; with --data_dir, the steps to train (otherwise one epoch)")
                    .within(1, max_steps)
                    .reads(S | D | I)
                    .probe(kSynthetic, "3", "json:run.timed_steps")
                    .probe(kRealData, "3", "json:summary.images")
                    .probe(kInput, "3", "json:result.images"));
    v.push_back(INT_FLAG(num_warmup_batches, , "untimed steps first; -1 = min(10, max(1, num_batches / 4))")
                    .within(-1, max_steps)
                    .reads(S | I)
                    .probe(kSynthetic, "2", "json:run.warmup_steps"));
    v.push_back(REAL_FLAG(num_epochs, , "epochs of the data set to run (instead of --num_batches)")
                    .within(0, max_epochs)
                    .reads(S | D | I)
                    .probe(kSynthetic, "0.00001", "json:run.timed_steps")
                    .probe(kRealData, "2", "json:summary.images"));
    v.push_back(INT_FLAG(display_every, , "print a step line every N steps (real data: the progress bar on a terminal)")
                    .within(1, max_steps)
                    .reads(S | D | I)
                    .probe(kSynthetic, "1", "out:images/sec:"));
    v.push_back(TEXT_FLAG(progress_bar, one_of(c.progress_bar, {"auto", "true", "false"}),
                          "real data: the progress bar on rank 0's terminal; auto: not under a launcher (mpiexec "
                          "gives a rank a terminal even when the output goes to a file), true: there too, false: never")
                    .reads(D)
                    .no_probe("needs a terminal: Cli.ProgressBarOnlyWhereAPersonWatches runs it under script"));
    v.push_back(INT_FLAG(repeats, , "run the synthetic benchmark N times, each on a new plan with fresh memory and its own warm-up; "
                         "results are the median run's, with every run's images/sec and the spread")
                    .within(1, max_repeats)
                    .reads(S)
                    .probe(kSynthetic, "2", "json:repeats.count"));
    v.push_back(TEXT_FLAG(data_name,
                          if (!c.data_name.empty()) one_of(c.data_name, {"imagenet", "cifar10", "fashion_mnist"}),
                          "data set: imagenet, cifar10, fashion_mnist (default: the model's; it must be the model's)")
                    .reads(S | D | I)
                    .probe(kSynthetic, "cifar10", "json:model.parameters"));  // trivial's CIFAR-10 form
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
                    .unless([](const Config& c) { return c.optimizer != "lars" ? "only with --optimizer=lars" : not_training(c); })
                    .probe(kSynthetic, "0.01", "json:steps.loss", "--optimizer=lars"));
    v.push_back(REAL_FLAG(init_learning_rate, if (c.init_learning_rate <= 0) throw ConfigError("must be positive"),
                          "learning rate, at most 1000; default: the model's schedule as tf_cnn_benchmarks runs it (resnets, "
                          "densenets, CIFAR-10's alexnet), else its flat rate (docs/flags.md)")
                    .within(0, max_learning_rate)
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "0.5", "json:run.learning_rate")
                    .probe(kRealData, "0.5", "json:epochs.0.learning_rate"));
    v.push_back(REAL_FLAG(momentum, , "momentum (optimizer=momentum or lars)")
                    .within(0, 1)
                    .reads(training_runs)
                    .unless([](const Config& c) {
                      return c.optimizer == "sgd" ? "only with --optimizer=momentum or lars" : not_training(c);
                    })
                    .probe(kSynthetic, "0.5", "json:steps.loss", "--optimizer=momentum"));
    v.push_back(REAL_FLAG(weight_decay, , "L2 weight decay")
                    .within(0, 1)
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "0.1", "json:steps.loss"));
    v.push_back(BOOL_FLAG(weight_decay_on_batch_norm, "weight decay on batch norm's scales and shifts too, as "
                                                      "PyTorch's SGD (default: not, as tf_cnn_benchmarks)")
                    .reads(training_runs)
                    .unless([](const Config& c) {
                      return c.optimizer == "lars"  ? "LARS decays no batch norm parameter (1-D tensors)"
                             : c.weight_decay == 0 ? "--weight_decay is 0"
                                                    : not_training(c);
                    })
                    .probe(kSynthetic, "true", "json:steps.loss", "--model=resnet20 --weight_decay=0.5"));
    v.push_back(BOOL_FLAG(nesterov, "Nesterov momentum (default: with --optimizer=momentum, as tf_cnn_benchmarks)")
                    .reads(training_runs)
                    .unless([](const Config& c) {
                      return c.nesterov && c.optimizer == "sgd" ? "only with --optimizer=momentum or lars"
                                                                : not_training(c);
                    })
                    .probe(kSynthetic, "false", "json:steps.loss", "--optimizer=momentum"));
    v.push_back(TEXT_FLAG(backend, one_of(c.backend, {"onednn", "ref", "cuda"}),
                          "compute backend: onednn, ref (slow reference), or cuda (GPU; --device=gpu picks it)")
                    .reads(training_runs)
                    .probe(kSynthetic, "ref", "json:run.backend"));
    // tf_cnn_benchmarks takes CPU and GPU too
    v.push_back(TEXT_FLAG(device, if (c.device == "CPU" || c.device == "GPU") c.device = c.device == "CPU" ? "cpu" : "gpu";
                          one_of(c.device, {"cpu", "gpu"}), "cpu, or gpu: one GPU per rank, chosen by local rank")
                    .reads(training_runs)
                    .probe(kSynthetic, "gpu", "json:run.backend"));
    v.push_back(BOOL_FLAG(cuda_graphs, "GPU: replay forward and backward as CUDA graphs (with --allreduce=nccl the bucket "
                                       "allreduces inside backward's)")
                    .reads(training_runs)
                    .unless([](const Config& c) { return c.device != "gpu" ? "only with --device=gpu" : ""; })
                    .no_probe("needs a GPU: test_cuda_ops"));
    v.push_back(TEXT_FLAG(algorithm_cache, , "GPU: a file that keeps the timed algorithm search's choices (cuDNN's "
                                             "algorithms, fused-graph engines, the input's padding) for this GPU, cuDNN "
                                             "and driver: shapes found there are not searched again, new ones are added")
                    .reads(training_runs)
                    .unless([](const Config& c) { return c.device != "gpu" ? "only with --device=gpu" : ""; })
                    .no_probe("needs a GPU: test_cuda_memory"));
    v.push_back(BOOL_FLAG(share_memory, "CPU: tensors whose lifetimes in a step do not overlap share bytes "
                                        "(--share_memory=false gives every tensor its own, to compare)")
                    .reads(training_runs)
                    .unless(ref_backend)
                    .probe(kSynthetic, "false", "json:summary.working_memory_bytes"));
    v.push_back(BOOL_FLAG(fuse_ops, "run ops fused where the backend can (batch norm + ReLU, add + ReLU, bias + ReLU; "
                                    "on GPUs in fp16 batch norm + add + ReLU, and conv -> batch norm -> ReLU -> conv "
                                    "folded into the two convolutions); --fuse_ops=false runs each op alone, to compare")
                    .reads(training_runs)
                    .unless(ref_backend)
                    .probe(kSynthetic, "false", "json:summary.working_memory_bytes", "--model=resnet20"));
    v.push_back(INT_FLAG(num_gpus, if (c.num_gpus != 1) throw ConfigError(
                             "cnnbench runs one rank per GPU: launch N ranks (mpiexec -np N) instead of --num_gpus=N"),
                         "GPUs per rank (1; ranks on a host take GPU local_rank mod visible GPUs)")
                    .reads(training_runs)
                    .probe(kSynthetic, "2", "exit"));
    v.push_back(INT_FLAG(num_intra_threads, , "compute threads per rank, at most 64 per CPU the rank may run on; 0 = the "
                         "CPUs it may use (its binding, a Slurm task's, its share of the host or of a CPU quota)")
                    .within(0, max_threads)
                    .reads(training_runs)
                    .probe(kSynthetic, "2", "json:run.threads_per_rank"));
    v.push_back(TEXT_FLAG(data_format, one_of(c.data_format, {"NCHW", "NHWC"}),
                          "layout of the synthetic input images: NCHW or NHWC (real data's pipeline writes NCHW)")
                    .reads(S)
                    .probe(kSynthetic, "NHWC", "out:Data format:"));
    v.push_back(BOOL_FLAG(use_fp16, "compute in the half type the device runs fastest (bf16 on CPUs)")
                    .reads(training_runs)
                    .probe(kSynthetic, "true", "json:run.precision"));
    v.push_back(REAL_FLAG(fp16_loss_scale, , "loss scale (static; the initial scale with auto scaling, default "
                          "65536 then)")
                    .within(0, max_loss_scale, "(2^24)")
                    .reads(training_runs)
                    .unless(fp32_run)
                    .probe(kSynthetic, "128", "json:summary.loss_scale", "--precision=bf16"));
    v.push_back(BOOL_FLAG(fp16_enable_auto_loss_scale, "dynamic loss scaling: halve on inf/NaN and skip the step")
                    .reads(training_runs)
                    .unless(fp32_run)
                    .probe(kSynthetic, "true", "json:summary.loss_scale", "--precision=bf16"));
    v.push_back(INT_FLAG(fp16_inc_loss_scale_every_n, positive(c.fp16_inc_loss_scale_every_n),
                         "double the dynamic loss scale after this many good steps (up to 2^24)")
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
                          one_of(c.variable_update, {"horovod", "replicated", "independent", "parameter_server"},
                                 "distributed_* need parameter servers, which cnnbench does not model"),
                          "horovod (averaged gradients by allreduce), replicated, independent; parameter_server on "
                          "one rank")
                    .reads(training_runs)
                    .probe(kSynthetic, "independent", "json:run.variable_update"));
    v.push_back(TEXT_FLAG(allreduce, one_of(c.allreduce, {"mpi", "gloo", "nccl"}),
                          "allreduce backend: mpi or gloo (host memory), nccl (GPU memory, --device=gpu)")
                    .reads(S | D | A | I)
                    .probe(kAllreduce, "gloo", "json:run.backend"));
    v.push_back(REAL_FLAG(collective_timeout_sec, , "end the job, naming the rank that did not arrive, when a collective has waited this many "
                          "seconds")
                    .within(min_timeout_sec, max_timeout_sec)
                    .reads(S | D | A | I)
                    .no_probe("shows only when a rank stops answering: tests/fault_trials.sh"));
    v.push_back(REAL_FLAG(fusion_threshold_mb, , "gradient bucket size in MiB; 0 = one allreduce per tensor")
                    .within(0, max_fusion_threshold_mb)
                    .reads(S | D | A)
                    .probe(kAllreduce, "1", "json:run.fusion_threshold_mb"));
    v.push_back(REAL_FLAG(first_layers_bucket_mb, , "plan the buckets from the network's input: the first layers' bucket at most this many MiB, "
                          "each next one twice the one before, up to --fusion_threshold_mb; with --overlap_forward the "
                          "next forward starts once that small bucket is back (0 = off: buckets filled in backward order)")
                    .within(0, max_fusion_threshold_mb)
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
    v.push_back(INT_FLAG(powersgd_rank, , "--compression=powersgd: rank of each gradient matrix's approximation (default 2)")
                    .within(1, 64)
                    .reads(S | D | A)
                    .unless([](const Config& c) {
                      return c.compression != "powersgd" ? "only with --compression=powersgd" : "";
                    })
                    .no_probe("needs 2 ranks: test_mpi_allreduce, test_powersgd"));
    v.push_back(INT_FLAG(powersgd_warmup_steps, , "--compression=powersgd: steps whose gradients are sent uncompressed first (default 10)")
                    .within(0, max_steps)
                    .reads(training_runs)
                    .unless([](const Config& c) {
                      return c.compression != "powersgd" ? "only with --compression=powersgd" : "";
                    })
                    .no_probe("its steps count where gradients are exchanged, 2 ranks: "
                              "CliMpi.PowerSgdSentBytesAreWhatTheTimedStepsSent"));
    v.push_back(INT_FLAG(num_classes, ,
                         "outputs of the model's head, one per class; a label is its class as stored, 0 to N-1 "
                         "(0: the model's own, 1001 on ImageNet TFRecord shards as tf_cnn_benchmarks: 0 its "
                         "background class, 1-1000 ImageNet's)")
                    .within(0, 1000000)
                    .reads(S | D | A | I)
                    .probe(kSynthetic, "10", "json:model.classes"));
    v.push_back(TEXT_FLAG(baseline, , "JSON result of a reference run (e.g. 1 rank): report scaling efficiency against it")
                    .reads(training_runs)
                    .probe(kSynthetic, "base.json", "json:summary.scaling_efficiency"));
    // the results' names: a result says "training" (or "forward-only", "convergence"); "train"
    // is the name before, still taken
    v.push_back(TEXT_FLAG(mode, one_of(c.mode, {"training", "train", "allreduce", "input"});
                          if (c.mode == "train") c.mode = "training",
                          "training (train is the same; with --data_dir the result's mode is convergence, with "
                          "--forward_only forward-only); allreduce: the allreduce microbenchmark (4 KB to "
                          "--allreduce_max_mb); input: the input pipeline alone on --data_dir (images/sec it can deliver)")
                    .reads(S | D | A | I)
                    .probe(kSynthetic, "allreduce", "json:schema"));
    v.push_back(REAL_FLAG(allreduce_max_mb,
                          if (!(c.allreduce_max_mb >= 0.004 && c.allreduce_max_mb <= 1024))
                              throw ConfigError("must be in [0.004, 1024]"),
                          "largest message of the allreduce microbenchmark in MiB (default 256; less on slow links)")
                    .reads(A)
                    .probe(kAllreduce, "0.02", "json:sizes"));
    v.push_back(INT_FLAG(seed, if (static_cast<int64_t>(c.seed) < 0) throw ConfigError("must not be negative"),
                         "seed for weights, synthetic data, dropout masks, and real data's order and augmentation")
                    .reads(S | D | I)
                    .probe(kSynthetic, "2", "json:steps.loss"));
    v.push_back(TEXT_FLAG(piecewise_learning_rate_schedule, if (!c.piecewise_learning_rate_schedule.empty())
                              parse_piecewise_schedule(c.piecewise_learning_rate_schedule),
                          "rate;epoch;rate;...: e.g. 0.1;82;0.01;123;0.001 (synthetic runs: epochs of the data set's "
                          "size, as tf_cnn_benchmarks counts them)")
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "0.01;0.000001;0.5", "json:steps.learning_rate"));
    v.push_back(REAL_FLAG(num_learning_rate_warmup_epochs, , "linear warm-up of the learning rate over these epochs")
                    .within(0, max_epochs)
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "1", "json:steps.learning_rate"));
    v.push_back(BOOL_FLAG(cosine_learning_rate, "cosine decay of the learning rate to zero over the run")
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "true", "json:steps.learning_rate"));
    v.push_back(INT_FLAG(learning_rate_base_batch, , "scale the learning rate by global batch / this (0: no scaling)")
                    .within(0, max_global_batch)
                    .reads(training_runs)
                    .unless(not_training)
                    .probe(kSynthetic, "64", "json:steps.learning_rate"));
    v.push_back(REAL_FLAG(eval_during_training_every_n_epochs, , "evaluate on the test set every N epochs: after each epoch a multiple of N falls in (2.5: epochs 3, 5, 8; below 1: every epoch; 0: at the end only)")
                    .within(0, max_epochs)
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
    v.push_back(INT_FLAG(num_data_workers, , "input pipeline threads per rank (each keeps batches in flight)")
                    .within(1, max_data_workers)
                    .reads(D | I)
                    .probe(kRealData, "2", "json:input.workers")
                    .probe(kInput, "2", "json:run.workers_per_rank"));
    v.push_back(INT_FLAG(datasets_shuffle_buffer_size, , "TFRecord training: records in the shuffle buffer per rank (about 110 kB each for ImageNet)")
                    .within(1, max_shuffle_buffer)
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
    auto with_train_dir = [](const Config& c) { return c.train_dir.empty() ? "only with --train_dir" : ""; };
    v.push_back(INT_FLAG(save_model_steps, , "a checkpoint inside the epoch every this many steps (0: at epochs' ends only)")
                    .within(0, 1e12).reads(D).unless(with_train_dir)
                    .probe(kRealData, "1", "out:Checkpoint at step", "--train_dir=t --overwrite_train_dir"));
    v.push_back(REAL_FLAG(save_model_secs, , "a checkpoint inside the epoch every this many seconds (0: at epochs' ends only)")
                    .within(0, 1e9).reads(D).unless(with_train_dir)
                    .probe(kRealData, "0.000001", "out:Checkpoint at step", "--train_dir=t --overwrite_train_dir"));
    v.push_back(INT_FLAG(max_ckpts_to_keep, , "the newest checkpoints kept in --train_dir; older ones are removed (0: keep all)")
                    .within(0, 1e12).reads(D).unless(with_train_dir)
                    .no_probe("needs several epochs' checkpoints: StopAndResume.OnlyTheNewestCheckpointsAreKept"));
    v.push_back(BOOL_FLAG(allow_nonfinite_loss,
                          "go on when the loss is NaN or infinite (a diverged run otherwise ends, exit 3, naming the "
                          "step; steps the dynamic loss scaler skips are not that)")
                    .reads(training_runs)
                    .probe(kSynthetic, "true", "exit", "--init_learning_rate=1000 --num_batches=20"));
    v.push_back(TEXT_FLAG(benchmark_log_dir, if (c.benchmark_log_dir.empty()) throw ConfigError("must not be empty"),
                          "folder for results.csv and the JSON results")
                    .reads(S | D | A | I)
                    .probe(kSynthetic, "logs2", "path"));
    v.push_back(TEXT_FLAG(result_json, , "path of the JSON result (default: a new name in benchmark_log_dir); an existing file is "
                          "replaced only if it is a cnnbench result")
                    .reads(S | D | A | I)
                    .probe(kSynthetic, "x.json", "path"));
    v.push_back(TEXT_FLAG(summary_dir, , "write TensorBoard event files (scalars by step and epoch) into this folder, rank 0")
                    .reads(training_runs)
                    .probe(kSynthetic, "sum", "path"));
    v.push_back(INT_FLAG(summary_verbosity, if (c.summary_verbosity < 0 || c.summary_verbosity > 3)
                             throw ConfigError("must be 0, 1, 2 or 3");,
                         "0: no event files; 1-3: the scalars (as tf_cnn_benchmarks' 1; cnnbench writes no histograms)")
                    .reads(training_runs)
                    .unless([](const Config& c) { return c.summary_dir.empty() ? "only with --summary_dir" : ""; })
                    .probe(kSynthetic, "0", "out:summaries", "--summary_dir=sum"));
    v.push_back(INT_FLAG(save_summaries_steps, , "write the step scalars every N steps (synthetic runs: at each display point, for the steps since)")
                    .within(1, max_steps)
                    .reads(training_runs)
                    .unless([](const Config& c) { return c.summary_dir.empty() ? "only with --summary_dir" : ""; })
                    .probe(kSynthetic, "2", "out:summaries", "--summary_dir=sum"));
    v.push_back(TEXT_FLAG(timeline, , "write a Chrome trace (Perfetto, chrome://tracing) of every rank's steps, buckets and updates; "
                          "an existing file is replaced only if it is such a trace")
                    .reads(training_runs)
                    .probe(kSynthetic, "t.json", "path"));
    v.push_back(BOOL_FLAG(layer_timing, "print forward/backward time per layer")
                    .reads(S)
                    .probe(kSynthetic, "true", "json:layers"));
    v.push_back(BOOL_FLAG(peak, "measure this machine's FMA peak GFLOP/s (--precision, --num_intra_threads) and exit")
                    .reads(X)
                    .probe(kSynthetic, "true", "out:GFLOP/s"));
    v.push_back(BOOL_FLAG(list_models, "list the models and exit").reads(X).probe(kSynthetic, "true", "out:resnet50"));
    v.push_back(BOOL_FLAG(version, "print cnnbench's version, git revision, compiler, oneDNN version and backends, and exit")
                    .reads(X).probe(kSynthetic, "true", "out:oneDNN"));
    v.push_back(BOOL_FLAG(list_result_fields,
                          "print every field of the training and convergence results (JSON path, results.csv column, unit, "
                          "schemas) as JSON and exit")
                    .reads(X).probe(kSynthetic, "true", "out:summary.images_per_sec"));
    v.push_back(BOOL_FLAG(help, "print this help and exit").reads(X).probe(kSynthetic, "true", "out:usage:"));
    return v;
  }();
  return specs;
}

}  // namespace cnnbench
