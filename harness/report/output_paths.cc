#include "harness/report/output_paths.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "harness/cli/bounded_file.h"
#include "harness/report/result_fields.h"
#include "harness/report/result_files.h"

namespace cnnbench {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void refuse(const std::string& flag, const std::string& path, const std::string& why) {
  throw std::runtime_error(flag + ": " + printable(path, 4096) + " " + why);
}

// The run can create files in the existing folder `dir` (the results' folder, or where it will be
// made): tried with a file made and removed at once, since permission bits say nothing for root,
// a read-only mount or /proc. Found now, not when the run's results are written.
void check_writable(const fs::path& dir, const std::string& flag, const std::string& path) {
  const fs::path probe = dir / (".cnnbench-write-check-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int error = errno;
    if (error == EEXIST) return;  // another rank of this host probing the same folder
    refuse(flag, path, "cannot be written: no file can be made in " + printable(dir.string(), 4096) + " (" +
                           std::strerror(error) + "); results would be lost after the run");
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

// `path` is a folder, or can be made one: the first part of it that exists is a folder the run
// can write in.
void check_folder(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  std::error_code ec;
  for (fs::path p = fs::path(path); !p.empty(); p = p.parent_path()) {
    if (fs::exists(p, ec)) {
      if (fs::is_directory(p, ec)) return check_writable(p, flag, path);
      if (p == fs::path(path)) refuse(flag, path, "is a file, not a folder");
      refuse(flag, path, "cannot be made: " + printable(p.string(), 4096) + " is a file");
    }
    if (p == p.parent_path()) return;
  }
  check_writable(".", flag, path);  // a relative path none of which exists yet: made in the working folder
}

// A file the run writes: not a folder, its folder possible.
void check_file(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) refuse(flag, path, "is a folder, not a file");
  const fs::path parent = fs::path(path).parent_path();
  check_folder(parent.empty() ? "." : parent.string(), flag);
}

}  // namespace

std::string epochs_csv_path(const std::string& json_path) {
  const bool json = json_path.size() > 5 && json_path.ends_with(".json");
  return json_path.substr(0, json_path.size() - (json ? 5 : 0)) + "_epochs.csv";
}

void check_replaceable_result(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return;
  std::string text;
  try {
    text = read_bounded_file(path, max_result_json_bytes, "a cnnbench result");
  } catch (const BoundedFileError&) {
    refuse(flag, path, "exists and is not a cnnbench result: not replaced (name another file)");
  }
  // the schema is all that is asked: a long run's steps are dropped as they are parsed
  const nlohmann::json::parser_callback_t no_steps = [](int depth, nlohmann::json::parse_event_t event,
                                                        nlohmann::json& parsed) {
    return !(depth == 1 && event == nlohmann::json::parse_event_t::key && parsed == "steps");
  };
  const nlohmann::json doc = nlohmann::json::parse(text, no_steps, /*allow_exceptions=*/false);
  const auto schema = doc.is_object() ? doc.find("schema") : doc.end();
  if (!doc.is_object() || schema == doc.end() || !schema->is_string() ||
      schema->get<std::string>().rfind("cnnbench.", 0) != 0)
    refuse(flag, path, "exists and is not a cnnbench result: not replaced (name another file)");
}

void check_replaceable_timeline(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return;
  std::string start(kTimelineStart.size(), '\0');
  std::ifstream file;
  if (fs::is_regular_file(path, ec)) file.open(path, std::ios::binary);  // a FIFO is not opened: it would wait
  if (!file.is_open() || !file.read(start.data(), static_cast<std::streamsize>(start.size())) || start != kTimelineStart)
    refuse(flag, path, "exists and is not a cnnbench timeline: not replaced (name another file)");
}

void check_output_paths(const Config& config) {
  const RunKind kind = run_kind(config);
  if (kind == kNoRun) return;
  check_folder(config.benchmark_log_dir, "--benchmark_log_dir");
  // the CSV each kind of run appends to: a regular file or none (a FIFO would block the run's end)
  for (const char* csv : {"results.csv", "allreduce.csv", "input.csv"}) {
    const std::string path = config.benchmark_log_dir + "/" + csv;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (fs::exists(status) && !fs::is_regular_file(status))
      refuse("--benchmark_log_dir", path, "is not a regular file: results cannot be appended to it");
    if (fs::exists(status) && ::access(path.c_str(), W_OK) != 0)
      refuse("--benchmark_log_dir", path, std::string("cannot be appended to (") + std::strerror(errno) + ")");
  }
  if (kind == kRealData) check_folder(config.train_dir, "--train_dir");
  if (kind == kSynthetic || kind == kRealData) check_folder(config.summary_dir, "--summary_dir");
  // the CSV this run appends its row to: a header this version cannot append under is refused
  // now, not after the run
  const bool allreduce = kind == kAllreduce, input = kind == kInput;
  check_csv_header(config.benchmark_log_dir + (allreduce ? "/allreduce.csv" : input ? "/input.csv" : "/results.csv"),
                   allreduce ? allreduce_csv_header() : input ? input_csv_header() : csv_header());
  if (!config.timeline.empty() && (kind == kSynthetic || kind == kRealData)) {
    check_file(config.timeline, "--timeline");
    check_replaceable_timeline(config.timeline, "--timeline");
  }
  if (!config.algorithm_cache.empty() && config.device == "gpu" && (kind == kSynthetic || kind == kRealData))
    check_file(config.algorithm_cache, "--algorithm_cache");
  if (!config.result_json.empty()) {
    check_file(config.result_json, "--result_json");
    check_replaceable_result(config.result_json, "--result_json");
    if (kind == kRealData) {
      // the per-epoch CSV beside it: replaced only if it is one
      const std::string csv = epochs_csv_path(config.result_json);
      check_file(csv, "--result_json");
      std::error_code ec;
      if (fs::exists(fs::symlink_status(csv, ec))) {
        std::string head;
        try {
          head = read_bounded_file(csv, uint64_t{1} << 30, "a per-epoch CSV");
        } catch (const BoundedFileError&) {
        }
        if (head.rfind("epoch,train_loss,", 0) != 0)
          refuse("--result_json", csv, "exists and is not a cnnbench per-epoch CSV: not replaced (name another file)");
      }
    }
  }
}

}  // namespace cnnbench
