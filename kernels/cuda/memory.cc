// kernels/cuda/memory.cc — allocates the cuda plan's activations and gradients in one device
// arena where kernels/device_tensors.h placed them by their lifetimes, and says how much memory
// a plan that does not fit would need.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

#include "kernels/cuda/plan_internal.h"
#include "kernels/memory_plan.h"

namespace cnnbench::cuda {

// cuDNN's tensor descriptors count elements in 32-bit ints: the batch at which the largest
// activation of the graph still has fewer than 2^31.
int64_t CudaPlan::largest_batch_for_descriptors() const {
  int64_t per_image = 1;
  for (const Node& node : graph_.nodes) {
    const Shape s = stored_shape(node.id);
    if (s.n > 0) per_image = std::max(per_image, s.elements() / s.n);
  }
  return std::numeric_limits<int32_t>::max() / per_image;
}

// Before the algorithm search makes descriptors and takes memory of its own: an arena larger
// than the free memory, or a tensor beyond cuDNN's descriptors, is one line naming the batch that
// would run.
void CudaPlan::check_tensors_fit() {
  tensor_bytes_ = tensors_.arena_bytes;
  unshared_tensor_bytes_ = tensors_.unshared_bytes;
  pool_index_bytes_ = 0;  // overlapping max pools' windows' places, a byte an output element (pool.cc)
  for (const Node& node : graph_.nodes)
    if (indexed_max_pool(node)) pool_index_bytes_ += static_cast<size_t>(node.out.elements());
  size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  if (batch_bytes() > free) throw OutOfMemory(batch_bytes(), free, total);
  const int64_t batch = graph_.batch_size(), limit = largest_batch_for_descriptors();
  if (batch > limit)
    throw std::invalid_argument("backend 'cuda': batch " + std::to_string(batch) + " gives tensors of more than 2^31 elements, " +
                                "which cuDNN's descriptors do not take: the largest batch the CUDA backend runs " +
                                "for this model is " + std::to_string(limit) + " per GPU");
}

void CudaPlan::place_tensors() {
  d_tensors_ = DeviceBuffer(std::max<size_t>(tensor_bytes_, 256));
  CUDA_CHECK(cudaMemset(d_tensors_.data(), 0, d_tensors_.bytes()));  // gradients nothing writes read as zero
  char* base = d_tensors_.as<char>();
  for (const Node& node : graph_.nodes) {
    out_[node.id] = tensors_.out_offset[node.id] >= 0 ? base + tensors_.out_offset[node.id] : nullptr;
    diff_[node.id] = tensors_.diff_offset[node.id] >= 0 ? base + tensors_.diff_offset[node.id] : nullptr;
  }
}

// The bytes that grow with the batch: the arena, and the pools' places allocated beside it.
size_t CudaPlan::batch_bytes() const { return tensor_bytes_ + pool_index_bytes_; }
size_t CudaPlan::working_memory_bytes() const { return batch_bytes() + workspace_.bytes(); }
size_t CudaPlan::unshared_working_memory_bytes() const {
  return unshared_tensor_bytes_ + pool_index_bytes_ + workspace_.bytes();
}

int64_t CudaPlan::peak_device_memory_bytes() const { return peak_device_bytes_; }

void CudaPlan::sample_device_memory() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) == cudaSuccess)
    peak_device_bytes_ = std::max(peak_device_bytes_, static_cast<int64_t>(total - free));
}

// An allocation the device refused: what the plan holds, what it asked for, and the batch that
// would fit, from the activations' bytes per image (the part of a plan that grows with the batch).
std::string CudaPlan::out_of_memory(const OutOfMemory& e) const {
  const auto gib = gib_text;
  const int64_t batch = graph_.batch_size();
  std::string s = "GPU out of memory at batch " + std::to_string(batch) + ": " + gib(static_cast<double>(e.asked)) +
                  " asked with " + gib(static_cast<double>(e.free)) + " free of " + gib(static_cast<double>(e.total));
  if (tensor_bytes_ == 0 || batch <= 0) return s;
  const double grows = static_cast<double>(batch_bytes()), per_image = grows / static_cast<double>(batch);
  // what grows with the batch may hold what the request lacks: its room is its bytes less the shortfall
  const int64_t fits = largest_batch_that_fits(batch, grows, grows - static_cast<double>(e.asked - std::min(e.asked, e.free)));
  s += " (activations and gradients: " + gib(static_cast<double>(batch_bytes())) + ", " +
       std::to_string(static_cast<int64_t>(per_image / (1 << 20))) + " MiB per image)";
  s += fits >= 1 ? "; the largest batch that fits is about " + std::to_string(std::min(fits, largest_batch_for_descriptors()))
                 : "; not even batch 1 fits beside what this plan holds";
  return s;
}

}  // namespace cnnbench::cuda
