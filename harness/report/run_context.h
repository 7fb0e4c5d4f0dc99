// harness/report/run_context.h — the context block of every result (google/benchmark style): where
// and with what the run was made, so two results can be compared knowingly.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cnnbench {

struct RunContext {
  std::string host, cpu_model, time_utc, cnnbench_version, git_revision, compiler, onednn_version;
  std::vector<std::string> isa;  // the vector extensions that matter here
  int cpus = 0;                  // online CPUs of the host
};

RunContext collect_run_context();
nlohmann::json to_json(const RunContext& context);

}  // namespace cnnbench
