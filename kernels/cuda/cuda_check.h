// kernels/cuda/cuda_check.h — every CUDA, cuDNN and NCCL call is checked: a failure throws
// std::runtime_error naming the call site and the library's own message.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace cnnbench::cuda {

[[noreturn]] inline void fail(const char* what, const char* where, const std::string& message) {
  throw std::runtime_error(std::string(where) + ": " + what + ": " + message);
}

inline void check(cudaError_t e, const char* what, const char* where) {
  if (e != cudaSuccess) fail(what, where, cudaGetErrorString(e));
}
inline void check(cudnnStatus_t e, const char* what, const char* where) {
  if (e != CUDNN_STATUS_SUCCESS) fail(what, where, cudnnGetErrorString(e));
}
inline void check(ncclResult_t e, const char* what, const char* where) {
  if (e != ncclSuccess) fail(what, where, ncclGetErrorString(e));
}

}  // namespace cnnbench::cuda

#define CNNBENCH_STR2(x) #x
#define CNNBENCH_STR(x) CNNBENCH_STR2(x)
#define CUDA_CHECK(call) ::cnnbench::cuda::check((call), #call, __FILE__ ":" CNNBENCH_STR(__LINE__))
