// Which allreduce backends this build has. The only place that knows about optional ones.
#include <stdexcept>

#include "comm/communicator.h"

namespace cnnbench {

std::unique_ptr<Communicator> make_mpi_communicator();
std::unique_ptr<Communicator> make_gloo_communicator();

std::vector<std::string> communicator_backends() { return {"mpi", "gloo"}; }

std::unique_ptr<Communicator> make_communicator(const std::string& backend) {
  if (backend == "mpi") return make_mpi_communicator();
  if (backend == "gloo") return make_gloo_communicator();
  if (backend == "nccl")
    throw std::invalid_argument("allreduce backend 'nccl' needs GPUs and a build with CUDA; this build has mpi, gloo");
  throw std::invalid_argument("unknown allreduce backend '" + backend + "' (known: mpi, gloo)");
}

}  // namespace cnnbench
