// attnmech — tiny text helpers: printf into a string (every message of libcore's base and host libraries), and what
// the run API (host keys seed, threads; its messages) shares with the CLI (--width; help and list). Header-only and
// internal (libcore/include/common: never installed).
#ifndef ATTNMECH_COMMON_TEXT_HPP
#define ATTNMECH_COMMON_TEXT_HPP

#include <attnmech/plugin.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace am {

// printf into a std::string (the messages of libcore's base and host libraries).
inline std::string vformat(const char *fmt, va_list ap) {
  if (!fmt) return std::string();
  va_list ap2;
  va_copy(ap2, ap);
  char small[256];
  const int n = std::vsnprintf(small, sizeof small, fmt, ap2);
  va_end(ap2);
  if (n < 0) return std::string(fmt);
  if (static_cast<size_t>(n) < sizeof small) return std::string(small, static_cast<size_t>(n));
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(&out[0], out.size(), fmt, ap);
  out.resize(static_cast<size_t>(n));
  return out;
}
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
inline std::string format(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  return s;
}
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
