// attnmech — tiny text helpers shared by the run API (host keys seed, threads; its messages) and the CLI
// (--width; help and list): header-only and internal (not installed); the CLI includes it through libcore's
// src/ directory.
#ifndef ATTNMECH_SRC_TEXT_HPP
#define ATTNMECH_SRC_TEXT_HPP

#include <attnmech/plugin.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace am {
namespace text {

// s without leading and trailing blanks and tabs.
inline std::string trim(const std::string &s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// A whole decimal number in [0, 2^64) with nothing else (no sign, no blanks): true and *v set.
inline bool parse_u64(const std::string &s, uint64_t *v) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char *end = nullptr;
  const unsigned long long x = std::strtoull(s.c_str(), &end, 10);
  if (errno || *end) return false;
  *v = x;
  return true;
}

// The data kinds of a plugin's mask, as words: "attention, sequence", "none (runs without a task)", "-".
inline std::string data_kinds_text(uint32_t mask) {
  std::string s;
  if (mask & AM_DATA_ATTENTION) s += "attention";
  if (mask & AM_DATA_SEQUENCE) s += std::string(s.empty() ? "" : ", ") + "sequence";
  if (mask & AM_DATA_NONE) s += std::string(s.empty() ? "" : ", ") + "none (runs without a task)";
  return s.empty() ? "-" : s;
}

}  // namespace text
}  // namespace am

#endif
