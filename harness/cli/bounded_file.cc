#include "harness/cli/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/cli/config.h"

namespace cnnbench {

std::string byte_limit_text(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30) && bytes % (uint64_t{1} << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::string read_bounded_file(const std::string& path, uint64_t max_bytes, const std::string& what) {
  const std::string where = printable(path, 4096);
  auto fail = [&](const std::string& why) -> std::string { throw BoundedFileError(where + ": " + why); };
  // O_NONBLOCK: opening a FIFO with no writer must not wait; a regular file ignores the flag
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int why = errno;
    return fail(std::string("cannot read (") + std::strerror(why) + ")");
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(std::string("cannot read (") + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) return fail("is a folder, not a file");
  if (!S_ISREG(st.st_mode))
    return fail(S_ISFIFO(st.st_mode)   ? "is a pipe, not a regular file"
                : S_ISCHR(st.st_mode)  ? "is a device, not a regular file"
                : S_ISSOCK(st.st_mode) ? "is a socket, not a regular file"
                                       : "is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return fail("larger than " + byte_limit_text(max_bytes) + ", not " + what);
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(std::string("cannot read (") + std::strerror(errno) + ")");
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
    // a file that grows while it is read is held to the same limit
    if (out.size() > max_bytes) return fail("larger than " + byte_limit_text(max_bytes) + ", not " + what);
  }
  return out;
}

}  // namespace cnnbench
