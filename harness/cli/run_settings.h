// harness/cli/run_settings.h — RunSettings: a Config resolved against the model zoo and the launch
// (defaults filled in, combinations checked), everything the step loop and the reports need.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "harness/cli/config.h"
#include "kernels/dtype.h"
#include "models/model_zoo.h"

namespace cnnbench {

struct RunSettings {
  ModelInfo model;
  std::string dataset;      // imagenet, cifar10, fashion_mnist
  bool synthetic = true;
  int64_t batch_size = 0;   // per rank
  int ranks = 1;
  int64_t global_batch = 0;
  int64_t warmup_steps = 0, timed_steps = 0;
  double epochs = 0;        // timed_steps x global batch / data set size
  double learning_rate = 0;          // --init_learning_rate, the model's, or the data set's rule
  double schedule_base_rate = 0;     // where the schedule starts after warm-up (scheduled_base_rate)
  DType precision = DType::f32;
  int threads = 1;          // compute threads per rank
  int64_t classes = 0;      // the head's outputs (set with the data: see head_classes in run/real_data.h)
  bool training = true;
};

// The rate a learning-rate schedule starts from after its warm-up: the piecewise schedule's first
// rate where there is one, else `rate`; times global batch / base batch with
// --learning_rate_base_batch. (A bad piecewise text throws ConfigError.)
double scheduled_base_rate(double rate, const std::string& piecewise, int64_t global_batch, int64_t base_batch);

// Images in one epoch of each data set's training split.
int64_t dataset_train_size(const std::string& dataset);

// Throws ConfigError for a combination that cannot run (e.g. a model on the wrong data set).
RunSettings resolve_settings(const Config& config, int ranks, int threads);

// tf_cnn_benchmarks' schedule of a model (model_schedule.cc): ImageNet's resnets 0.128 x global
// batch / 256 with 5 warm-up epochs and a tenth at epochs 30, 60, 80, 90; CIFAR-10's resnets,
// densenets and alexnet theirs; none for a model whose rate is flat.
struct ModelSchedule {
  std::string piecewise;  // --piecewise_learning_rate_schedule's form
  double warmup_epochs = 0;
};
std::optional<ModelSchedule> tf_cnn_model_schedule(const ModelInfo& model, int64_t global_batch);
// Writes the model's schedule into a training run's config where none of --init_learning_rate,
// --piecewise_learning_rate_schedule, --cosine_learning_rate, --learning_rate_base_batch was
// given (and its warm-up where --num_learning_rate_warmup_epochs was not); true if it did.
bool apply_model_schedule(Config& config, int ranks);

}  // namespace cnnbench
