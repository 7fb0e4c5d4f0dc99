#include "comm/nccl_communicator.h"

#include <chrono>
#include <string>
#include <thread>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"

namespace cnnbench {
namespace {

ncclDataType_t nccl_type(WireType t) {
  switch (t) {
    case WireType::f32: return ncclFloat32;
    case WireType::f16: return ncclFloat16;
    case WireType::bf16: return ncclBfloat16;
  }
  return ncclFloat32;
}

}  // namespace

NcclCommunicator::NcclCommunicator(double timeout_sec) : timeout_sec_(timeout_sec) {
  std::string error;
  try {
    device_ = cuda::use_device_for_rank(local_rank_);
  } catch (const std::exception& e) {
    error = std::string("--allreduce=nccl: ") + e.what();
  }
  if (report_errors_together(error)) throw ErrorsReported{2};  // before any rank waits in a collective
  ncclUniqueId id{};
  if (rank_ == 0) CUDA_CHECK(ncclGetUniqueId(&id));
  broadcast(&id, sizeof(id), 0);
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  CUDA_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) aborted_ ? ncclCommAbort(comm_) : ncclCommDestroy(comm_);
  if (stream_) cudaStreamDestroy(stream_);
}

void NcclCommunicator::allreduce_async(void* data, size_t count, WireType type, cudaStream_t stream) {
  if (aborted_) throw std::runtime_error("NCCL communicator was aborted after an earlier failure");
  CUDA_CHECK(ncclAllReduce(data, data, count, nccl_type(type), ncclSum, comm_, stream));
}

void NcclCommunicator::allreduce_sum(void* data, size_t count, WireType type) {
  allreduce_async(data, count, type, stream_);
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream_);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) CUDA_CHECK(e);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    check_health(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

void NcclCommunicator::check_health(double waited_sec) {
  ncclResult_t async = ncclSuccess;
  CUDA_CHECK(ncclCommGetAsyncError(comm_, &async));
  if (async != ncclSuccess && async != ncclInProgress)
    abort_with(std::string("NCCL reported an asynchronous error: ") + ncclGetErrorString(async) + " (" +
               ncclGetLastError(comm_) + ")");
  if (waited_sec > timeout_sec_)
    abort_with("an NCCL collective did not finish within " + std::to_string(static_cast<int>(timeout_sec_)) +
               " s (--collective_timeout_sec): a rank stopped or the network hangs");
}

void NcclCommunicator::abort_with(const std::string& why) {
  aborted_ = true;
  if (before_abort_) {
    try {
      before_abort_();
    } catch (...) {  // the abort and its message come first
    }
  }
  ncclCommAbort(comm_);
  comm_ = nullptr;
  throw std::runtime_error(why);
}

std::unique_ptr<Communicator> make_nccl_communicator(double timeout_sec) {
  return std::make_unique<NcclCommunicator>(timeout_sec);
}

}  // namespace cnnbench
