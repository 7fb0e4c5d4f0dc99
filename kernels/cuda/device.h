// kernels/cuda/device.h — what the GPU build links against and which devices are visible, and
// DeviceBuffer, device memory owned by one object (allocated once, at plan compile time).
#pragma once

#include <cstddef>
#include <string>

namespace cnnbench::cuda {

struct BuildInfo {
  int runtime_version = 0;  // e.g. 13000
  int driver_version = 0;   // 0 where no driver is installed
  size_t cudnn_version = 0;  // e.g. 90100
  int nccl_version = 0;     // e.g. 22804
  int devices = 0;          // visible GPUs (0 without a driver or a device)
  std::string no_device_reason;  // why devices is 0, in the runtime's words
};

BuildInfo build_info();
int visible_devices();  // 0 when there is no driver or no device: never throws

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace cnnbench::cuda
