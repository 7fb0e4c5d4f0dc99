#include "kernels/cuda/device.h"

#include <string>
#include <utility>

#include "kernels/cuda/cuda_check.h"

namespace cnnbench::cuda {

int visible_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

BuildInfo build_info() {
  BuildInfo info;
  cudaRuntimeGetVersion(&info.runtime_version);
  if (cudaDriverGetVersion(&info.driver_version) != cudaSuccess) info.driver_version = 0;
  info.cudnn_version = cudnnGetVersion();
  ncclGetVersion(&info.nccl_version);
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    info.no_device_reason = cudaGetErrorString(e);
    cudaGetLastError();
    count = 0;
  } else if (count == 0) {
    info.no_device_reason = "no CUDA device visible";
  }
  info.devices = count;
  return info;
}

OutOfMemory::OutOfMemory(size_t asked_bytes, size_t free_bytes, size_t total_bytes)
    : std::runtime_error("GPU out of memory: " + std::to_string(asked_bytes >> 20) + " MiB asked, " +
                         std::to_string(free_bytes >> 20) + " MiB free of " + std::to_string(total_bytes >> 20) + " MiB"),
      asked(asked_bytes),
      free(free_bytes),
      total(total_bytes) {}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t e = cudaMalloc(&data_, bytes);
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    data_ = nullptr;
    throw OutOfMemory(bytes, free, total);
  }
  cuda::check(e, "cudaMalloc", __FILE__ ":" CNNBENCH_STR(__LINE__));
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  if (bytes > bytes_) throw std::runtime_error("DeviceBuffer::upload: more bytes than the buffer holds");
  CUDA_CHECK(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice));
  // From pageable memory cudaMemcpy may return once the bytes are staged, before they land; the
  // plan's streams do not wait for the legacy stream, so wait here for the copy to finish.
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  if (bytes > bytes_) throw std::runtime_error("DeviceBuffer::download: more bytes than the buffer holds");
  CUDA_CHECK(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost));
}

}  // namespace cnnbench::cuda

namespace cnnbench::cuda {

int use_device_for_rank(int local_rank) {
  const int count = visible_devices();
  if (count == 0) throw std::runtime_error("no GPU is visible (" + build_info().no_device_reason + ")");
  const int device = local_rank % count;
  CUDA_CHECK(cudaSetDevice(device));
  return device;
}

std::string device_name() {
  int device = 0;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

int compute_capability() {
  int device = 0;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.major * 10 + prop.minor;
}

}  // namespace cnnbench::cuda
