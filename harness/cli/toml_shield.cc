#include "harness/cli/toml_shield.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "harness/cli/config.h"

namespace cnnbench {
namespace {

// The characters toml++ 3.3 mishandles, in order: its table splits U+00A0..U+FEFF into blocks of
// 0x3FA code points and answers blocks 0, 11 and 63 only for the spaces U+00A0, U+3000, U+FEFF.
const std::vector<uint32_t>& mishandled() {
  static const std::vector<uint32_t> list = [] {
    std::vector<uint32_t> out;
    for (uint32_t c = 0xA1; c < 0xFEFF; ++c) {
      const uint32_t block = (c - 0xA0) / 0x3FA;
      if ((block == 0 || block == 11 || block == 63) && c != 0x3000) out.push_back(c);
    }
    return out;
  }();
  return list;
}

// The characters toml++ 3.3 takes for whitespace and TOML does not (TOML's are space, tab and
// the line breaks LF and CRLF): the spaces its table does answer (U+00A0, U+3000, U+FEFF above),
// the others of is_non_ascii_horizontal_whitespace and is_non_ascii_vertical_whitespace. Where it
// asks, it would skip them: after a line-ending backslash in a multi-line string,
// """a\<newline>U+3000 b""" read "ab" where TOML says "a" U+3000 " b". Behind a stand-in, like the
// mishandled ones, they are what TOML says they are: characters, whitespace nowhere.
const std::vector<uint32_t>& false_whitespace() {
  static const std::vector<uint32_t> list = [] {
    std::vector<uint32_t> out = {0x85, 0xA0, 0x1680, 0x180E};
    for (uint32_t c = 0x2000; c <= 0x200B; ++c) out.push_back(c);
    for (const uint32_t c : {0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x2060u, 0x3000u, 0xFEFFu}) out.push_back(c);
    return out;
  }();
  return list;
}

// Private use: toml++'s table answers these correctly. Two ranges, each in the order of its list
// (the second at the end of the BMP's private use area, so the first range's stand-ins and the
// private-use characters a config may hold stay as they were).
constexpr uint32_t kStandIn = 0xE000, kWhitespaceStandIn = 0xF8E0;

// c's stand-in, or 0 when toml++ may read it as it is.
uint32_t stand_in_for(uint32_t c) {
  for (const auto& [list, first] :
       {std::pair{&mishandled(), kStandIn}, std::pair{&false_whitespace(), kWhitespaceStandIn}}) {
    const auto at = std::lower_bound(list->begin(), list->end(), c);
    if (at != list->end() && *at == c) return first + static_cast<uint32_t>(at - list->begin());
  }
  return 0;
}

// The character a stand-in stands for, or 0 when c is none.
uint32_t original_of(uint32_t c) {
  if (c >= kStandIn && c < kStandIn + mishandled().size()) return mishandled()[c - kStandIn];
  if (c >= kWhitespaceStandIn && c < kWhitespaceStandIn + false_whitespace().size())
    return false_whitespace()[c - kWhitespaceStandIn];
  return 0;
}

void append_utf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// Decodes the well-formed UTF-8 sequence at text[i] (shortest form, no surrogates, at most
// U+10FFFF) into c and its length; false when the bytes there are not one.
bool decode_utf8(const std::string& text, size_t i, uint32_t& c, size_t& length) {
  const unsigned char lead = static_cast<unsigned char>(text[i]);
  if (lead < 0x80) {
    c = lead, length = 1;
    return true;
  }
  if (lead < 0xC2 || lead > 0xF4) return false;
  length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  if (i + length > text.size()) return false;
  c = lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    const unsigned char next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xC0) != 0x80) return false;
    c = (c << 6) | (next & 0x3F);
  }
  const uint32_t shortest = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  return c >= shortest && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
}

}  // namespace

std::string shield_from_toml(const std::string& text, const std::string& path) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  int line = 1;
  for (size_t i = 0; i < text.size();) {
    uint32_t c = 0;
    size_t length = 0;
    if (!decode_utf8(text, i, c, length))
      throw ConfigError(path + ":" + std::to_string(line) + ": is not UTF-8 text (a TOML file must be)");
    if (original_of(c) != 0) {
      char name[16];
      std::snprintf(name, sizeof(name), "U+%04X", static_cast<unsigned>(c));
      throw ConfigError(path + ":" + std::to_string(line) + ": private-use character " + name +
                        " is not accepted in a config file");
    }
    if (c == '\n') ++line;
    // a byte-order mark opening the file stays one: toml++ skips it there, as most readers do
    const uint32_t stand_in = i == 0 && c == 0xFEFF ? 0 : stand_in_for(c);
    if (stand_in != 0)
      append_utf8(out, stand_in);
    else
      out.append(text, i, length);
    i += length;
  }
  return out;
}

std::string unshield_from_toml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t c = 0;
    size_t length = 0;
    if (!decode_utf8(text, i, c, length)) length = 1;  // passed on byte by byte
    const uint32_t original = length == 3 ? original_of(c) : 0;
    if (original != 0)
      append_utf8(out, original);
    else
      out.append(text, i, length);
    i += length;
  }
  return out;
}

}  // namespace cnnbench
