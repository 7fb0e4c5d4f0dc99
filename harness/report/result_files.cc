#include "harness/report/result_files.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "harness/cli/bounded_file.h"
#include "harness/report/csv.h"

namespace cnnbench {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error(path + ": " + what + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

// `existing` (a whole CSV) with `header` in place of its first row and every row padded with
// empty fields to the header's length; nullopt when its header is not a prefix of `header`.
std::optional<std::string> widened(const std::string& existing, const std::vector<std::string>& header,
                                   const std::string& path) {
  const std::vector<CsvRow> rows = parse_csv(existing, path);
  if (rows.empty()) return std::nullopt;
  const std::vector<std::string>& old = rows[0].fields;
  if (old.size() >= header.size() || !std::equal(old.begin(), old.end(), header.begin())) return std::nullopt;
  std::string out = csv_line(header);
  for (size_t r = 1; r < rows.size(); ++r) {
    std::vector<std::string> fields = rows[r].fields;
    if (fields.size() != old.size()) return std::nullopt;  // a damaged file is not ours to rewrite
    fields.resize(header.size());
    out += csv_line(fields);
  }
  return out;
}

// A CSV saved by a spreadsheet: a UTF-8 byte-order mark before its header, CRLF line ends.
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
bool crlf_lines(const std::string& text) {
  const size_t eol = text.find('\n');
  return eol != std::string::npos && eol > 0 && text[eol - 1] == '\r';
}

// `existing` (a whole CSV, or empty) ready for a row under `header`: the header alone for an
// empty file, an older prefix header widened; throws for any other header. A header saved with
// a byte-order mark or CRLF line ends is the same header: the file is kept in its style.
std::string under_header(std::string existing, const std::vector<std::string>& header, const std::string& path) {
  const std::string header_line = csv_line(header);
  if (existing.empty()) return header_line;
  const size_t bom = existing.starts_with(kByteOrderMark) ? kByteOrderMark.size() : 0;
  const bool crlf = crlf_lines(existing);
  std::string first = existing.substr(bom, existing.find('\n') + 1 - bom);
  if (crlf) first.erase(first.size() - 2, 1);
  if (first != header_line) {
    std::optional<std::string> wider;
    try {
      wider = widened(existing.substr(bom), header, path);  // rewritten in this version's style
    } catch (const CsvError&) {
    }
    if (!wider)
      throw std::runtime_error(path + ": its header differs from this version's columns; "
                               "write to another file (--benchmark_log_dir)");
    existing = *wider;
  }
  if (existing.back() != '\n') existing += crlf ? "\r\n" : "\n";  // a file edited by hand
  return existing;
}

// The whole CSV, or "" when there is none yet; a FIFO or a device in its place is refused, not
// waited on (the cap, far above max_results_csv_bytes, keeps a finished run's row: the size is
// checked before a run, by check_csv_header, not as its results are written).
std::string read_whole(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return "";
  try {
    return read_bounded_file(path, uint64_t{4} << 30, "a cnnbench results file");
  } catch (const BoundedFileError& e) {
    throw std::runtime_error(e.what());
  }
}

}  // namespace

void check_csv_header(const std::string& path, const std::vector<std::string>& header) {
  const std::string existing = read_whole(path);
  // one within 1 MiB of the cap takes no more runs: compare would refuse the file they made
  if (existing.size() + (uint64_t{1} << 20) > max_results_csv_bytes)
    throw std::runtime_error(fmt::format("{}: {} MiB, as large as a results file gets ({} MiB: cnnbench compare reads "
                                         "no more); write to another file (--benchmark_log_dir)",
                                         path, existing.size() >> 20, max_results_csv_bytes >> 20));
  under_header(existing, header, path);
}

void make_folders(const std::string& path) {
  std::error_code ec;
  if (path.empty()) return;
  std::filesystem::create_directories(path, ec);
  if (ec) throw std::runtime_error(path + ": cannot create folder: " + ec.message());
}

namespace {

// NAME.tmp.HOST.PID: a leftover of a killed writer can be told from a live one's (the train_dir
// clears those whose process is gone), also where hosts share the folder.
std::string temporary_name(const std::string& path) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return path + ".tmp." + host + "." + std::to_string(getpid());
}

// Writes `contents` to a temporary beside `path`; returns its name. Throws naming `path`.
std::string write_temporary(const std::string& path, const std::string& contents) {
  errno = 0;
  const std::string temp = temporary_name(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // Errors name the file the user asked for; what was there before is left as it was.
  if (fd < 0) fail(path, "cannot create a temporary file beside it");
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      const int why = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      errno = why;
      fail(path, "cannot write (left as it was)");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int why = errno;
    ::unlink(temp.c_str());
    errno = why;
    fail(path, "cannot write (left as it was)");
  }
  return temp;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& contents) {
  const std::string temp = write_temporary(path, contents);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    fail(path, "cannot rename into place");
  }
  // the rename itself on disk too: a power loss after it would otherwise find the old file (or
  // none); a folder that cannot be synced (some network file systems) is left as it is
  const std::string folder = std::filesystem::path(path).parent_path().string();
  const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

std::string write_new_file(const std::string& stem, const std::string& suffix, const std::string& contents) {
  const std::string first = stem + suffix;
  const std::string temp = write_temporary(first, contents);
  for (int n = 1; n <= 1000; ++n) {
    const std::string path = n == 1 ? first : stem + "-" + std::to_string(n) + suffix;
    errno = 0;
    // never over a file already there: two runs in the same second keep a file each
    int done = ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE);
    if (done != 0 && (errno == EINVAL || errno == ENOSYS)) {  // a file system without it: link fails on a name taken
      done = ::link(temp.c_str(), path.c_str());
      if (done == 0) ::unlink(temp.c_str());
      if (done != 0 && errno != EEXIST) {  // nor hard links (vfat, some FUSE): create the name exclusively
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
          size_t written = 0;
          while (written < contents.size()) {
            const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
            if (n <= 0) break;
            written += static_cast<size_t>(n);
          }
          const bool whole = written == contents.size() && ::fsync(fd) == 0;
          ::close(fd);
          ::unlink(temp.c_str());
          if (!whole) {
            ::unlink(path.c_str());
            errno = EIO;
            fail(path, "cannot write (left as it was)");
          }
          return path;
        }
      }
    }
    if (done == 0) return path;
    if (errno != EEXIST) {
      const int why = errno;
      ::unlink(temp.c_str());
      errno = why;
      fail(path, "cannot rename into place");
    }
  }
  ::unlink(temp.c_str());
  errno = 0;
  fail(first, "1000 files of this name are there already");
}

void with_file_lock(const std::string& path, const std::function<void()>& work) {
  errno = 0;
  const auto slash = path.rfind('/');
  const std::string lock_path = slash == std::string::npos ? "." + path + ".lock"
                                                           : path.substr(0, slash + 1) + "." + path.substr(slash + 1) + ".lock";
  const int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT, 0644);
  if (lock < 0) fail(lock_path, "cannot open lock file");
  if (::flock(lock, LOCK_EX) != 0) {
    ::close(lock);
    fail(lock_path, "cannot lock");
  }
  try {
    work();
  } catch (...) {
    ::close(lock);
    throw;
  }
  ::close(lock);
}

void append_csv_row(const std::string& path, const std::vector<std::string>& header,
                    const std::vector<std::string>& row) {
  if (header.size() != row.size()) throw std::logic_error("CSV row and header differ in length");
  with_file_lock(path, [&] {
    const std::string existing = under_header(read_whole(path), header, path);
    std::string line = csv_line(row);
    if (crlf_lines(existing)) {  // in the file's style
      line.back() = '\r';
      line += '\n';
    }
    write_file_atomically(path, existing + line);
  });
}

}  // namespace cnnbench
