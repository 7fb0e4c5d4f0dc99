// kernels/search_choices.h — SearchChoices: what a GPU plan's timed algorithm search chose, kept
// between runs (--algorithm_cache). The search times cuDNN's algorithms and fused-graph engines for
// every convolution shape, which took about 96 s for VGG16 at batch 256 on an H200; a sweep that
// runs the same shapes again reads the choices instead. Entries are grouped by the device identity
// that made them (GPU, compute capability, cuDNN and driver versions): a choice is only read back
// on the same identity, and other identities' entries are kept as they are. The plan owns the
// keys and values (kernels/cuda/search_recall.cc); the harness reads and writes the file
// (harness/run/algorithm_cache.h). A file that is not one is refused, never overwritten.
#pragma once

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>

namespace cnnbench {

class SearchChoices {
 public:
  // This identity's value for `key`, or null.
  const std::string* find(const std::string& identity, const std::string& key) const;
  // Sets a value; counts it as added. Identities, keys and values hold no tab or line break
  // (std::invalid_argument: a plan's bug, not a user's).
  void put(const std::string& identity, const std::string& key, const std::string& value);
  size_t added() const { return added_; }
  size_t size() const;

  // The file's text: a header line, then one "identity<TAB>key<TAB>value" line an entry, sorted.
  std::string text() const;
  // Parses text() back. Throws std::invalid_argument ("line N: why") where `text` is not that.
  static SearchChoices parse(const std::string& text);
  // Entries of `other` this does not hold are taken (what another process saved meanwhile).
  void take_missing(const SearchChoices& other);

 private:
  std::map<std::string, std::map<std::string, std::string>> entries_;  // identity -> key -> value
  size_t added_ = 0;
};

}  // namespace cnnbench
