#include "harness/compare/result_numbers.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "harness/compare/result_reader.h"

namespace cnnbench {

namespace {

// 16777216 as itself, 1e+12 and 1.67772e+16 short
std::string bound_text(double v) {
  return v == std::floor(v) && std::fabs(v) < 1e9 ? fmt::format("{}", static_cast<int64_t>(v)) : fmt::format("{:g}", v);
}

bool within(double v, const NumberRange& range) {
  return std::isfinite(v) && v >= range.low && v <= range.high && (!range.whole || v == std::floor(v));
}

}  // namespace

std::string range_text(const NumberRange& range) {
  return "from " + bound_text(range.low) + " to " + bound_text(range.high) + range.unit;
}

double csv_cell_number(const std::string& text, const std::string& where, const std::string& column,
                       const NumberRange& range) {
  // from_chars, not stod: no leading spaces, no hex, no locale; what cnnbench writes ({:.6g},
  // integers) and nothing else
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, v, std::chars_format::general);
  if (text.empty() || error != std::errc() || stop != end || !std::isfinite(v))
    throw ResultReadError(where + ": " + column + " '" + printable(text) + "' is not a number");
  if (!within(v, range))
    throw ResultReadError(fmt::format("{}: {} '{}' is not {} {}", where, column, printable(text), range.what,
                                      range_text(range)));
  return v;
}

double json_number(const nlohmann::json& value, const std::string& path, const std::string& name,
                   const NumberRange& range) {
  if (!value.is_number() || !within(value.get<double>(), range))
    throw ResultReadError(fmt::format("{}: {} is not {} {}", path, name, range.what, range_text(range)));
  return value.get<double>();
}

std::string number_text(double v, int decimals, size_t width) {
  std::string text = fmt::format("{:.{}f}", v, decimals);
  // too wide, or so small that the decimals would show 0.00
  if (text.size() > width || (v != 0 && std::fabs(v) < std::pow(10.0, -decimals))) text = fmt::format("{:.6g}", v);
  return text;
}

std::string change_text(double fraction) {
  std::string text = fmt::format("{:+.1f}%", 100 * fraction);
  if (text.size() > 9) text = fmt::format("{:+.6g}%", 100 * fraction);
  return text;
}

}  // namespace cnnbench
