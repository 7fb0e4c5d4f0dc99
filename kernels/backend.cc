#include "kernels/backend.h"

#include <stdexcept>

#include "kernels/onednn/onednn_plan.h"
#include "kernels/ref/ref_plan.h"
#ifdef CNNBENCH_WITH_CUDA
#include "kernels/cuda/cuda_plan.h"
#include "kernels/cuda/device.h"
#endif

namespace cnnbench {
namespace {

#ifndef CNNBENCH_WITH_CUDA
[[noreturn]] void no_cuda_build() {
  throw std::invalid_argument(
      "backend 'cuda' needs a GPU build (CUDA toolkit, cuDNN and NCCL found by CMake); this build has onednn, ref");
}
#endif

}  // namespace

std::vector<std::string> backend_names() {
#ifdef CNNBENCH_WITH_CUDA
  return {"cuda", "onednn", "ref"};
#else
  return {"onednn", "ref"};
#endif
}

bool is_device_backend(const std::string& backend) { return backend == "cuda"; }

std::unique_ptr<Plan> compile_plan(const std::string& backend, const Graph& graph,
                                   const PlanOptions& options) {
  if (backend == "onednn") return make_onednn_plan(graph, options);
  if (backend == "ref") return make_ref_plan(graph, options);
#ifdef CNNBENCH_WITH_CUDA
  if (backend == "cuda") return make_cuda_plan(graph, options);
#else
  if (backend == "cuda") no_cuda_build();
#endif
  std::string known;
  for (const std::string& name : backend_names()) known += (known.empty() ? "" : ", ") + name;
  throw std::invalid_argument("unknown backend '" + backend + "' (known: " + known + ")");
}

std::string use_device_for_rank(const std::string& backend, int local_rank) {
  if (!is_device_backend(backend)) return "cpu";
#ifdef CNNBENCH_WITH_CUDA
  const int device = cuda::use_device_for_rank(local_rank);
  return std::to_string(device) + " (" + cuda::device_name() + ")";
#else
  (void)local_rank;
  no_cuda_build();
#endif
}

double device_peak_gflops(const std::string& backend, DType type, bool allow_tf32) {
  if (!is_device_backend(backend)) return 0;
#ifdef CNNBENCH_WITH_CUDA
  return cuda::matmul_peak_gflops(type, allow_tf32);
#else
  (void)type;
  (void)allow_tf32;
  no_cuda_build();
#endif
}

}  // namespace cnnbench
