// harness/report/run_context.h — the context block of every result (google/benchmark style): where
// and with what the run was made, so two results can be compared knowingly.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cnnbench {

struct RunContext {
  std::string host, cpu_model, time_utc, cnnbench_version, git_revision, compiler, onednn_version;
  std::vector<std::string> isa;  // the vector extensions that matter here
  int cpus = 0;                  // online CPUs of the host
  // Open MPI's transport and collective settings in effect (OMPI_MCA_btl_*, coll_*, pml_*, mtl_*,
  // mpi_*, without the prefix): they change what an allreduce costs.
  std::map<std::string, std::string> mpi_settings;
};

RunContext collect_run_context();
nlohmann::json to_json(const RunContext& context);

}  // namespace cnnbench
