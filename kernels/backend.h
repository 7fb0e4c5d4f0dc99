// kernels/backend.h — the backend registry: compiles a graph into a Plan by backend name
// ("ref", "onednn", later "cuda"). Compile-time switches for optional backends live here only.
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

}  // namespace cnnbench
