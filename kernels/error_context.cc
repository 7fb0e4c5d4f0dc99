#include "kernels/error_context.h"

#include <unistd.h>

namespace cnnbench {
namespace {

std::string& context() {
  static std::string where = [] {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    return std::string("host ") + host;
  }();
  return where;
}

}  // namespace

void set_error_context(const std::string& where) { context() = where; }
const std::string& error_context() { return context(); }

}  // namespace cnnbench
