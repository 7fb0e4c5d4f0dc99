#include "kernels/plan.h"

namespace cnnbench {

// The graph is copied so that layout_'s ParamSpec pointers stay valid for the plan's life.
Plan::Plan(const Graph& graph) : graph_(graph), layout_(ParamLayout::of(graph_)) {
  params_ = Arena(layout_.param_elements);
  grads_ = Arena(layout_.param_elements);
  momentum_ = Arena(layout_.param_elements);
  buffers_ = Arena(layout_.buffer_elements);
}

}  // namespace cnnbench
