// comm/host_communicator.h — HostCommunicator: the data plane of the backends that sum in host
// memory (MPI, Gloo), flat or hierarchical (--hierarchical_allreduce).
#pragma once

#include <mpi.h>

#include <vector>

#include "comm/communicator.h"

namespace cnnbench {

// The MPI datatype and sum operation of a wire type (16-bit types: summed in fp32 pairwise and
// rounded back, by operations created once).
MPI_Datatype mpi_datatype(WireType type);
MPI_Op mpi_sum_op(WireType type);

class HostCommunicator : public Communicator {
 public:
  ~HostCommunicator() override;

  // Flat: the backend sums over all ranks. Hierarchical (as Horovod's hierarchical allreduce):
  // the ranks of a host reduce-scatter the buffer among themselves over shared memory (Open
  // MPI's vader transport), each sums its share with the ranks of the same local rank on the
  // other hosts through the backend, and the host's ranks gather the shares back. Across hosts
  // a host then sends 2(H-1)/H of the buffer for H hosts, from all its ranks at once, where a
  // flat ring of N ranks sends 2(N-1)/N of it through each rank, crossing hosts at every step
  // whose neighbours live on different hosts.
  void allreduce_sum(void* data, size_t count, WireType type) final;
  using Communicator::allreduce_sum;
  bool hierarchical() const { return local_ != MPI_COMM_NULL; }

 protected:
  // hierarchical: throws std::invalid_argument unless every host runs the same number of ranks
  // (the shares must line up across hosts).
  explicit HostCommunicator(bool hierarchical);
  // The ranks the backend sums over: all (MPI_COMM_WORLD), or, hierarchical, one per host: those
  // with this rank's local rank.
  MPI_Comm group() const { return group_; }
  int group_rank() const { return group_rank_; }
  int group_size() const { return group_size_; }
  // In-place sum over group() of at most 2^30 elements; called by allreduce_sum() only, inside
  // its collective watch.
  virtual void group_sum(void* data, size_t count, WireType type) = 0;

 private:
  void two_level_sum(char* data, size_t count, WireType type);
  MPI_Comm group_ = MPI_COMM_WORLD, local_ = MPI_COMM_NULL;
  int group_rank_ = 0, group_size_ = 1;
  // this rank's share while it crosses hosts, and every local rank's share in elements (kept:
  // no allocation or page faults per call)
  std::vector<char> share_;
  std::vector<int> share_counts_, share_offsets_;
};

}  // namespace cnnbench
