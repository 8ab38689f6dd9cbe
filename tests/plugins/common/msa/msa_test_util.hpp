// Helpers of the msa task's tests: read an alignment file the way the task does, rows back as letters, an
// error expectation (status and the words of its message), files written into a temporary directory.
#pragma once
#include <doctest/doctest.h>

#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "../../../temp_dir.hpp"
#include "alignment.hpp"
#include "attnmech/plugin.hpp"

namespace msa_test {

using am_test::TempDir;

inline std::string fixture(const char *name) { return std::string(AM_MSA_DATA) + "/" + name; }

inline am::msa::Alignment read(const std::string &path, const std::string &focus = "",
                               const std::string &alphabet = "protein", bool rf = true) {
  return am::msa::encode(am::msa::read_records(path), am::msa::make_alphabet(alphabet), focus, path, rf);
}

// The name of the alignment's kept row s (read from the file again: the alignment keeps only the record index).
inline std::string name_of(const std::string &path, const am::msa::Alignment &a, size_t s) {
  return std::string(am::msa::read_records(path).name(a.record_of.at(s)));
}

// Row s of the alignment as letters of its alphabet.
inline std::string row(const am::msa::Alignment &a, size_t s, const std::string &letters) {
  std::string out;
  for (size_t i = 0; i < a.L; ++i) out.push_back(letters[a.tokens[s * a.L + i]]);
  return out;
}

inline std::string write(const TempDir &dir, const std::string &name, const std::string &content) {
  const std::string path = (dir.path / name).string();
  std::ofstream f(path, std::ios::binary);
  f << content;
  return path;
}

// Runs f, expects an am::sdk::Error with status `code` whose message holds every needle.
template <class F>
void expect_error(F &&f, am_status code, std::initializer_list<std::string> needles) {
  try {
    f();
    FAIL("no error; expected status " << code);
  } catch (const am::sdk::Error &e) {
    const std::string msg = e.what();
    CAPTURE(msg);
    CHECK(e.status == code);
    for (const std::string &n : needles) CHECK_MESSAGE(msg.find(n) != std::string::npos, "message lacks '" << n << "'");
  }
}

}  // namespace msa_test
