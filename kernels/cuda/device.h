// kernels/cuda/device.h — what the GPU build links against and which devices are visible, and
// DeviceBuffer, device memory owned by one object (allocated once, at plan compile time; OutOfMemory
// where the device refuses it).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "kernels/dtype.h"

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

// One rank per GPU: makes GPU (local_rank mod visible GPUs) current and returns its index.
// Throws with the runtime's reason when no GPU is visible.
int use_device_for_rank(int local_rank);

// The current GPU's name and its measured dense matrix-multiply rate in GFLOP/s for `type`
// (cuBLAS, 8192^3, fp32 accumulation; fp32 in TF32 when allow_tf32): the ceiling that
// "fraction of peak" is taken against.
std::string device_name();
int compute_capability();  // the current GPU's, as 10 * major + minor (90 on an H100)
double matmul_peak_gflops(DType type, bool allow_tf32);

// cudaMalloc refused: the bytes asked for and what the device had free then.
struct OutOfMemory : std::runtime_error {
  OutOfMemory(size_t asked, size_t free, size_t total);
  size_t asked, free, total;
};

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
