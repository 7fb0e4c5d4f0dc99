// harness/cli/flag_spec.h — one row of the flag table: a flag's name, type, help, how it is set
// and read back on a Config, which runs read it, and how a test shows that it does. The table
// itself is flag_table.cc; config.cc parses command lines and TOML files through it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/cli/config.h"

namespace cnnbench {

enum class Kind { integer, real, boolean, text };

struct FlagSpec {
  const char* name;
  Kind kind;
  const char* help;
  std::function<void(Config&, const std::string&)> set;  // value already type-checked
  std::function<std::string(const Config&)> get;
  // Where it is read (RunKind bits), how a test shows it (or why it cannot), and, for a run of a
  // kind it applies to, why this run still does not read it ("" when it does).
  unsigned runs = 0;
  std::vector<FlagProbe> probes;
  std::string unprobed;
  std::function<std::string(const Config&)> unused;
  // The range a number must lie in, checked after `set` and named in the help (see help_text).
  bool bounded = false;
  double low = 0, high = 0;
  std::string range_note;  // said after the upper end: "(2^24)"

  FlagSpec within(double lowest, double highest, std::string note = "") && {
    bounded = true;
    low = lowest;
    high = highest;
    range_note = std::move(note);
    return std::move(*this);
  }
  FlagSpec reads(unsigned kinds) && {
    runs = kinds;
    return std::move(*this);
  }
  FlagSpec probe(RunKind kind, std::string value, std::string shows, std::string context = "") && {
    probes.push_back({kind, std::move(value), std::move(shows), std::move(context)});
    return std::move(*this);
  }
  FlagSpec no_probe(std::string why) && {
    unprobed = std::move(why);
    return std::move(*this);
  }
  FlagSpec unless(std::function<std::string(const Config&)> why_unused) && {
    unused = std::move(why_unused);
    return std::move(*this);
  }
};

// Sets the flag from a value of the right type, then checks its range: throws ConfigError
// ("must be at most 65536, not 70000") without the flag's name, which the caller adds.
void assign(const FlagSpec& flag, Config& config, const std::string& value);
// An integer flag's value: the whole text must be one (throws ConfigError "'x' is not an integer").
int64_t flag_integer(const std::string& v);
// A boolean flag's value as absl reads it, in any case: true, t, 1 (and yes); false, f, 0 (and
// no). Anything else throws ConfigError "'x' is not true or false".
bool flag_boolean(const std::string& v);
// A real setting as --help and config_values show it (ostream's default: 1e+300, 0.001).
std::string real_text(double v);
// The help line: the flag's text, then its range as the bounds give it ("at most 65536").
std::string help_text(const FlagSpec& flag);

const std::vector<FlagSpec>& flag_specs();
const FlagSpec* find_flag(const std::string& name);  // null: no such flag

}  // namespace cnnbench
