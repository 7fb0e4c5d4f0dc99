#include "harness/cli/run_settings.h"

#include <algorithm>
#include <vector>
#include <cmath>

namespace cnnbench {

int64_t dataset_train_size(const std::string& dataset) {
  if (dataset == "imagenet") return 1281167;
  if (dataset == "cifar10") return 50000;
  if (dataset == "fashion_mnist") return 60000;
  return 0;
}

double scheduled_base_rate(double rate, const std::string& piecewise, int64_t global_batch, int64_t base_batch) {
  double base = piecewise.empty() ? rate : parse_piecewise_schedule(piecewise).rates.at(0);
  if (base_batch > 0) base *= static_cast<double>(global_batch) / static_cast<double>(base_batch);
  return base;
}

RunSettings resolve_settings(const Config& config, int ranks, int threads) {
  RunSettings s;
  const auto model = config.data_name.empty() ? find_model(config.model) : find_model(config.model, config.data_name);
  if (!model) {
    std::string known;
    std::vector<std::string> names;  // a name a data set's variant shares (alexnet on cifar10) once
    for (const ModelInfo& m : model_zoo())
      if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
    for (const std::string& name : names) known += (known.empty() ? "" : ", ") + name;
    throw ConfigError("--model: unknown model '" + printable(config.model) + "' (known: " + known + ")");
  }
  s.model = *model;
  s.dataset = config.data_name.empty() ? model->dataset : config.data_name;
  if (s.dataset != model->dataset)
    throw ConfigError("--data_name: model " + model->name + " takes " + model->dataset + " images (" +
                      std::to_string(model->image_size) + "x" + std::to_string(model->image_size) + "), not " +
                      s.dataset);
  s.synthetic = config.data_dir.empty();
  if (s.synthetic && config.resume) throw ConfigError("--resume: needs --data_dir and --train_dir");
  s.batch_size = config.batch_size > 0 ? config.batch_size : model->default_batch_size;
  s.ranks = ranks;
  // checked before multiplying: the product must neither overflow nor ask for absurd memory
  if (ranks < 1 || s.batch_size > max_global_batch / ranks)
    throw ConfigError("--batch_size: " + std::to_string(s.batch_size) + " per rank x " + std::to_string(ranks) +
                      " ranks is more than the " + std::to_string(max_global_batch) + " images a step may have");
  s.global_batch = s.batch_size * ranks;
  if (config.num_epochs > 0) {
    const double images = config.num_epochs * static_cast<double>(dataset_train_size(s.dataset));
    const double steps = std::ceil(images / static_cast<double>(s.global_batch));  // <= 1e4 x 1.3e6: exact
    if (steps > static_cast<double>(max_steps))
      throw ConfigError("--num_epochs: " + std::to_string(static_cast<int64_t>(steps)) + " steps of " +
                        std::to_string(s.global_batch) + " images, more than the " + std::to_string(max_steps) +
                        " a run may have");
    s.timed_steps = std::max<int64_t>(1, static_cast<int64_t>(steps));
  } else {
    s.timed_steps = config.num_batches;
  }
  s.warmup_steps = config.num_warmup_batches >= 0 ? config.num_warmup_batches
                                                  : std::min<int64_t>(10, std::max<int64_t>(1, s.timed_steps / 4));
  // PowerSGD's uncompressed steps belong in the warm-up, so the timed steps are all compressed
  // (only where gradients are exchanged: on one rank, forward-only or independent, none are sent)
  if (config.num_warmup_batches < 0 && config.compression == "powersgd" && ranks > 1 && !config.forward_only &&
      config.variable_update != "independent")
    s.warmup_steps = std::max(s.warmup_steps, config.powersgd_warmup_steps);
  s.epochs = static_cast<double>(s.timed_steps * s.global_batch) / static_cast<double>(dataset_train_size(s.dataset));
  s.learning_rate = config.init_learning_rate > 0        ? config.init_learning_rate
                    : model->default_learning_rate > 0 ? model->default_learning_rate
                    // ImageNet's 0.1 a 256 images; --learning_rate_base_batch names the batch 0.1 is
                    // for instead (scaling by both squared the global batch's share)
                    : s.dataset == "imagenet" && config.learning_rate_base_batch == 0
                        ? 0.1 * static_cast<double>(s.global_batch) / 256.0
                                                       : 0.1;
  s.schedule_base_rate = scheduled_base_rate(s.learning_rate, config.piecewise_learning_rate_schedule, s.global_batch,
                                             config.learning_rate_base_batch);
  // --use_fp16 asks for the half type the device runs fastest: fp16 on GPUs (tensor cores); on
  // CPUs bf16 (AVX-512 BF16), as fp16 would need AVX-512 FP16.
  const bool gpu = config.device == "gpu";
  s.precision = config.use_fp16 ? (gpu ? DType::f16 : DType::bf16) : *parse_dtype(config.precision);
  if (config.use_fp16 && gpu && config.precision == "bf16")
    throw ConfigError("--use_fp16 computes in fp16 on a GPU, --precision=bf16 in bf16: give one of them");
  if (config.use_fp16 && !gpu && config.precision == "fp16")
    throw ConfigError("--precision=fp16 with --use_fp16: the CPU backend computes halves in bf16");
  if (gpu && ranks > 1 && !config.forward_only && config.variable_update != "independent" &&
      config.allreduce != "nccl")
    throw ConfigError("--device=gpu averages gradients with --allreduce=nccl (GPU memory), not " + config.allreduce);
  // tf_cnn_benchmarks' default: on one device nothing is exchanged, and its update is horovod's
  // (run_setup.cc notes it); across ranks it would need parameter servers
  if (ranks > 1 && config.variable_update == "parameter_server")
    throw ConfigError("--variable_update=parameter_server: " + std::to_string(ranks) +
                      " ranks would need parameter servers, which cnnbench does not model: horovod averages their "
                      "gradients by allreduce, independent exchanges none");
  // independent ranks train models of their own: a test accuracy summed over them, batch-norm
  // statistics averaged across them and a checkpoint of rank 0's weights would describe no model
  if (ranks > 1 && !s.synthetic && config.mode == "training" && config.variable_update == "independent" &&
      (config.evaluates_test_set() || !config.train_dir.empty()))
    throw ConfigError("--variable_update=independent: each rank trains a model of its own, which a --data_dir run "
                      "cannot evaluate or checkpoint as one (a --num_batches benchmark without evaluation can)");
  s.threads = threads;
  s.training = !config.forward_only;
  return s;
}

}  // namespace cnnbench
