// harness/data/crc32c.h — CRC-32C (Castagnoli), as TFRecord files checksum their records: SSE4.2's
// crc32 instruction where the CPU has it, a table otherwise (the same values either way).
#pragma once

#include <cstddef>
#include <cstdint>

namespace cnnbench {

// CRC-32C of `size` bytes, continuing from `crc` (0 to start).
uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);
// The table path alone, whatever the CPU (for tests that compare both paths).
uint32_t crc32c_table(const void* data, size_t size, uint32_t crc = 0);

// TFRecord's masked form: a CRC of data that itself holds CRCs is less likely to collide.
inline uint32_t mask_crc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t masked_crc32c(const void* data, size_t size) { return mask_crc(crc32c(data, size)); }

}  // namespace cnnbench
