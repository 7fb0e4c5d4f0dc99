// tests/fuzz/fuzz_files.h — what the harnesses share: a scratch folder of the process's own (in
// /dev/shm where there is one, so an input costs no disk I/O), writing bytes to a file in it and
// reading a file's bytes back, and the oracle for errors: one line that names the file.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace cnnbench::fuzz {

inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    const std::string base =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path().string();
    std::string pattern = base + "/cnnbench_fuzz_XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    return pattern;
  }();
  static const bool cleaned_at_exit = std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }) == 0;
  (void)cleaned_at_exit;
  return dir;
}

inline void write_bytes(const std::string& path, const void* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::perror(path.c_str());
    std::abort();
  }
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, static_cast<const char*>(data) + done, size - done);
    if (n <= 0) {
      std::perror(path.c_str());
      std::abort();
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
}

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A bad input may be refused, but only with one line that says where: anything else is a bug the
// fuzzer reports (abort() is a crash to libFuzzer, with this input saved).
inline void expect_one_line(const std::string& message, const std::string& must_name = "") {
  const bool one_line = !message.empty() && message.find('\n') == std::string::npos;
  const bool names_it = must_name.empty() || message.find(must_name) != std::string::npos;
  if (one_line && names_it) return;
  std::fprintf(stderr, "error message is not one line naming '%s': [%s]\n", must_name.c_str(), message.c_str());
  std::abort();
}

// A property of a successful read that must hold; otherwise a crash with the reason.
inline void expect(bool holds, const char* what) {
  if (holds) return;
  std::fprintf(stderr, "broken after a successful read: %s\n", what);
  std::abort();
}

}  // namespace cnnbench::fuzz
