// harness/compare/result_numbers.h — the numbers `cnnbench compare` takes from result files, each
// checked against the range a result cnnbench wrote can hold before it is used, and printed in a
// bounded width. The ranges keep every ratio, square and sum the statistics form finite.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli/limits.h"  // max_global_batch, max_steps
#include "harness/cli/printable.h"

namespace cnnbench {

// A closed range and how an error names it ("a speed from 1e-09 to 1.67772e+16 images/sec").
struct NumberRange {
  double low, high;
  bool whole;        // a count: no fraction
  const char* what;  // "a speed", "a number", "a whole number of steps"
  const char* unit;  // after the range: " images/sec", or ""
};

// A step takes 1 ns to 1e9 s (31 years) and holds 1 to max_global_batch images, so images/sec
// (a step's, their mean, a run's total) lie between these; a spread (standard error) is at most
// the largest speed.
inline constexpr double min_step_sec = 1e-9, max_step_sec = 1e9;
inline constexpr double min_speed = 1 / max_step_sec;
inline constexpr double max_speed = static_cast<double>(max_global_batch) / min_step_sec;

inline constexpr NumberRange speed_range{min_speed, max_speed, false, "a speed", " images/sec"};
// a convergence run's images/sec over its training epochs: 0 when it trained none (resumed at the end)
inline constexpr NumberRange speed_or_zero_range{0, max_speed, false, "a number", " images/sec"};
inline constexpr NumberRange spread_range{0, max_speed, false, "a number", ""};
inline constexpr NumberRange steps_range{1, static_cast<double>(max_steps), true, "a whole number of steps", ""};
inline constexpr NumberRange fraction_range{0, 1, false, "a number", ""};
// time to accuracy: seconds and epochs (1e12 s is 30,000 years), images
inline constexpr NumberRange accuracy_seconds_range{0, 1e12, false, "a number", ""};
inline constexpr NumberRange accuracy_images_range{0, 1e18, false, "a number", ""};

// "from 1e-09 to 1.67772e+16 images/sec", as errors name a range.
std::string range_text(const NumberRange& range);

// A results.csv cell as a number within `range`. `where` is "PATH:LINE"; throws ResultReadError
// "PATH:LINE: COLUMN 'TEXT' is not a number" (empty, not a plain decimal number, or beyond a
// double: nan, inf, 1e309, 0x10, " 1") or "... is not a speed from ... to ... images/sec".
double csv_cell_number(const std::string& text, const std::string& where, const std::string& column,
                       const NumberRange& range);

// A JSON value as a number within `range`; throws ResultReadError "PATH: NAME is not a speed from ...".
double json_number(const nlohmann::json& value, const std::string& path, const std::string& name,
                   const NumberRange& range);

// `v` with `decimals` decimals where that fits in `width` characters and shows it (not 0.00 for
// 1e-09), else in 6 significant digits ("1.67772e+16"): a cell never wider than `width` or 13.
std::string number_text(double v, int decimals, size_t width);
// A change as a signed percentage: "+25.0%", "-79.4%"; "+1.67772e+27%" past +-99999.9%.
std::string change_text(double fraction);

}  // namespace cnnbench
