// harness/cli/printable.h — a user's text as an error line may show it. A leaf: settings, result
// readers and reports all quote what they were given through it.
#pragma once

#include <cstddef>
#include <string>

namespace cnnbench {

// `text` with control characters as \n, \t or \xNN (a value must not break the one-line message
// or the terminal), at most `most` characters (then "...").
std::string printable(const std::string& text, size_t most = 100);

}  // namespace cnnbench
