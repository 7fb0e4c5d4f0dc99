#include "kernels/backend.h"

#include <stdexcept>

#include "kernels/onednn/onednn_plan.h"
#include "kernels/ref/ref_plan.h"

namespace cnnbench {

std::vector<std::string> backend_names() { return {"onednn", "ref"}; }

std::unique_ptr<Plan> compile_plan(const std::string& backend, const Graph& graph,
                                   const PlanOptions& options) {
  if (backend == "onednn") return make_onednn_plan(graph, options);
  if (backend == "ref") return make_ref_plan(graph, options);
  std::string known;
  for (const std::string& name : backend_names()) known += (known.empty() ? "" : ", ") + name;
  throw std::invalid_argument("unknown backend '" + backend + "' (known: " + known + ")");
}

}  // namespace cnnbench
