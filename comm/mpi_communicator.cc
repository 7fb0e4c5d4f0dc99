// The MPI data plane: MPI_Allreduce in place; 16-bit wire types are summed by a user-defined
// operation. Counts above INT_MAX go in pieces.
#include <mpi.h>

#include <algorithm>
#include <stdexcept>

#include "comm/communicator.h"
#include "comm/wire_cast.h"

namespace cnnbench {
namespace {

void sum_f16(void* in, void* inout, int* count, MPI_Datatype*) {
  sum_wire16(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), *count, WireType::f16);
}
void sum_bf16(void* in, void* inout, int* count, MPI_Datatype*) {
  sum_wire16(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), *count, WireType::bf16);
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    MPI_Op_create(sum_f16, 1, &sum_f16_);
    MPI_Op_create(sum_bf16, 1, &sum_bf16_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      MPI_Op_free(&sum_f16_);
      MPI_Op_free(&sum_bf16_);
    }
  }
  std::string backend() const override { return "mpi"; }

  void allreduce_sum(void* data, size_t count, WireType type) override {
    if (size_ == 1) return;
    const MPI_Datatype datatype = type == WireType::f32 ? MPI_FLOAT : MPI_UINT16_T;
    const MPI_Op op = type == WireType::f32 ? MPI_SUM : type == WireType::f16 ? sum_f16_ : sum_bf16_;
    char* p = static_cast<char*>(data);
    const auto watching = watch(CollectivePlane::data, "allreduce of gradients");
    for (size_t done = 0; done < count;) {
      const int n = static_cast<int>(std::min<size_t>(count - done, 1 << 30));
      const int code = MPI_Allreduce(MPI_IN_PLACE, p + done * wire_type_size(type), n, datatype, op, MPI_COMM_WORLD);
      if (code != MPI_SUCCESS) {
        char text[MPI_MAX_ERROR_STRING] = {};
        int length = 0;
        MPI_Error_string(code, text, &length);
        throw std::runtime_error("MPI_Allreduce failed: " + std::string(text, length));
      }
      done += n;
    }
  }

 private:
  MPI_Op sum_f16_ = MPI_OP_NULL, sum_bf16_ = MPI_OP_NULL;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

}  // namespace cnnbench
