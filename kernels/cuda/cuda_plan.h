// kernels/cuda/cuda_plan.h — the cuda backend: a graph compiled into cuDNN, cuBLAS and small
// CUDA kernel launches on one stream of the current device, replayed every step.
#pragma once

#include <memory>

#include "kernels/plan.h"

namespace cnnbench {

std::unique_ptr<Plan> make_cuda_plan(const Graph& graph, const PlanOptions& options);

}  // namespace cnnbench
