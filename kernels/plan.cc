#include "kernels/plan.h"

#include "kernels/device_plan.h"

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

double Plan::decayed_weights_l2(const SgdConfig& config) {
  if (DevicePlan* d = device()) d->download_parameters();
  double sum = 0;
  for (const ArenaEntry& e : layout_.params) {
    if (config.lars ? !lars_adapts(*e.spec) : e.batch_norm && !config.decay_batch_norm) continue;
    const float* w = params_.data() + e.offset;
    double tensor = 0;
#pragma omp parallel for reduction(+ : tensor) schedule(static)
    for (int64_t i = 0; i < e.elements; ++i) tensor += static_cast<double>(w[i]) * w[i];
    sum += tensor;
  }
  return sum / 2;
}

int64_t Plan::exchange_offset(int param_index) const {
  if (const DevicePlan* d = device()) return d->gradient_offset(param_index);
  return layout_.params[param_index].offset;
}

int64_t Plan::exchange_elements() const {
  if (const DevicePlan* d = device()) return d->gradient_elements();
  return layout_.param_elements;
}

}  // namespace cnnbench
