#include "harness/cli/tf_cnn_flags.h"

#include "harness/cli/config.h"
#include "harness/cli/flag_spec.h"

namespace cnnbench {
namespace {

// Why a group of them does not apply here: said once, used by many rows.
constexpr const char* kRuntime = "a TensorFlow runtime setting; cnnbench's threads (--num_intra_threads), memory and "
                                 "kernels are its own";
constexpr const char* kInput = "a tf.data input setting; cnnbench's input pipeline takes --num_data_workers and "
                               "--datasets_shuffle_buffer_size";
constexpr const char* kGraph = "a TensorFlow graph or trace output; cnnbench writes --timeline, --layer_timing and "
                               "--summary_dir instead";
constexpr const char* kExchange = "a TensorFlow gradient-exchange setting; cnnbench sums gradients over --allreduce "
                                  "in --fusion_threshold_mb buckets";
constexpr const char* kDevice = "cnnbench keeps each rank's parameters on its --device and sums gradients where "
                                "--allreduce does (nccl: in GPU memory; mpi, gloo: in host memory)";
constexpr const char* kPreprocess = "tf_cnn_benchmarks' image preprocessing; cnnbench's training crops and flips are "
                                    "--train_augmentation's (ImageNet's recipe on ImageNet)";
constexpr const char* kEval = "cnnbench evaluates the whole test set, with --eval_during_training_every_n_epochs and "
                              "at the end";
constexpr const char* kOtherOptimizers = "read only with --optimizer=rmsprop or adam, which cnnbench does not model";
constexpr const char* kDistributed = "distributed TensorFlow's cluster; cnnbench's ranks are launched by mpiexec or "
                                     "srun (docs/ranks-and-hosts.md)";
constexpr const char* kDecay = "an exponential learning-rate decay, which cnnbench does not model: use "
                               "--piecewise_learning_rate_schedule or --cosine_learning_rate";
constexpr const char* kEvalSteps = "evaluation by steps, which cnnbench does not model: use "
                                   "--eval_during_training_every_n_epochs";

const std::vector<TfCnnFlag> kFlags = {
    {"horovod_device", false, kDevice, false},
    {"local_parameter_device", false, kDevice, false},
    {"gpu_indices", false, "cnnbench gives each rank the GPU of its local rank", false},
    {"xla", true, "TensorFlow's XLA compiler; cnnbench's plans are native code already", false},
    {"xla_compile", true, "TensorFlow's XLA compiler; cnnbench's plans are native code already", false},
    {"tf_random_seed", false, "TensorFlow's seed; cnnbench's is --seed", false},
    {"loss_type_to_report", false,
     "cnnbench's step lines report the cross-entropy (tf_cnn_benchmarks' base_loss): weight decay is applied in the "
     "update, not added to the loss",
     false},
    {"fp16_vars", true, "cnnbench keeps fp32 weights and updates them in fp32 whatever the compute precision", false},
    {"display_perf_ewma", false, "cnnbench's step lines show the mean images/sec so far, as tf_cnn_benchmarks' without it",
     false},
    {"ml_perf", true, "MLPerf compliance logging; cnnbench writes its results as JSON and CSV", false},
    {"ml_perf_compliance_logging", true, "MLPerf compliance logging; cnnbench writes its results as JSON and CSV",
     false},
    {"benchmark_test_id", false, "cnnbench's results are named by --result_json and --benchmark_log_dir", false},
    {"eval_interval_secs", false, kEval, false},
    {"eval_batch_size", false, kEval, false},
    {"num_eval_batches", false, kEval, false},
    {"num_eval_epochs", false, kEval, false},
    {"eval_dir", false, kEval, false},
    {"collect_eval_results_async", true, kEval, false},
    {"freeze_when_forward_only", true, "cnnbench's --forward_only runs the inference graph as built", false},
    {"distortions", true, kPreprocess, false},
    {"distort_color_in_yiq", true, kPreprocess, false},
    {"resize_method", false, kPreprocess, false},
    {"fuse_decode_and_crop", true, kPreprocess, false},
    {"input_preprocessor", false, kPreprocess, false},
    {"batch_group_size", false, kInput, false},
    {"use_datasets", true, kInput, false},
    {"datasets_use_prefetch", true, kInput, false},
    {"datasets_prefetch_buffer_size", false, kInput, false},
    {"datasets_num_private_threads", false, kInput, false},
    {"datasets_use_caching", true, kInput, false},
    {"datasets_parallel_interleave_cycle_length", false, kInput, false},
    {"datasets_sloppy_parallel_interleave", true, kInput, false},
    {"datasets_parallel_interleave_prefetch", false, kInput, false},
    {"datasets_repeat_cached_sample", true, kInput, false},
    {"multi_device_iterator_max_buffer_size", false, kInput, false},
    {"trace_file", false, kGraph, false},
    {"use_chrome_trace_format", true, kGraph, false},
    {"tfprof_file", false, kGraph, false},
    {"graph_file", false, kGraph, false},
    {"partitioned_graph_file_prefix", false, kGraph, false},
    {"debugger", false, kGraph, false},
    {"hierarchical_copy", true, kExchange, false},
    {"network_topology", false, kExchange, false},
    {"gradient_repacking", false, kExchange, false},
    {"compact_gradient_transfer", true, kExchange, false},
    {"variable_consistency", false, kExchange, false},
    {"all_reduce_spec", false, kExchange, false},
    {"agg_small_grads_max_bytes", false, kExchange, false},
    {"agg_small_grads_max_group", false, kExchange, false},
    {"allreduce_merge_scope", false, kExchange, false},
    {"cross_replica_sync", true, kExchange, false},
    {"staged_vars", true, kExchange, false},
    {"mkl", true, kRuntime, false},
    {"kmp_blocktime", false, kRuntime, false},
    {"kmp_affinity", false, kRuntime, false},
    {"kmp_settings", false, kRuntime, false},
    {"num_inter_threads", false, kRuntime, false},
    {"use_numa_affinity", true, kRuntime, false},
    {"gpu_thread_mode", false, kRuntime, false},
    {"per_gpu_thread_count", false, kRuntime, false},
    {"autotune_threshold", false, kRuntime, false},
    {"winograd_nonfused", true, kRuntime, false},
    {"batchnorm_persistent", true, kRuntime, false},
    {"sync_on_finish", true, kRuntime, false},
    {"force_gpu_compatible", true, kRuntime, false},
    {"allow_growth", true, kRuntime, false},
    {"gpu_memory_frac_for_testing", false, kRuntime, false},
    {"use_unified_memory", true, kRuntime, false},
    {"timestamped_allocator", true, kRuntime, false},
    {"gpu_kt_max_interval", false, kRuntime, false},
    {"gpu_kt_max_bytes", false, kRuntime, false},
    {"gpu_kt_max_pending", false, kRuntime, false},
    {"use_tf_layers", true, kRuntime, false},
    {"use_resource_vars", true, kRuntime, false},
    {"compute_lr_on_cpu", true, kRuntime, false},
    {"sparse_to_dense_grads", true, kRuntime, false},
    {"single_l2_loss_op", true, kRuntime, false},
    {"enable_optimizations", true, kRuntime, false},
    {"rewriter_config", false, kRuntime, false},
    {"use_python32_barrier", true, kRuntime, false},
    {"trt_max_workspace_size_bytes", false, kRuntime, false},
    {"server_protocol", false, kDistributed, false},
    {"rmsprop_decay", false, kOtherOptimizers, false},
    {"rmsprop_momentum", false, kOtherOptimizers, false},
    {"rmsprop_epsilon", false, kOtherOptimizers, false},
    {"adam_beta1", false, kOtherOptimizers, false},
    {"adam_beta2", false, kOtherOptimizers, false},
    {"adam_epsilon", false, kOtherOptimizers, false},
    // refused unless at tf_cnn_benchmarks' default: running without them would measure another run
    {"eval", true, "evaluation alone, from a checkpoint, which cnnbench does not model: it evaluates while training "
                   "(--eval_during_training_every_n_epochs)", true, "false"},
    {"eval_during_training_every_n_steps", false, kEvalSteps, true, ""},
    {"eval_during_training_at_specified_steps", false, kEvalSteps, true, ""},
    {"eval_during_training_at_specified_epochs", false,
     "evaluation at chosen epochs, which cnnbench does not model: use --eval_during_training_every_n_epochs", true, ""},
    {"num_epochs_per_decay", false, kDecay, true, "0"},
    {"learning_rate_decay_factor", false, kDecay, true, "0"},
    {"minimum_learning_rate", false, kDecay, true, "0"},
    {"resnet_base_lr", false,
     "ResNet's step schedule (a rate for 256 images, a tenth of it at epochs 30, 60, 80 and 90, after 5 warm-up "
     "epochs): give it as --piecewise_learning_rate_schedule='0.128;30;0.0128;60;0.00128;80;0.000128;90;0.0000128' "
     "(its default rate, 0.128) with --learning_rate_base_batch=256 --num_learning_rate_warmup_epochs=5",
     true, ""},
    {"gradient_clip", false, "gradient clipping, which cnnbench does not model", true, ""},
    {"job_name", false, kDistributed, true, ""},
    {"ps_hosts", false, kDistributed, true, ""},
    {"worker_hosts", false, kDistributed, true, ""},
    {"controller_host", false, kDistributed, true, ""},
    {"task_index", false, kDistributed, true, "0"},
    {"trt_mode", false, "TensorRT inference, which cnnbench does not model", true, ""},
    {"backbone_model_path", false, "SSD's backbone checkpoint; cnnbench has no SSD model", true, ""},
};

}  // namespace

const std::vector<TfCnnFlag>& tf_cnn_flags() { return kFlags; }

const TfCnnFlag* find_tf_cnn_flag(const std::string& name) {
  for (const TfCnnFlag& f : kFlags)
    if (name == f.name) return &f;
  return nullptr;
}

bool is_tf_cnn_default(const TfCnnFlag& flag, const std::string& value) {
  const std::string want = flag.default_value;
  try {
    if (flag.boolean) return flag_boolean(value) == flag_boolean(want);
    if (value == want) return true;
    return !want.empty() && parse_real(value) == parse_real(want);  // 0.0 is 0
  } catch (const ConfigError&) {
    return false;
  }
}

}  // namespace cnnbench
