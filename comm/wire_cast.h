// comm/wire_cast.h — gradient compression on the wire: fp32 <-> fp16/bf16 casts (F16C /
// AVX-512 where the CPU has them) and the element-wise sum of two 16-bit buffers that the
// allreduce backends use as their reduction (each pair summed in fp32, then rounded).
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/communicator.h"

namespace cnnbench {

void cast_to_wire(const float* src, uint16_t* dst, size_t count, WireType type);
// dst = scale * src
void cast_from_wire(const uint16_t* src, float* dst, size_t count, WireType type, float scale);
// inout[i] = inout[i] + in[i], in the 16-bit type
void sum_wire16(const uint16_t* in, uint16_t* inout, size_t count, WireType type);

}  // namespace cnnbench
