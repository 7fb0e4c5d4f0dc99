// harness/compare/verdict.h — what `cnnbench compare` says of one configuration.
#pragma once

namespace cnnbench {

enum class Verdict { faster, slower, no_change, regression };
const char* verdict_name(Verdict v);  // "faster", "slower", "no significant change", "regression"

}  // namespace cnnbench
