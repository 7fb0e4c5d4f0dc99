// harness/compare/result_documents.cc — a result JSON as compare reads it: the file read within
// its cap, parsed (its per-step arrays but steps.time_sec dropped as they are parsed), and each
// number and setting checked where it is taken (result_documents.h).
#include "harness/compare/result_documents.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "harness/cli/bounded_file.h"
#include "harness/cli/limits.h"  // max_steps
#include "harness/cli/printable.h"
#include "harness/compare/result_numbers.h"
#include "harness/report/result_fields.h"
#include "harness/report/stats.h"

namespace cnnbench {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw ResultReadError(where + ": " + what); }

// nlohmann's messages start with "[json.exception.parse_error.101] "; the rest says what is wrong.
std::string json_message(const json::exception& e) {
  const std::string m = e.what();
  const auto end = m.find("] ");
  return m.rfind("[json.exception", 0) == 0 && end != std::string::npos ? m.substr(end + 2) : m;
}

const json& member(const json& doc, const std::string& path, const std::string& object, const std::string& name) {
  const auto o = doc.find(object);
  if (o == doc.end() || !o->is_object()) fail(path, "no \"" + object + "\" object (not a whole cnnbench result)");
  const auto v = o->find(name);
  if (v == o->end()) fail(path, "no " + object + "." + name);
  return *v;
}

// A setting as the CSV writes it, so that runs read from JSON and from CSV match.
std::string setting_text(const json& v, const std::string& path, const std::string& name) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number_float()) return fmt::format("{:.6g}", v.get<double>());
  fail(path, name + " is " + v.type_name() + ", not a setting");
}

// A flag's value in a result written before the flag existed (its config records every flag of
// its day, weight_decay among them), where that was not the flag's default now: batch norm's
// parameters took weight decay until --weight_decay_on_batch_norm came (2026-11-29).
std::string flag_before_it_existed(const json& config, const std::string& flag) {
  return flag == "weight_decay_on_batch_norm" && config.contains("weight_decay") ? "true" : flag_default(flag);
}

// `flags` from the result's config (as the run wrote them: the flag table's text), a flag's
// default where the result has no config, its value before it existed where the config lacks it.
void read_flag_settings(const json& doc, const std::string& path, const std::vector<std::string>& flags,
                        RunConfiguration& config) {
  const auto given = doc.find("config");
  const bool has = given != doc.end() && given->is_object();
  for (const std::string& flag : flags) {
    const auto v = has ? given->find(flag) : given;
    config.values[flag] = !has                ? flag_default(flag)
                          : v != given->end() ? setting_text(*v, path, "config." + flag)
                                              : flag_before_it_existed(*given, flag);
  }
}
// later_configuration_fields() from run, where the result has them.
void read_later_fields(const json& doc, const std::string& path, RunConfiguration& config) {
  const json& run = doc.at("run");  // present: the required fields were read from it
  for (const auto& [field, before] : later_configuration_fields()) {
    const auto v = run.find(field);
    config.values[field] = v == run.end() ? before : setting_text(*v, path, "run." + field);
  }
}

// RunSpeeds::context from the run and context objects: settings as text, the ISA's list joined.
void read_context(const json& doc, const std::string& path, std::map<std::string, std::string>& context) {
  const auto text_at = [&](const char* object, const char* name) -> std::optional<std::string> {
    const auto o = doc.find(object);
    if (o == doc.end() || !o->is_object()) return std::nullopt;
    const auto v = o->find(name);
    if (v == o->end() || v->is_null()) return std::nullopt;
    if (v->is_array()) {
      std::string joined;
      for (const json& item : *v) joined += (joined.empty() ? "" : " ") + setting_text(item, path, std::string(object) + "." + name);
      return joined;
    }
    return setting_text(*v, path, std::string(object) + "." + name);
  };
  const std::pair<const char*, std::optional<std::string>> fields[] = {
      {"warm-up steps", text_at("run", "warmup_steps")}, {"timed steps", text_at("run", "timed_steps")},
      {"CPU", text_at("context", "cpu_model")},          {"CPUs", text_at("context", "cpus")},
      {"ISA", text_at("context", "isa")},                {"compiler", text_at("context", "compiler")}};
  for (const auto& [name, value] : fields)
    if (value) context[name] = printable(*value);
  if (const auto c = doc.find("context"); c != doc.end() && c->is_object())
    if (const auto v = c->find("library_versions"); v != c->end() && v->is_object())
      if (const auto d = v->find("onednn"); d != v->end() && d->is_string()) context["oneDNN"] = printable(d->get<std::string>());
}

}  // namespace

