// harness/cli/bounded_file.h — reading a file a user named, safely: only a regular file (a FIFO,
// a device such as /dev/zero or a folder is refused before anything is read, so nothing blocks
// or grows without end), and at most `max_bytes` of it (a larger file is refused, not cut).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace cnnbench {

struct BoundedFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The whole of `path`. Throws BoundedFileError "PATH: <why>" (path shown printable) when it does
// not exist, is not a regular file, cannot be read or holds more than max_bytes; `what` names the
// kind of file expected in the size message ("larger than 1 MiB, not a cnnbench config").
std::string read_bounded_file(const std::string& path, uint64_t max_bytes, const std::string& what);

// "1 MiB", "256 MiB", "2 GiB": a byte limit as messages show it.
std::string byte_limit_text(uint64_t bytes);

}  // namespace cnnbench
