#include "harness/run/algorithm_cache.h"

#include <filesystem>
#include <stdexcept>

#include "harness/cli/bounded_file.h"
#include "harness/cli/printable.h"
#include "harness/report/result_files.h"

namespace cnnbench {

namespace {

constexpr uint64_t kMaxBytes = uint64_t{64} << 20;  // a few hundred bytes a shape

// The file's text, or "" where there is no file.
std::string existing_text(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return {};
  return read_bounded_file(path, kMaxBytes, "a cnnbench algorithm cache");
}

SearchChoices parse_or_refuse(const std::string& path, const std::string& text) {
  try {
    return SearchChoices::parse(text);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("--algorithm_cache: " + printable(path, 4096) + " is not a cnnbench algorithm cache (" +
                             e.what() + "): not replaced (name another file)");
  }
}

}  // namespace

std::unique_ptr<SearchChoices> read_algorithm_cache(const std::string& path) {
  std::string text;
  try {
    text = existing_text(path);
  } catch (const BoundedFileError& e) {
    throw std::runtime_error(std::string("--algorithm_cache: ") + e.what());
  }
  if (text.empty()) return std::make_unique<SearchChoices>();
  return std::make_unique<SearchChoices>(parse_or_refuse(path, text));
}

std::string save_algorithm_cache(const std::string& path, const SearchChoices& choices) {
  try {
    namespace fs = std::filesystem;
    std::error_code ec;
    // a link's file is rewritten, not the link replaced by a file
    const std::string target = fs::is_symlink(fs::symlink_status(path, ec)) ? fs::weakly_canonical(path).string() : path;
    if (const fs::path parent = fs::path(target).parent_path(); !parent.empty()) make_folders(parent.string());
    with_file_lock(target, [&] {  // other ranks and runs saving at once keep each other's lines
      SearchChoices merged = choices;
      const std::string now = existing_text(target);
      if (!now.empty()) merged.take_missing(parse_or_refuse(path, now));
      write_file_atomically(target, merged.text());
    });
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace cnnbench
