#include "kernels/plan.h"

#include <cmath>

namespace cnnbench {

// The graph is copied so that layout_'s ParamSpec pointers stay valid for the plan's life.
Plan::Plan(const Graph& graph) : graph_(graph), layout_(ParamLayout::of(graph_)) {
  params_ = Arena(layout_.param_elements);
  grads_ = Arena(layout_.param_elements);
  momentum_ = Arena(layout_.param_elements);
  buffers_ = Arena(layout_.buffer_elements);
}

bool Plan::gradients_finite() {
  bool finite = true;
  const std::span<const float> g = grads_.span();
#pragma omp parallel for reduction(&& : finite) schedule(static)
  for (size_t i = 0; i < g.size(); ++i) finite = finite && std::isfinite(g[i]);
  return finite;
}

}  // namespace cnnbench
