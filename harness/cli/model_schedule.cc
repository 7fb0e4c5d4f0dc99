// The learning-rate schedules tf_cnn_benchmarks' models carry (their get_learning_rate), which it
// runs where no rate or schedule is given: cnnbench runs the same, written into the config as
// the piecewise schedule and warm-up they are, so the log, results and checkpoints say what ran.
#include <fmt/format.h>

#include "harness/cli/run_settings.h"

namespace cnnbench {

namespace {

// "r0;e1;r1;e2;r2...": rates r0 x factors[k], boundaries in epochs
std::string piecewise(double rate, const std::vector<double>& epochs, const std::vector<double>& factors) {
  std::string out = fmt::format("{:.9g}", rate * factors[0]);
  for (size_t k = 0; k < epochs.size(); ++k) out += fmt::format(";{:g};{:.9g}", epochs[k], rate * factors[k + 1]);
  return out;
}

}  // namespace

std::optional<ModelSchedule> tf_cnn_model_schedule(const ModelInfo& model, int64_t global_batch) {
  const std::string& name = model.name;
  const bool resnet = name.rfind("resnet", 0) == 0;
  if (model.dataset == "imagenet" && resnet)  // resnet_model.py: 0.128 a 256 images, 5 warm-up epochs
    return ModelSchedule{piecewise(0.128 * static_cast<double>(global_batch) / 256.0, {30, 60, 80, 90},
                                   {1, 0.1, 0.01, 0.001, 0.0001}),
                         5};
  if (model.dataset == "cifar10" && resnet)  // ResnetCifar10Model
    return ModelSchedule{piecewise(0.1, {82, 123, 300}, {1, 0.1, 0.01, 0.002}), 0};
  if (model.dataset == "cifar10" && name.rfind("densenet", 0) == 0)  // DensenetCifar10Model
    return ModelSchedule{piecewise(0.1, {150, 225, 300}, {1, 0.1, 0.01, 0.001}), 0};
  if (model.dataset == "cifar10" && name == "alexnet") {  // a tenth every 100 epochs (exponential_decay, staircase)
    std::vector<double> epochs, factors = {1};
    for (int k = 1; k <= 10; ++k) {
      epochs.push_back(100.0 * k);
      factors.push_back(factors.back() * 0.1);
    }
    return ModelSchedule{piecewise(0.1, epochs, factors), 0};
  }
  return std::nullopt;  // a flat rate: the model's own (ModelInfo::default_learning_rate) or the data set's rule
}

bool apply_model_schedule(Config& config, int ranks) {
  if (config.forward_only || config.mode == "allreduce" || config.mode == "input") return false;
  // a rate, a schedule, a cosine or a base batch given: the user's recipe, not the model's
  for (const char* flag : {"init_learning_rate", "piecewise_learning_rate_schedule", "cosine_learning_rate",
                           "learning_rate_base_batch"})
    if (config.was_given(flag)) return false;
  const auto model = config.data_name.empty() ? find_model(config.model) : find_model(config.model, config.data_name);
  if (!model) return false;  // refused later, naming the model
  const int64_t batch = config.batch_size > 0 ? config.batch_size : model->default_batch_size;
  const std::optional<ModelSchedule> schedule = tf_cnn_model_schedule(*model, batch * std::max(1, ranks));
  if (!schedule) return false;
  config.piecewise_learning_rate_schedule = schedule->piecewise;
  if (!config.was_given("num_learning_rate_warmup_epochs")) config.num_learning_rate_warmup_epochs = schedule->warmup_epochs;
  return true;
}

}  // namespace cnnbench
