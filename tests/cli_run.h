// tests/cli_run.h — running the cnnbench binary from a test (alone or under a launcher such as
// mpiexec) in a folder of its own, its exit code and output captured.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace cnnbench {

struct CliRun {
  int exit_code;
  std::string output;
};

// Runs `launcher` + the binary + `first_args` (for MPMD launches: more after " : ") + args.
inline CliRun run_cnnbench_with(const std::string& launcher, const std::string& first_args, const std::string& args,
                         const std::string& dir) {
  const std::string cmd = "cd '" + dir + "' && " + launcher + "'" CNNBENCH_BINARY "' " + first_args + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline CliRun run_cnnbench(const std::string& args, const std::string& dir) { return run_cnnbench_with("", "", args, dir); }

// The "final test top-1 accuracy: X" a convergence run prints, or -1 (with a test failure) if none.
inline double final_test_top1(const std::string& output) {
  const std::string key = "final test top-1 accuracy: ";
  const size_t at = output.find(key);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no final test accuracy in:\n" << output;
    return -1;
  }
  return std::stod(output.substr(at + key.size()));
}

inline std::string slurp_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace cnnbench
