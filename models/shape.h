// models/shape.h — Shape: the NCHW extent of one tensor in the graph IR.
// A 2-D tensor (batch x features) is stored as {n, c, 1, 1}.
#pragma once

#include <cstdint>
#include <string>

namespace cnnbench {

struct Shape {
  int64_t n = 0, c = 0, h = 1, w = 1;

  int64_t elements() const { return n * c * h * w; }
  int64_t per_sample() const { return c * h * w; }
  bool operator==(const Shape&) const = default;
  std::string str() const {
    return std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) + "x" +
           std::to_string(w);
  }
};

}  // namespace cnnbench