// Every file compare reads is a regular file of at most these sizes (result_files.h), refused
// otherwise before it is read (a FIFO would block, /dev/zero would fill memory). A result JSON
// keeps every timed step: 9 numbers a step, each on a line of at most 29 bytes as the writer
// indents them (3 spaces, a double's 24 characters, ",\n"), so 261 bytes a step and under
// 2.61e9 bytes for the longest run (max_steps, 10 million steps), the rest of the document
// (context, layers, repeats) under 1 MB. results.csv gains a row of about 0.5 KB a run: 256 MiB
// is over 500,000 runs, a run a minute for a year.

std::string read_text(const std::string& path, uint64_t max_bytes, const std::string& what) {
  try {
    return read_bounded_file(path, max_bytes, what);
  } catch (const BoundedFileError& e) {
    throw ResultReadError(e.what());
  }
}

// `digest` (when asked): the text's length and hash, the same for every copy of a file.
json parse_json(const std::string& path, std::string* digest) {
  const std::string text = read_text(path, max_result_json_bytes, "a cnnbench result");
  if (digest) *digest = fmt::format("{}:{:x}", text.size(), std::hash<std::string>{}(text));
  // of the per-step arrays only steps.time_sec is read (checked, as the rest of a result is): the
  // others are dropped as they are parsed, so a long run's JSON costs its text and one number a
  // step, not nine
  std::string top_key;
  const json::parser_callback_t keep = [&top_key](int depth, json::parse_event_t event, json& parsed) {
    if (event != json::parse_event_t::key) return true;
    if (depth == 1) top_key = parsed.is_string() ? parsed.get<std::string>() : "";
    return !(depth == 2 && top_key == "steps" && parsed != "time_sec");
  };
  try {
    return json::parse(text, keep);
  } catch (const json::exception& e) {
    fail(path, "not JSON (" + json_message(e) + ")");
  }
}

std::string schema_of(const json& doc) {
  if (!doc.is_object()) return "";
  const auto it = doc.find("schema");
  return it != doc.end() && it->is_string() ? it->get<std::string>() : "";
}

void default_flag_settings(const std::vector<std::string>& flags, RunConfiguration& config) {
  for (const std::string& flag : flags) config.values[flag] = flag_default(flag);
}

RunSpeeds parse_result(const json& doc, const std::string& path) {
  const std::string schema = schema_of(doc);
  if (schema.empty()) fail(path, "not a cnnbench result (no \"schema\" field)");
  if (schema != result_schema)
    fail(path, "schema is '" + printable(schema) + "', not " + result_schema + " (compare reads training results)");
  RunSpeeds run;
  run.source = path;
  for (const std::string& field : configuration_fields()) {
    const bool is_model = field == "model";
    const json& v = is_model ? member(doc, path, "model", "name") : member(doc, path, "run", field);
    run.config.values[field] = setting_text(v, path, is_model ? "model.name" : "run." + field);
  }
  read_later_fields(doc, path, run.config);
  read_flag_settings(doc, path, speed_flags(), run.config);
  const json& batch = member(doc, path, "run", "global_batch");
  if (!batch.is_number() || !(batch.get<double>() >= 1 && batch.get<double>() <= static_cast<double>(max_global_batch)) ||
      batch.get<double>() != std::floor(batch.get<double>()))
    fail(path, fmt::format("run.global_batch is not a whole number from 1 to {}", max_global_batch));
  // the steps are checked, not used: a result holding a step no run can take is damaged
  const json& times = member(doc, path, "steps", "time_sec");
  if (!times.is_array()) fail(path, "steps.time_sec is not an array");
  if (times.empty()) fail(path, "steps.time_sec is empty: no timed steps to compare");
  for (size_t i = 0; i < times.size(); ++i) {
    const double t = times[i].is_number() ? times[i].get<double>() : -1;
    if (!(t > 0) || !std::isfinite(t)) fail(path, fmt::format("steps.time_sec[{}] is not a positive number", i));
    if (t < min_step_sec) fail(path, fmt::format("steps.time_sec[{}] is {:g} s, less than a nanosecond", i, t));
    if (t > max_step_sec) fail(path, fmt::format("steps.time_sec[{}] is {:g} s, more than 1e9 s (31 years)", i, t));
  }
  // the run's headline figure (total images over total time), or each repeat's: the run is the
  // unit compare tests with (a step's speed says nothing of the next run's)
  run.run_speeds.push_back(
      json_number(member(doc, path, "summary", "images_per_sec"), path, "summary.images_per_sec", speed_range));
  const json& summary = doc.at("summary");
  if (const auto mean = summary.find("images_per_sec_mean"); mean != summary.end())
    json_number(*mean, path, "summary.images_per_sec_mean", speed_range);
  if (const auto spread = summary.find("images_per_sec_stderr"); spread != summary.end())
    json_number(*spread, path, "summary.images_per_sec_stderr", spread_range);
  if (const auto repeats = doc.find("repeats"); repeats != doc.end()) {
    const json& each = member(doc, path, "repeats", "images_per_sec");
    if (!each.is_array() || each.empty()) fail(path, "repeats.images_per_sec is not a list of speeds");
    run.run_speeds.clear();
    for (size_t i = 0; i < each.size(); ++i)
      run.run_speeds.push_back(json_number(each[i], path, fmt::format("repeats.images_per_sec[{}]", i), speed_range));
  }
  read_context(doc, path, run.context);
  return run;
}

