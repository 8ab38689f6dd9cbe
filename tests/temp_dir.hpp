// attnmech tests — a temporary directory removed with its contents at scope exit, a whole file as a string, and
// the pid of a process that has exited.
// Shared by the C++ suites that write files (report, sweep claims, safe files).
#pragma once
#include <doctest/doctest.h>

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace am_test {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const char *tag = "attnmech") {
    std::string t = (std::filesystem::temp_directory_path() / (std::string(tag) + "-XXXXXX")).string();
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
};

inline std::string slurp(const std::filesystem::path &p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The pid of a process that has exited (and been reaped): nothing of this host runs under it for a while.
inline pid_t dead_pid() {
  const pid_t p = ::fork();
  if (p == 0) ::_exit(0);
  int st = 0;
  ::waitpid(p, &st, 0);
  return p;
}

}  // namespace am_test
