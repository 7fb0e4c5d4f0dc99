// kernels/error_context.h — where this process runs ("host h, rank r"), prefixed to library
// errors so a failing rank names itself. The harness sets it once at start.
#pragma once

#include <string>

namespace cnnbench {

void set_error_context(const std::string& where);
const std::string& error_context();

}  // namespace cnnbench
