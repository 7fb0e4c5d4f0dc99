// What a run's configuration is made of, for `cnnbench compare`: the result record's
// configuration fields, those added later, and the flags read from a result's config.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "harness/cli/flag_spec.h"
#include "harness/compare/result_reader.h"
#include "harness/report/result_fields.h"

namespace cnnbench {

// Both from the one definition of the result record (harness/report/result_fields.h): the
// configuration fields with a results.csv column, and those added later, without one.
const std::vector<std::string>& configuration_fields() {
  static const std::vector<std::string> fields = [] {
    std::vector<std::string> out;
    for (const ResultField& f : result_fields())
      if (f.configuration && *f.csv_column) out.emplace_back(f.csv_column);
    return out;
  }();
  return fields;
}

const std::vector<std::pair<std::string, std::string>>& later_configuration_fields() {
  static const std::vector<std::pair<std::string, std::string>> fields = [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const ResultField& f : result_fields())
      if (f.configuration && !*f.csv_column) out.emplace_back(std::string(f.json_path).substr(4), f.before);  // "run."
    return out;
  }();
  return fields;
}

const std::vector<std::string>& speed_flags() {
  static const std::vector<std::string> flags = {
      "fuse_ops",      "share_memory",     "data_format",     "layer_timing",      "num_classes",
      "optimizer",     "powersgd_rank",    "powersgd_warmup_steps", "forward_priority", "cuda_graphs",
      "num_data_workers", "train_augmentation", "print_training_accuracy",
      // loss scaling checks every bucket finite before any update, and may skip steps
      "fp16_loss_scale", "fp16_enable_auto_loss_scale", "fp16_inc_loss_scale_every_n"};
  return flags;
}

const std::vector<std::string>& accuracy_flags() {
  static const std::vector<std::string> flags = {
      "init_learning_rate", "momentum", "weight_decay", "weight_decay_on_batch_norm", "nesterov", "lars_eta",
      "label_smoothing",
      "piecewise_learning_rate_schedule", "num_learning_rate_warmup_epochs", "cosine_learning_rate",
      "learning_rate_base_batch", "eval_during_training_every_n_epochs", "num_epochs",
      "stop_at_top_1_accuracy", "datasets_shuffle_buffer_size", "fp16_loss_scale", "fp16_enable_auto_loss_scale",
      "fp16_inc_loss_scale_every_n"};
  return flags;
}

std::string flag_default(const std::string& flag) {
  // read once: a CSV row without its JSON, and every label, asks for each flag's
  static const std::map<std::string, std::string> defaults = [] {
    const Config config;
    std::map<std::string, std::string> out;
    for (const auto* flags : {&speed_flags(), &accuracy_flags()})
      for (const std::string& name : *flags)
        if (const FlagSpec* spec = find_flag(name)) out[name] = spec->get(config);
    return out;
  }();
  const auto it = defaults.find(flag);
  return it == defaults.end() ? "" : it->second;
}

std::string RunConfiguration::operator[](const std::string& field) const {
  const auto it = values.find(field);
  return it == values.end() ? "" : it->second;
}

}  // namespace cnnbench
