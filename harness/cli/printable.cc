#include "harness/cli/printable.h"

#include <cstdio>

namespace cnnbench {

std::string printable(const std::string& text, size_t most) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < most; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > most) out += "...";
  return out;
}

}  // namespace cnnbench
