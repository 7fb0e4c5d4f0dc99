// harness/cli/flag_spec.cc — reading a row of the flag table: integers, ranges, help lines, lookup.
#include "harness/cli/flag_spec.h"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <sstream>

#include <fmt/format.h>

namespace cnnbench {
namespace {

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.15g", v);  // 16777216, not 1.67772e+07
  return text;
}

// "at most 65536", "1 to 64", "in [0, 1]": what the help says of a flag's bounds.
std::string range_text(const FlagSpec& f) {
  std::string text;
  if (f.kind == Kind::integer)
    text = f.low == 0 ? "at most " + number_text(f.high) : number_text(f.low) + " to " + number_text(f.high);
  else
    text = f.low == 0 && f.high > 1 ? "at most " + number_text(f.high)
                                    : "in [" + number_text(f.low) + ", " + number_text(f.high) + "]";
  return f.range_note.empty() ? text : text + " " + f.range_note;
}

}  // namespace

int64_t flag_integer(const std::string& v) {
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size()) throw ConfigError("'" + printable(v) + "' is not an integer");
  return out;
}

bool flag_boolean(const std::string& v) {
  std::string lower;
  for (char ch : v) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower == "true" || lower == "t" || lower == "1" || lower == "yes") return true;
  if (lower == "false" || lower == "f" || lower == "0" || lower == "no") return false;
  throw ConfigError("'" + printable(v) + "' is not true or false");
}

// The shortest text that reads back as the same double (0.0123456789 stays 0.0123456789, not
// the 6 digits of an ostream's default).
std::string real_text(double v) { return fmt::format("{}", v); }

// The upper ends keep every product and conversion further on (steps x global batch, MiB to
// bytes, double to int64 or float) well inside its type.
void assign(const FlagSpec& f, Config& config, const std::string& value) {
  f.set(config, value);
  if (!f.bounded) return;
  const bool whole = f.kind == Kind::integer;
  const int64_t n = whole ? flag_integer(value) : 0;  // compared as an integer: 2^63 - 1 is not 2^63
  const double x = whole ? static_cast<double>(n) : parse_real(value);
  const std::string shown = whole ? std::to_string(n) : real_text(x);
  if (whole ? n < static_cast<int64_t>(f.low) : x < f.low)
    throw ConfigError(f.low == 0 ? std::string("must not be negative")
                                 : "must be at least " + number_text(f.low) + ", not " + shown);
  if (whole ? n > static_cast<int64_t>(f.high) : x > f.high)
    throw ConfigError("must be at most " + number_text(f.high) + ", not " + shown);
}

std::string help_text(const FlagSpec& f) {
  return f.bounded ? std::string(f.help) + "; " + range_text(f) : std::string(f.help);
}

const FlagSpec* find_flag(const std::string& name) {
  for (const FlagSpec& f : flag_specs())
    if (name == f.name) return &f;
  return nullptr;
}

}  // namespace cnnbench
