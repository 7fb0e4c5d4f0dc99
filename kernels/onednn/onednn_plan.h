// kernels/onednn/onednn_plan.h — the oneDNN CPU backend (fp32, bf16): a graph compiled into lists
// of oneDNN primitives, built once and replayed every step.
#pragma once

#include <memory>

#include "kernels/plan.h"

namespace cnnbench {

std::unique_ptr<Plan> make_onednn_plan(const Graph& graph, const PlanOptions& options);

}  // namespace cnnbench
