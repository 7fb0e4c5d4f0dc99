// The MPI data plane: MPI_Allreduce in place over the group (all ranks, or one per host under
// --hierarchical_allreduce); 16-bit wire types are summed by user-defined operations. Counts
// above INT_MAX go in pieces.
#include <mpi.h>

#include <algorithm>

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
    char* p = static_cast<char*>(data);
    for (size_t done = 0; done < count;) {
      const int n = static_cast<int>(std::min<size_t>(count - done, 1 << 30));
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, p + done * wire_type_size(type), n, mpi_datatype(type), mpi_sum_op(type),
                              group()),
                "MPI_Allreduce");
      done += n;
    }
  }
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(bool hierarchical) {
  return std::make_unique<MpiCommunicator>(hierarchical);
}

}  // namespace cnnbench
