#include "harness/report/run_context.h"

#include <dnnl.hpp>
#include <unistd.h>

#include <ctime>
#include <fstream>

extern char** environ;  // the process's environment (POSIX)

#include "git_revision.h"  // generated at build time: CNNBENCH_GIT_REVISION
#ifndef CNNBENCH_VERSION
#define CNNBENCH_VERSION "0.0.0"
#endif

namespace cnnbench {

RunContext collect_run_context() {
  RunContext c;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  c.host = host;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0) {
      c.cpu_model = line.substr(line.find(':') + 2);
      break;
    }
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) c.isa.push_back("avx2");
  if (__builtin_cpu_supports("fma")) c.isa.push_back("fma");
  if (__builtin_cpu_supports("avx512f")) c.isa.push_back("avx512f");
  if (__builtin_cpu_supports("avx512vnni")) c.isa.push_back("avx512_vnni");
  if (__builtin_cpu_supports("avx512bf16")) c.isa.push_back("avx512_bf16");
  if (__builtin_cpu_supports("avx512fp16")) c.isa.push_back("avx512_fp16");
  if (__builtin_cpu_supports("amx-bf16")) c.isa.push_back("amx_bf16");
  c.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  c.time_utc = when;
  c.cnnbench_version = CNNBENCH_VERSION;
  c.git_revision = CNNBENCH_GIT_REVISION;
  c.compiler = "gcc " __VERSION__;
  const dnnl_version_t* v = dnnl_version();
  c.onednn_version = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  const std::string prefix = "OMPI_MCA_";
  for (char** e = environ; *e; ++e) {
    const std::string var = *e;
    const size_t eq = var.find('=');
    if (var.rfind(prefix, 0) != 0 || eq == std::string::npos) continue;
    const std::string name = var.substr(prefix.size(), eq - prefix.size());
    for (const char* kind : {"btl", "coll", "pml", "mtl", "mpi_"})
      if (name.rfind(kind, 0) == 0) c.mpi_settings[name] = var.substr(eq + 1);
  }
  return c;
}

nlohmann::json to_json(const RunContext& c) {
  return {{"host", c.host},
          {"cpu_model", c.cpu_model},
          {"cpus", c.cpus},
          {"isa", c.isa},
          {"time_utc", c.time_utc},
          {"cnnbench_version", c.cnnbench_version},
          {"git_revision", c.git_revision},
          {"compiler", c.compiler},
          {"library_versions", {{"onednn", c.onednn_version}}},
          {"mpi_settings", c.mpi_settings}};
}

}  // namespace cnnbench
