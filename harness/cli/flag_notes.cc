// The notes main.cc prints for flags a run does not read ("--momentum: only with
// --optimizer=momentum or lars; ignored"), from the flag table's `reads` and `unless`.
#include <algorithm>

#include "harness/cli/flag_spec.h"
#include "harness/cli/tf_cnn_flags.h"

namespace cnnbench {

RunKind run_kind(const Config& config) {
  if (config.help || config.list_models || config.list_result_fields || config.peak) return kNoRun;
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
    case kNoRun: return "--help, --list_models, --list_result_fields and --peak";
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
  if (kind != kNoRun)
    for (const auto& [name, value] : config.tf_cnn_noted) {
      const TfCnnFlag* f = find_tf_cnn_flag(name);
      notes.push_back("--" + name + "=" + printable(value) + ": tf_cnn_benchmarks' flag" +
                      (f->refused ? std::string(" at its default, which asks for nothing here")
                                  : std::string(": ") + f->why + "; not used"));
    }
  return notes;
}

bool exchanges_gradients(const Config& config, int ranks, bool training) {
  return ranks > 1 && config.variable_update != "independent" && training;
}

std::vector<std::string> exchange_flag_notes(const Config& config, int ranks, bool training) {
  if (exchanges_gradients(config, ranks, training)) return {};
  std::vector<std::string> notes;
  if (config.variable_update == "parameter_server")  // refused on more ranks (run_settings.cc)
    notes.push_back("--variable_update=parameter_server: one rank exchanges no gradients, and updates its weights "
                    "as horovod does");
  const char* why = ranks == 1   ? "a run on one rank exchanges no gradients"
                    : !training ? "a forward-only run exchanges no gradients"
                                : "--variable_update=independent exchanges no gradients";
  for (const char* flag :
       {"allreduce", "compression", "hierarchical_allreduce", "overlap_forward", "fusion_threshold_mb",
        "first_layers_bucket_mb", "powersgd_rank", "powersgd_warmup_steps", "forward_priority"}) {
    const FlagSpec* spec = find_flag(flag);
    // one note a flag: one the flag table names as unread already (flag_notes) is not named twice
    if (config.was_given(flag) && !(spec && spec->unused && !spec->unused(config).empty()))
      notes.push_back("--" + std::string(flag) + ": " + why + "; ignored");
  }
  return notes;
}

}  // namespace cnnbench
