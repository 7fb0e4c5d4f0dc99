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
#include "harness/cli/flag_spec.h"
#include "harness/cli/tf_cnn_flags.h"
#include "harness/cli/toml_shield.h"

namespace cnnbench {

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
  // decimal only, as the integer flags and compare's --tolerance: strtod would read 0x10 as 16
  const size_t digits = !v.empty() && (v[0] == '+' || v[0] == '-') ? 1 : 0;
  const bool hex = v.size() > digits + 1 && v[digits] == '0' && (v[digits + 1] == 'x' || v[digits + 1] == 'X');
  const bool blank = v.empty() || std::isspace(static_cast<unsigned char>(v[0])) || hex;
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
  const TfCnnFlag* tf_cnn = spec ? nullptr : find_tf_cnn_flag(name);
  if (tf_cnn) {
    try {
      if (tf_cnn->boolean) flag_boolean(value);
    } catch (const ConfigError& e) {
      throw ConfigError(source + ": " + e.what());
    }
    if (tf_cnn->refused && !is_tf_cnn_default(*tf_cnn, value))
      throw ConfigError(source + ": tf_cnn_benchmarks' flag: " + tf_cnn->why);
    config.tf_cnn_noted.emplace_back(name, value);
    return;
  }
  if (!spec) throw ConfigError(printable(source) + ": unknown flag '" + printable(name) + "' (see --help)");
  try {
    assign(*spec, config, value);
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
    if (const TfCnnFlag* tf_cnn = spec ? nullptr : find_tf_cnn_flag(name)) {
      // noted (or refused) as on the command line: a boolean as true/false, anything else as its text
      std::string value;
      if (auto b = node.value_exact<bool>(); b && tf_cnn->boolean) value = *b ? "true" : "false";
      else if (auto i = node.value_exact<int64_t>()) value = std::to_string(*i);
      else if (auto d = node.value_exact<double>()) value = real_text(*d);
      else if (auto s = node.value_exact<std::string>()) value = unshield_from_toml(*s);
      else throw ConfigError(source + ": wrong type for this setting (" + (tf_cnn->boolean ? "true or false" : "a value") + ")");
      apply_flag(config, name, value, source);
      continue;
    }
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
      throw ConfigError(source + ": wrong type for this setting (it takes " +
                        (spec->kind == Kind::integer   ? "a whole number, written without a decimal point"
                         : spec->kind == Kind::real    ? "a number"
                         : spec->kind == Kind::boolean ? "true or false"
                                                       : "a quoted string") +
                        ")");
    apply_flag(config, name, value, source);
  }
}

