// Helpers of the memory-estimate tests (tests/libcore/test_theory_memory.cpp, the attention library's,
// tests/scalapack): the peak resident set and its reset, /proc/self/status fields, a scoped AM_MEMORY_LIMIT, .
#pragma once
#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h>  // malloc_trim
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "attnmech/attnmech.h"

namespace am_test {

// Peak resident set of the process so far, in MB (ru_maxrss is in KB on Linux).
inline double peak_mb() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0;
}

// A /proc/self/status field in KiB (e.g. "VmRSS:", "VmHWM:"), -1 when absent.
inline long status_kib(const char *key) {
  std::FILE *f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, std::strlen(key)) == 0) v = std::strtol(line + std::strlen(key), nullptr, 10);
  std::fclose(f);
  return v;
}

// Resets VmHWM to VmRSS (Linux >= 4.0); false where the kernel does not allow it.
inline bool reset_peak() {
  std::FILE *f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// Bytes `op` made resident at its peak (VmHWM) above what was resident before it, in one run; < 0 if it cannot be
// measured here (no clear_refs).
template <class F>
double rise_once(F &&op) {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  if (!reset_peak()) return -1;
  const long before = status_kib("VmRSS:");
  op();
  const long peak = status_kib("VmHWM:");
  return before < 0 || peak < 0 ? -1 : 1024.0 * double(peak - before);
}

// The same, the smaller of two runs: a one-time allocation of a library on the first (OpenBLAS's buffers, a BLAS
// thread's) is not the operation's. `prepare` runs before each measurement, unmeasured.
template <class F, class G = void (*)()>
double peak_above(F &&op, G &&prepare = [] {}) {
  double best = -1;
  for (int rep = 0; rep < 2; ++rep) {
    prepare();
    const double rise = rise_once(op);
    if (rise < 0) return -1;
    best = rep == 0 ? rise : std::min(best, rise);
  }
  return best;
}

// Sets AM_MEMORY_LIMIT (NULL: unsets it) for the scope, restoring the caller's value.
struct Limit {
  std::string saved;
  bool had = false;
  explicit Limit(const char *v) {
    if (const char *s = std::getenv("AM_MEMORY_LIMIT")) had = true, saved = s;
    v ? setenv("AM_MEMORY_LIMIT", v, 1) : unsetenv("AM_MEMORY_LIMIT");
  }
  ~Limit() { had ? setenv("AM_MEMORY_LIMIT", saved.c_str(), 1) : unsetenv("AM_MEMORY_LIMIT"); }
};

}  // namespace am_test
