// kernels/arena.h — Arena: one 64-byte aligned, zero-filled block of floats, allocated once.
// A plan owns a parameter arena, a gradient arena and a buffer arena; views are spans into them.
// Large arenas are their own 2 MiB-aligned mappings that ask for transparent huge pages: on the
// VMs cnnbench runs on, first-touching 4 KiB pages costs ~2.6 s per GiB, huge pages ~0.2 s
// (measured on the 2-core CI machine). Being mappings, they go back to the kernel when freed,
// whatever glibc keeps: a plan compiled after another (--repeats) touches memory of its own.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
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
    const size_t raw = floats * sizeof(float);
    if (raw == 0) return;
    if (raw < huge) {
      const size_t bytes = (raw + 63) / 64 * 64;
      data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      if (!data_) throw std::bad_alloc();
      std::memset(data_.get(), 0, bytes);
      return;
    }
    const size_t bytes = (raw + huge - 1) / huge * huge;
    // map one huge page more than needed, then unmap the ends so the block starts on a 2 MiB line
    void* mapped = mmap(nullptr, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<uintptr_t>(mapped);
    const uintptr_t aligned = (start + huge - 1) / huge * huge;
    if (aligned > start) munmap(mapped, aligned - start);
    if (start + huge > aligned) munmap(reinterpret_cast<void*>(aligned + bytes), start + huge - aligned);
    data_ = std::unique_ptr<float[], Free>(reinterpret_cast<float*>(aligned), Free{bytes});
    madvise(data_.get(), bytes, MADV_HUGEPAGE);
    std::memset(data_.get(), 0, bytes);  // the first touch here, not in the first step
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::span<float> span() { return {data_.get(), size_}; }
  std::span<const float> span() const { return {data_.get(), size_}; }

 private:
  struct Free {
    size_t mapped_bytes;  // 0 (value-initialised): from aligned_alloc
    void operator()(float* p) const {
      if (mapped_bytes)
        munmap(p, mapped_bytes);
      else
        std::free(p);
    }
  };
  std::unique_ptr<float[], Free> data_;
  size_t size_ = 0;
};

}  // namespace cnnbench