// A convergence result with a time-to-accuracy target; nullopt for one without a target, whose
// seconds leave out the epochs before a resume (clock_complete false), whose seconds cover
// training on other rank counts than run.ranks (time_to_accuracy.ranks, after a --resume), or
// whose evaluations before a resume were on another test set (evaluated_from_epoch > 1).
std::optional<AccuracyRun> parse_convergence(const json& doc, const std::string& path) {
  const auto tta = doc.find("time_to_accuracy");
  if (tta == doc.end()) return std::nullopt;
  if (!tta->is_object()) fail(path, "time_to_accuracy is not an object");
  const auto complete = tta->find("clock_complete");
  if (complete != tta->end() && !complete->is_boolean()) fail(path, "time_to_accuracy.clock_complete is not true or false");
  if (complete != tta->end() && !complete->get<bool>()) return std::nullopt;
  if (const auto from = tta->find("evaluated_from_epoch"); from != tta->end()) {  // a resume changed the test set
    if (!from->is_number()) fail(path, "time_to_accuracy.evaluated_from_epoch is not an epoch");
    if (from->get<double>() > 1) return std::nullopt;
  }
  if (const auto ranks = tta->find("ranks"); ranks != tta->end()) {
    if (!ranks->is_array()) fail(path, "time_to_accuracy.ranks is not a list of rank counts");
    const json& run_ranks = member(doc, path, "run", "ranks");
    for (const json& n : *ranks)
      if (!n.is_number_integer()) fail(path, "time_to_accuracy.ranks is not a list of rank counts");
      else if (n != run_ranks) return std::nullopt;
  }
  AccuracyRun run;
  run.source = path;
  for (const std::string& field : configuration_fields())
    run.config.values[field] = setting_text(member(doc, path, "run", field), path, "run." + field);
  read_later_fields(doc, path, run.config);
  read_flag_settings(doc, path, speed_flags(), run.config);
  read_flag_settings(doc, path, accuracy_flags(), run.config);
  // the shuffle buffer orders a TFRecord stream alone: on other input the flag did nothing (the
  // run said so), and two runs differing in it alone are one configuration
  if (run.config["input_format"] != "tfrecord")
    run.config.values["datasets_shuffle_buffer_size"] = flag_default("datasets_shuffle_buffer_size");
  // likewise weight decay on batch norm where nothing was decayed, or LARS left batch norm out
  if (run.config["optimizer"] == "lars" || run.config["weight_decay"] == "0")
    run.config.values["weight_decay_on_batch_norm"] = flag_default("weight_decay_on_batch_norm");
  const double target = json_number(member(doc, path, "time_to_accuracy", "target_top_1_accuracy"), path,
                                    "time_to_accuracy.target_top_1_accuracy", fraction_range);
  run.config.values["target_top_1_accuracy"] = fmt::format("{:.6g}", target);
  const json& reached = member(doc, path, "time_to_accuracy", "reached");
  if (!reached.is_boolean()) fail(path, "time_to_accuracy.reached is not true or false");
  run.reached = reached.get<bool>();
  if (run.reached) {
    run.seconds = json_number(member(doc, path, "time_to_accuracy", "seconds"), path, "time_to_accuracy.seconds",
                              accuracy_seconds_range);
    run.epochs = json_number(member(doc, path, "time_to_accuracy", "epochs"), path, "time_to_accuracy.epochs",
                             accuracy_seconds_range);
    run.images = json_number(member(doc, path, "time_to_accuracy", "images"), path, "time_to_accuracy.images",
                             accuracy_images_range);
  }
  if (const auto config = doc.find("config"); config != doc.end() && config->is_object())
    if (const auto seed = config->find("seed"); seed != config->end())
      run.seed = printable(setting_text(*seed, path, "config.seed"));
  if (const auto fingerprint = doc.at("run").find("data_fingerprint"); fingerprint != doc.at("run").end()) {
    if (!fingerprint->is_string() || fingerprint->get<std::string>().size() > 64)
      fail(path, "run.data_fingerprint is not a fingerprint");
    run.data_fingerprint = printable(fingerprint->get<std::string>());
  }
  // its speed over the training epochs, where it has one (results before --baseline reached
  // convergence runs have no summary); 0 when nothing was timed
  if (const auto summary = doc.find("summary"); summary != doc.end()) {
    if (!summary->is_object()) fail(path, "summary is not an object");
    if (const auto speed = summary->find("images_per_sec"); speed != summary->end())
      json_number(*speed, path, "summary.images_per_sec", speed_or_zero_range);
  }
  return run;
}

}  // namespace cnnbench
