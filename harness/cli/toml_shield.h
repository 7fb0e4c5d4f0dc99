// harness/cli/toml_shield.h — keeps a config file's text away from a toml++ 3.3 bug without
// changing what the file means.
//
// toml++ 3.3 (Debian 12's) reaches __builtin_unreachable(), undefined behaviour, whenever it asks
// whether one of 3019 non-ASCII characters is whitespace: its generated table leaves blocks 0, 11
// and 63 unhandled (U+00A1..U+0499, U+2C5E..U+3057 but U+3000, and U+FB26..U+FEFE). It asks
// between tokens, after a value and inside multi-line strings, so no lexer of our own can be sure
// to match every place. Instead every such character is swapped for a private-use one (U+E000
// on), which toml++ answers correctly and which, like the original, is no whitespace; the keys,
// strings and errors toml++ returns are swapped back.
//
// The same goes for the 23 characters toml++ takes for whitespace and TOML does not (U+00A0,
// U+2000..U+200B, U+3000, U+FEFF, U+2028, ...; stand-ins U+F8E0 on): toml++ skipped them after a
// line-ending backslash in a multi-line string, where TOML trims only spaces, tabs and newlines.
// A byte-order mark opening the file is left to toml++, which skips it.
#pragma once

#include <string>

namespace cnnbench {

// The text with every character toml++ 3.3 mishandles or takes for whitespace swapped for its
// private-use stand-in.
// Throws ConfigError("PATH:LINE: ...") on text that is not UTF-8 or that uses a stand-in itself.
std::string shield_from_toml(const std::string& text, const std::string& path);

// The original characters back in a key, string or error toml++ returned.
std::string unshield_from_toml(const std::string& text);

}  // namespace cnnbench
