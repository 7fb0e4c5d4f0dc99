#include "comm/host_communicator.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "comm/wire_cast.h"

namespace cnnbench {
namespace {

void sum_f16(void* in, void* inout, int* count, MPI_Datatype*) {
  sum_wire16(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), *count, WireType::f16);
}
void sum_bf16(void* in, void* inout, int* count, MPI_Datatype*) {
  sum_wire16(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), *count, WireType::bf16);
}

bool mpi_finalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

}  // namespace

MPI_Datatype mpi_datatype(WireType type) { return type == WireType::f32 ? MPI_FLOAT : MPI_UINT16_T; }

MPI_Op mpi_sum_op(WireType type) {
  // Created on first use (after MPI_Init); MPI_Finalize frees them.
  static const MPI_Op f16 = [] {
    MPI_Op op;
    MPI_Op_create(sum_f16, 1, &op);
    return op;
  }();
  static const MPI_Op bf16 = [] {
    MPI_Op op;
    MPI_Op_create(sum_bf16, 1, &op);
    return op;
  }();
  return type == WireType::f32 ? MPI_SUM : type == WireType::f16 ? f16 : bf16;
}

HostCommunicator::HostCommunicator(bool hierarchical) {
  group_rank_ = rank_;
  group_size_ = size_;
  if (!hierarchical) {
    // the data plane's own communicator: the communication thread's allreduces may run while
    // the compute thread uses the control plane (--overlap_forward leaves them running into
    // the next step, past the step's report)
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &group_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(group_, MPI_ERRORS_RETURN);
    return;
  }
  double ranks_per_host[2] = {static_cast<double>(local_size_), -static_cast<double>(local_size_)};
  allreduce_max(ranks_per_host, 2);  // the most and (negated) the fewest ranks on a host
  if (ranks_per_host[0] != -ranks_per_host[1])
    throw std::invalid_argument("--hierarchical_allreduce needs the same number of ranks on every host (these hosts run " +
                                std::to_string(static_cast<int>(-ranks_per_host[1])) + " to " +
                                std::to_string(static_cast<int>(ranks_per_host[0])) + ")");
  // the same split as the base class's local rank: shared memory, ordered by world rank
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_),
            "MPI_Comm_split_type");
  check_mpi(MPI_Comm_split(MPI_COMM_WORLD, local_rank_, rank_, &group_), "MPI_Comm_split");
  MPI_Comm_set_errhandler(local_, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(group_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(group_, &group_rank_);
  MPI_Comm_size(group_, &group_size_);
  share_counts_.resize(local_size_);
  share_offsets_.resize(local_size_);
}

HostCommunicator::~HostCommunicator() {
  if (mpi_finalized()) return;
  if (local_ != MPI_COMM_NULL) MPI_Comm_free(&local_);
  if (group_ != MPI_COMM_WORLD) MPI_Comm_free(&group_);
}

void HostCommunicator::allreduce_sum(void* data, size_t count, WireType type) {
  if (size_ == 1 || count == 0) return;
  const auto watching = watch(CollectivePlane::data, "allreduce of gradients");
  const bool two_levels = hierarchical() && local_size_ > 1;
  char* p = static_cast<char*>(data);
  for (size_t done = 0; done < count;) {  // MPI counts are int: pieces of at most 2^30 elements
    const size_t n = std::min<size_t>(count - done, size_t{1} << 30);
    two_levels ? two_level_sum(p + done * wire_type_size(type), n, type)
               : group_sum(p + done * wire_type_size(type), n, type);
    done += n;
  }
}

void HostCommunicator::two_level_sum(char* data, size_t count, WireType type) {
  const size_t element = wire_type_size(type);
  std::vector<int>& counts = share_counts_;
  std::vector<int>& offsets = share_offsets_;
  for (int i = 0; i < local_size_; ++i) {
    offsets[i] = static_cast<int>(count * i / local_size_);
    counts[i] = static_cast<int>(count * (i + 1) / local_size_) - offsets[i];
  }
  const size_t mine = static_cast<size_t>(counts[local_rank_]);
  if (share_.size() < mine * element) share_.resize(mine * element);
  check_mpi(MPI_Reduce_scatter(data, share_.data(), counts.data(), mpi_datatype(type), mpi_sum_op(type), local_),
            "MPI_Reduce_scatter within the host");
  group_sum(share_.data(), mine, type);  // every rank of the group has the same share size
  if (mine > 0) std::memcpy(data + offsets[local_rank_] * element, share_.data(), mine * element);  // none: null
  check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, counts.data(), offsets.data(),
                           mpi_datatype(type), local_),
            "MPI_Allgatherv within the host");
}

}  // namespace cnnbench
