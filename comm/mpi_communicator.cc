// The MPI data plane: MPI_Allreduce in place over the group (all ranks, or one per host under
// --hierarchical_allreduce); 16-bit wire types are summed by user-defined operations.
#include <mpi.h>

#include "comm/host_communicator.h"

namespace cnnbench {
namespace {

class MpiCommunicator final : public HostCommunicator {
 public:
  explicit MpiCommunicator(bool hierarchical) : HostCommunicator(hierarchical) {}
  std::string backend() const override { return "mpi"; }

 protected:
  void group_sum(void* data, size_t count, WireType type) override {
    if (group_size() == 1) return;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), mpi_datatype(type), mpi_sum_op(type), group()),
              "MPI_Allreduce");
  }
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(bool hierarchical) {
  return std::make_unique<MpiCommunicator>(hierarchical);
}

}  // namespace cnnbench
