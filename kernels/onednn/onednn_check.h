// kernels/onednn/onednn_check.h — ONEDNN_CHECK(what, expr): runs a oneDNN call and turns a
// dnnl::error into std::runtime_error naming host/rank, file:line, what was being built
// (node and primitive) and oneDNN's own status and message.
#pragma once

#include <dnnl.hpp>
#include <dnnl_debug.h>

#include <stdexcept>
#include <string>

#include "kernels/error_context.h"

namespace cnnbench {

[[noreturn]] inline void throw_onednn_error(const std::string& what, const dnnl::error& e,
                                            const char* file, int line) {
  throw std::runtime_error(error_context() + ", " + file + ":" + std::to_string(line) + ": " +
                           what + ": oneDNN status " + dnnl_status2str(e.status) + ": " + e.what());
}

}  // namespace cnnbench

#define ONEDNN_CHECK(what, expr)                                          \
  ([&]() -> auto {                                                        \
    try {                                                                 \
      return (expr);                                                      \
    } catch (const dnnl::error& e) {                                      \
      ::cnnbench::throw_onednn_error((what), e, __FILE__, __LINE__);      \
    }                                                                     \
  }())
