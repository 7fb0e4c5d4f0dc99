#include "kernels/search_choices.h"

namespace cnnbench {

namespace {

constexpr const char* kHeader = "# cnnbench algorithm search choices, version 1";

bool one_field(const std::string& s) { return s.find_first_of("\t\n\r") == std::string::npos; }

}  // namespace

const std::string* SearchChoices::find(const std::string& identity, const std::string& key) const {
  const auto device = entries_.find(identity);
  if (device == entries_.end()) return nullptr;
  const auto it = device->second.find(key);
  return it == device->second.end() ? nullptr : &it->second;
}

void SearchChoices::put(const std::string& identity, const std::string& key, const std::string& value) {
  if (!one_field(identity) || !one_field(key) || !one_field(value) || identity.empty() || key.empty())
    throw std::invalid_argument("a search choice's identity, key or value is empty or holds a tab or line break");
  entries_[identity][key] = value;
  ++added_;
}

size_t SearchChoices::size() const {
  size_t n = 0;
  for (const auto& [identity, keys] : entries_) n += keys.size();
  return n;
}

std::string SearchChoices::text() const {
  std::string out = std::string(kHeader) + "\n";
  for (const auto& [identity, keys] : entries_)
    for (const auto& [key, value] : keys) out += identity + "\t" + key + "\t" + value + "\n";
  return out;
}

SearchChoices SearchChoices::parse(const std::string& text) {
  SearchChoices out;
  size_t line = 0;
  // a file edited by hand may end its lines in CR LF, hold blank lines or lack the last line break
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string row = text.substr(at, end - at);
    at = end + 1;
    if (!row.empty() && row.back() == '\r') row.pop_back();
    if (++line == 1) {
      if (row != kHeader) throw std::invalid_argument("line 1 is not \"" + std::string(kHeader) + "\"");
      continue;
    }
    if (row.empty()) continue;
    const size_t a = row.find('\t'), b = a == std::string::npos ? a : row.find('\t', a + 1);
    if (b == std::string::npos || row.find('\t', b + 1) != std::string::npos || a == 0 || b == a + 1 ||
        row.find('\r') != std::string::npos)
      throw std::invalid_argument("line " + std::to_string(line) + " is not identity, key and value between two tabs");
    out.entries_[row.substr(0, a)][row.substr(a + 1, b - a - 1)] = row.substr(b + 1);
  }
  if (line == 0) throw std::invalid_argument("it is empty");
  return out;
}

void SearchChoices::take_missing(const SearchChoices& other) {
  for (const auto& [identity, keys] : other.entries_)
    for (const auto& [key, value] : keys) entries_[identity].emplace(key, value);
}

}  // namespace cnnbench
