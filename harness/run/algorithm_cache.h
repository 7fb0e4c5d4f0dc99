// harness/run/algorithm_cache.h — --algorithm_cache=FILE: the GPU plan's timed algorithm search
// reads the choices an earlier run kept there and adds its own (kernels/search_choices.h). The
// file is written whole to a temporary name and renamed into place (its folder made first), after
// merging what it holds by then under a lock beside it (ranks and runs sharing one file keep each
// other's entries); one that is not a cnnbench choices file is refused before the search and never
// replaced.
#pragma once

#include <memory>
#include <string>

#include "kernels/search_choices.h"

namespace cnnbench {

// The file's choices; none where it does not exist yet. Throws std::runtime_error
// ("--algorithm_cache: PATH ...: not replaced (name another file)") where it is not one.
std::unique_ptr<SearchChoices> read_algorithm_cache(const std::string& path);
// Writes `choices` merged over what the file holds now. "" when saved, else why not (the file
// is left as it was).
std::string save_algorithm_cache(const std::string& path, const SearchChoices& choices);

}  // namespace cnnbench
