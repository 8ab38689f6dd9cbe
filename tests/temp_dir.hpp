// attnmech tests — a temporary directory removed with its contents at scope exit, and a whole file as a string.
// Shared by the C++ suites that write files (report, sweep claims, safe files).
#pragma once
#include <doctest/doctest.h>

#include <stdlib.h>

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

}  // namespace am_test
