// Which allreduce backends this build has. The only place that knows about optional ones.
#include <stdexcept>

#include "comm/communicator.h"
#include "comm/gradient_exchange.h"
#include "kernels/device_plan.h"
#ifdef CNNBENCH_WITH_CUDA
#include "comm/nccl_communicator.h"
#include "comm/nccl_reducer.h"
#endif

namespace cnnbench {

std::unique_ptr<Communicator> make_mpi_communicator(bool hierarchical);
std::unique_ptr<Communicator> make_gloo_communicator(double watchdog_timeout_sec, bool hierarchical);
#ifdef CNNBENCH_WITH_CUDA
std::unique_ptr<Communicator> make_nccl_communicator(double timeout_sec);
#endif

std::vector<std::string> communicator_backends() {
#ifdef CNNBENCH_WITH_CUDA
  return {"mpi", "gloo", "nccl"};
#else
  return {"mpi", "gloo"};
#endif
}

std::unique_ptr<Communicator> make_communicator(const std::string& backend, double timeout_sec, bool hierarchical) {
  std::unique_ptr<Communicator> comm;
  if (backend == "mpi") comm = make_mpi_communicator(hierarchical);
  if (backend == "gloo") comm = make_gloo_communicator(timeout_sec, hierarchical);
#ifdef CNNBENCH_WITH_CUDA
  if (backend == "nccl" && hierarchical)
    throw std::invalid_argument("--hierarchical_allreduce sums in host memory (mpi, gloo); NCCL builds its rings and trees from the node topology itself");
  if (backend == "nccl") comm = make_nccl_communicator(timeout_sec);
#else
  if (backend == "nccl")
    throw std::invalid_argument("allreduce backend 'nccl' needs a GPU build (CUDA, cuDNN and NCCL); this build has mpi, gloo");
#endif
  if (comm) return comm;
  std::string known;
  for (const std::string& name : communicator_backends()) known += (known.empty() ? "" : ", ") + name;
  throw std::invalid_argument("unknown allreduce backend '" + backend + "' (known: " + known + ")");
}

std::unique_ptr<GradientExchange> make_device_reducer(Communicator& comm, DevicePlan& plan,
                                                      const std::vector<TensorExtent>& tensors,
                                                      const BucketSizes& bucket_sizes, WireType wire) {
#ifdef CNNBENCH_WITH_CUDA
  auto* nccl = dynamic_cast<NcclCommunicator*>(&comm);
  if (!nccl)
    throw std::invalid_argument("gradients in GPU memory are averaged with --allreduce=nccl, not " + comm.backend());
  plan.set_wait_hook([nccl](double waited_sec) { nccl->check_health(waited_sec); });
  return std::make_unique<NcclReducer>(*nccl, static_cast<float*>(plan.device_gradients()), tensors,
                                       bucket_sizes, wire, static_cast<cudaStream_t>(plan.device_stream()));
#else
  (void)comm;
  (void)plan;
  (void)tensors;
  (void)bucket_sizes;
  (void)wire;
  throw std::invalid_argument("gradients in GPU memory need a GPU build");
#endif
}

}  // namespace cnnbench