Config parse_command_line(int argc, const char* const* argv) {
  struct Item {
    std::string name, value;
  };
  std::vector<Item> items;
  // as absl reads them: --name=value, --name value, -name (one dash), a boolean alone (true),
  // followed by a boolean word, or as --noname (false)
  auto is_flag = [](const std::string& a) {
    return a.rfind("--", 0) == 0 || (a.size() > 1 && a[0] == '-' && std::isalpha(static_cast<unsigned char>(a[1])));
  };
  enum class Takes { nothing_known, boolean, value };  // what a flag of that name takes
  auto takes = [](const std::string& name) {
    if (name == "config") return Takes::value;
    if (const FlagSpec* spec = find_flag(name)) return spec->kind == Kind::boolean ? Takes::boolean : Takes::value;
    if (const TfCnnFlag* tf_cnn = find_tf_cnn_flag(name)) return tf_cnn->boolean ? Takes::boolean : Takes::value;
    return Takes::nothing_known;
  };
  auto boolean = [&](const std::string& name) { return takes(name) == Takes::boolean; };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!is_flag(arg) || arg == "--")
      throw ConfigError("unexpected argument '" + printable(arg) + "' (flags look like --name=value)");
    arg = arg.substr(arg.rfind("--", 0) == 0 ? 2 : 1);
    const size_t eq = arg.find('=');
    Item item;
    if (eq != std::string::npos) {
      item = {arg.substr(0, eq), arg.substr(eq + 1)};
    } else {
      item.name = arg;
      const bool next_is_value = i + 1 < argc && !is_flag(argv[i + 1]);
      bool next_is_boolean = next_is_value;
      try {
        if (next_is_value) flag_boolean(argv[i + 1]);
      } catch (const ConfigError&) {
        next_is_boolean = false;
      }
      if (takes(item.name) == Takes::value) {
        if (!next_is_value) throw ConfigError("flag --" + printable(item.name) + " needs a value");
        item.value = argv[++i];
      } else if (boolean(item.name) && next_is_boolean) {
        item.value = argv[++i];
      } else if (!boolean(item.name) && item.name.rfind("no", 0) == 0 && boolean(item.name.substr(2))) {
        item = {item.name.substr(2), "false"};  // --nouse_fp16
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
  // tf_cnn_benchmarks' momentum optimizer is Nesterov's (MomentumOptimizer(..., use_nesterov=True));
  // MLPerf's LARS is not: --nesterov says otherwise where given
  if (!config.was_given("nesterov")) config.nesterov = config.optimizer == "momentum";
  if (config.use_fp16 && config.was_given("precision") && config.precision == "fp32")
    throw ConfigError("--use_fp16 asks for half precision, --precision=fp32 for none: give one of them");
  if (!config.piecewise_learning_rate_schedule.empty() && config.cosine_learning_rate)
    throw ConfigError("--piecewise_learning_rate_schedule and --cosine_learning_rate exclude each other");
  if (config.forward_only && !config.data_dir.empty())
    throw ConfigError("--forward_only: times inference on synthetic data; a --data_dir run trains and evaluates "
                      "(leave out one of them)");
  if (config.data_dir.empty() && config.mode == "training" && config.resume)
    throw ConfigError("--resume: needs --data_dir and --train_dir");
  if (config.resume && config.train_dir.empty() && !config.data_dir.empty())
    throw ConfigError("--resume: needs --train_dir (the folder of the run's checkpoints)");

  if (config.num_batches_set && config.num_epochs > 0)
    throw ConfigError("--num_batches and --num_epochs: give one of them (--num_epochs=0 undoes a config file's)");
  if (!config.data_dir.empty() && config.mode == "training" && !config.evaluates_test_set())
    for (const char* target : {"target_top_1_accuracy", "stop_at_top_1_accuracy"})
      if (config.was_given(target))
        throw ConfigError(std::string("--") + target + ": a --num_batches run evaluates only with "
                          "--eval_during_training_every_n_epochs (or train --num_epochs instead)");
  if (config.backend == "cuda" && config.device == "cpu" && config.was_given("device"))
    throw ConfigError("--backend=cuda runs on the GPU, --device=cpu on the CPU: give one of them");
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
  // loss scaling applies to half-precision runs alone (the flags are noted and ignored in fp32)
  const bool loss_scaling = (config.fp16_loss_scale > 0 || config.fp16_enable_auto_loss_scale) &&
                            (config.use_fp16 || config.precision != "fp32");
  if (config.overlap_forward && loss_scaling)
    throw ConfigError("--overlap_forward: not with loss scaling, which must see every bucket finite before any update");
  if (config.compression == "powersgd" && loss_scaling)
    throw ConfigError("--compression=powersgd: not with loss scaling (an overflowing step would enter PowerSGD's "
                      "error feedback, and a changed scale mis-weigh it); use --compression=bf16, or no loss scale");
  if (!config.piecewise_learning_rate_schedule.empty() && config.was_given("init_learning_rate"))
    throw ConfigError("--init_learning_rate and --piecewise_learning_rate_schedule: the schedule's first rate is the "
                      "initial rate (give one of them)");
  if (config.mode == "allreduce" && config.allreduce == "nccl")
    throw ConfigError("--mode=allreduce times the host allreduce (mpi, gloo); NCCL's is timed inside training runs "
                      "(--device=gpu --allreduce=nccl: steps.comm_sec)");
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
       "       cnnbench compare BASE NEW [--tolerance=PCT] [--check_only] [--allow_missing] [--json]   (cnnbench compare --help)\n"
       "       cnnbench make_tfrecords JPEG_ROOT OUT_DIR [--train_shards=N] ...   (cnnbench make_tfrecords --help)\n\nflags:\n";
  const Config defaults;
  for (const FlagSpec& f : flag_specs()) {
    std::string name = std::string("  --") + f.name;
    name.resize(std::max<size_t>(name.size() + 1, 28), ' ');
    const std::string d = f.get(defaults);
    s << name << help_text(f) << (d.empty() ? "" : " [" + d + "]") << "\n";
  }
  s << "  --config FILE               TOML file setting the same keys; flags override it\n";
  s << "tf_cnn_benchmarks' flags without a counterpart here (--xla, --horovod_device, --num_inter_threads, ...) run\n"
       "with a note saying why they do not apply; the few that would change what is measured are refused\n"
       "(docs/flags.md#tf_cnn_benchmarks-flags-without-a-counterpart). Booleans: --name, --name=false, --noname.\n";
  return s.str();
}

std::vector<std::pair<std::string, std::string>> config_values(const Config& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const FlagSpec& f : flag_specs())
    if (std::string(f.name) != "help" && std::string(f.name) != "list_models" &&
        std::string(f.name) != "list_result_fields") out.emplace_back(f.name, f.get(config));
  out.emplace_back("config", config.config_file);
  return out;
}

}  // namespace cnnbench
