// kernels/backend.h — the backend registry: compiles a graph into a Plan by backend name
// ("ref", "onednn", and "cuda" where the CUDA toolkit was found). Compile-time switches for optional backends live here only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/plan.h"

namespace cnnbench {

std::vector<std::string> backend_names();

// Throws std::invalid_argument for an unknown backend or a graph/dtype it cannot run.
std::unique_ptr<Plan> compile_plan(const std::string& backend, const Graph& graph,
                                   const PlanOptions& options = {});

// Whether the onednn backend can compute in bf16 on this CPU (AVX-512 or newer); a bf16 plan is
// refused with that reason where it cannot.
bool cpu_computes_bf16();

// True for backends whose plans run on a GPU ("cuda").
bool is_device_backend(const std::string& backend);
// Device backends: makes this rank's GPU current (local rank mod visible GPUs) and returns
// "<index> (<name>)"; throws where the build or the machine has none. CPU backends: "cpu".
std::string use_device_for_rank(const std::string& backend, int local_rank);
// Device backends: the GPU's measured matrix-multiply GFLOP/s in `type`; 0 for CPU backends.
double device_peak_gflops(const std::string& backend, DType type, bool allow_tf32);

}  // namespace cnnbench
