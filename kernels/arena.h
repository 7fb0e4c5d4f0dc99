// kernels/arena.h — Arena: one 64-byte aligned, zero-filled block of floats, allocated once.
// A plan owns a parameter arena, a gradient arena and a buffer arena; views are spans into them.
// Large arenas ask for transparent huge pages: on the VMs cnnbench runs on, first-touching
// 4 KiB pages costs ~2.6 s per GiB, huge pages ~0.2 s (measured on the 2-core CI machine).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>

namespace cnnbench {

class Arena {
 public:
  Arena() = default;
  explicit Arena(size_t floats) : size_(floats) {
    constexpr size_t huge = size_t{2} << 20;
    const size_t align = floats * sizeof(float) >= huge ? huge : 64;
    const size_t bytes = ((floats * sizeof(float) + align - 1) / align) * align;
    if (bytes == 0) return;
    data_.reset(static_cast<float*>(std::aligned_alloc(align, bytes)));
    if (!data_) throw std::bad_alloc();
    if (align == huge) madvise(data_.get(), bytes, MADV_HUGEPAGE);
    std::memset(data_.get(), 0, bytes);
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::span<float> span() { return {data_.get(), size_}; }
  std::span<const float> span() const { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> data_;
  size_t size_ = 0;
};

}  // namespace cnnbench
