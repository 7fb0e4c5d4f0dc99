// kernels/ref/ref_plan.h — the reference backend: plain NCHW loops, fp32 storage, double
// accumulation. Slow on purpose; it is the oracle every other backend is tested against.
#pragma once

#include <memory>

#include "kernels/plan.h"

namespace cnnbench {

std::unique_ptr<Plan> make_ref_plan(const Graph& graph, const PlanOptions& options);

}  // namespace cnnbench
