// kernels/onednn/blocked_layout.h — BlockedLayout: the element offset of (n, c, h, w) in a 4-D
// oneDNN memory whose layout is plain (nchw, nhwc, ...) or blocks channels once (nChw16c,
// nChw8c): offset = n*S0 + (c / B)*S1 + (c % B) + h*S2 + w*S3. Lets small host kernels (the
// CIFAR shortcut) work on the layout oneDNN chose instead of reordering to plain and back.
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <optional>

namespace cnnbench {

struct BlockedLayout {
  int64_t stride_n, stride_cb, stride_h, stride_w, block;
  int64_t offset(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return n * stride_n + (c / block) * stride_cb + (c % block) + h * stride_h + w * stride_w;
  }
  // nullopt for layouts this form cannot describe (more than one inner block, not 4-D, ...).
  static std::optional<BlockedLayout> of(const dnnl::memory::desc& md) {
    const dnnl_memory_desc_t& d = md.data;
    if (d.ndims != 4 || d.format_kind != dnnl_blocked || d.offset0 != 0) return std::nullopt;
    const auto& b = d.format_desc.blocking;
    if (b.inner_nblks > 1 || (b.inner_nblks == 1 && b.inner_idxs[0] != 1)) return std::nullopt;
    const int64_t block = b.inner_nblks == 1 ? b.inner_blks[0] : 1;
    return BlockedLayout{b.strides[0], b.strides[1], b.strides[2], b.strides[3], block};
  }
};

}  // namespace cnnbench
