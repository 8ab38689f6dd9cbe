// attnmech tests — an environment variable set (or unset, value nullptr) for a scope, then restored: the tests of
// AM_PLOT_FORMATS and AM_MEMORY_LIMIT (doctest runs a file's cases one after another, in one thread).
#pragma once
#include <cstdlib>
#include <string>

namespace am_test {

struct ScopedEnv {
  std::string name, saved;
  bool was_set;
  ScopedEnv(const char *var, const char *value) : name(var) {
    const char *v = std::getenv(var);
    was_set = v != nullptr;
    if (v) saved = v;
    if (value) setenv(var, value, 1);
    else unsetenv(var);
  }
  ~ScopedEnv() {
    if (was_set) setenv(name.c_str(), saved.c_str(), 1);
    else unsetenv(name.c_str());
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;
};

}  // namespace am_test
