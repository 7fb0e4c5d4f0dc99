// kernels/tensor_chunks.h — an arena of tensors cut into chunks that never cross a tensor's end,
// for updates that launch once over many tensors but need each tensor's own figures (LARS on a
// GPU: one launch sums every weight's norms chunk by chunk, one applies each tensor's trust ratio).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cnnbench {

struct TensorChunk {
  int64_t start = 0;     // arena offset of its first element
  int32_t elements = 0;  // at most the chunk size asked for
  int32_t tensor = 0;    // index into the offsets it was cut from
};

// Tensor k covers [offsets[k], offsets[k] + sizes[k]) in increasing order of offsets; each is cut
// into chunks of at most max_chunk elements, in arena order (an empty tensor has none).
inline std::vector<TensorChunk> cut_into_chunks(const std::vector<int64_t>& offsets, const std::vector<int64_t>& sizes,
                                                int64_t max_chunk) {
  if (offsets.size() != sizes.size() || max_chunk <= 0 || max_chunk > INT32_MAX)
    throw std::invalid_argument("cut_into_chunks: offsets and sizes differ in length, or a bad chunk size");
  std::vector<TensorChunk> chunks;
  for (size_t k = 0; k < offsets.size(); ++k) {
    if (k > 0 && offsets[k] < offsets[k - 1] + sizes[k - 1])
      throw std::invalid_argument("cut_into_chunks: tensor " + std::to_string(k) + " overlaps or precedes the one before");
    for (int64_t done = 0; done < sizes[k]; done += max_chunk)
      chunks.push_back({offsets[k] + done, static_cast<int32_t>(std::min(max_chunk, sizes[k] - done)),
                        static_cast<int32_t>(k)});
  }
  return chunks;
}

// first[t] is tensor t's first chunk and first[t + 1] one past its last (first has tensors + 1
// entries; an empty tensor's range is empty): a tensor's chunks sum their partial results in order.
inline std::vector<int32_t> first_chunks(const std::vector<TensorChunk>& chunks, int32_t tensors) {
  std::vector<int32_t> first(static_cast<size_t>(tensors) + 1, static_cast<int32_t>(chunks.size()));
  for (size_t i = chunks.size(); i-- > 0;) first[chunks[i].tensor] = static_cast<int32_t>(i);
  for (int32_t t = tensors; t-- > 0;) first[t] = std::min(first[t], first[t + 1]);
  return first;
}

// The chunks [first, last) inside the arena range [offset, offset + count): a range that holds
// only part of a tensor is a caller's error (an update would see only part of its norm).
inline std::pair<size_t, size_t> chunks_within(const std::vector<TensorChunk>& chunks, int64_t offset, int64_t count) {
  const auto starts_before = [](const TensorChunk& c, int64_t at) { return c.start < at; };
  const size_t first = std::lower_bound(chunks.begin(), chunks.end(), offset, starts_before) - chunks.begin();
  const size_t last = std::lower_bound(chunks.begin(), chunks.end(), offset + count, starts_before) - chunks.begin();
  const auto splits = [&](size_t i) { return i > 0 && i < chunks.size() && chunks[i].tensor == chunks[i - 1].tensor; };
  const auto end_of = [&](size_t i) { return chunks[i].start + chunks[i].elements; };
  const bool starts_inside = first > 0 && end_of(first - 1) > offset;
  const bool ends_inside = last > 0 && end_of(last - 1) > offset + count;
  if (splits(first) || splits(last) || starts_inside || ends_inside)
    throw std::logic_error("an update over arena elements [" + std::to_string(offset) + ", " +
                           std::to_string(offset + count) + ") holds part of a tensor");
  return {first, last};
}

}  // namespace cnnbench
