// Helpers of the memory-estimate tests (tests/libcore/test_theory_memory.cpp, the attention library's): the peak
// resident set, a scoped AM_MEMORY_LIMIT, a context that frees itself.
#pragma once
#include <sys/resource.h>

#include <cstdlib>
#include <string>

#include "attnmech/attnmech.h"

namespace am_test {

// Peak resident set of the process so far, in MB (ru_maxrss is in KB on Linux).
inline double peak_mb() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss / 1024.0;
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

struct Ctx {
  am_context *c = nullptr;
  Ctx() { am_context_create(&c, nullptr); }
  ~Ctx() { am_context_destroy(&c); }
  std::string err() const { return am_context_last_error(c); }
};

}  // namespace am_test
