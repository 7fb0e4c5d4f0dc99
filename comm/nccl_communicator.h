// comm/nccl_communicator.h — the NCCL data plane (GPU builds only). One rank per GPU: each rank
// takes the GPU of its local rank (cuda::use_device_for_rank), rank 0's ncclUniqueId is
// broadcast over MPI, and allreduces run on device memory. A collective that reports an
// asynchronous error, or does not finish within the timeout, aborts the communicator and
// throws, so the job ends with a message instead of hanging.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>

#include "comm/communicator.h"

namespace cnnbench {

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(double timeout_sec = 300);
  ~NcclCommunicator() override;
  std::string backend() const override { return "nccl"; }

  // `data` is device memory; waits until the sum is there.
  void allreduce_sum(void* data, size_t count, WireType type) override;
  // Queues the in-place sum on `stream` and returns.
  void allreduce_async(void* data, size_t count, WireType type, cudaStream_t stream);
  // Throws (after aborting the communicator) on an asynchronous NCCL error, or when a wait has
  // lasted `waited_sec` > the timeout.
  void check_health(double waited_sec);
  // Runs before an abort: ncclCommAbort waits until every CUDA graph holding this communicator's
  // work is destroyed (a plan's captured backward), so the plan drops its graphs here.
  void set_before_abort(std::function<void()> f) { before_abort_ = std::move(f); }
  int device() const { return device_; }

 private:
  [[noreturn]] void abort_with(const std::string& why);
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
  double timeout_sec_;
  bool aborted_ = false;
  std::function<void()> before_abort_;
};

}  // namespace cnnbench
