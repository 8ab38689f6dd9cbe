// attnmech tests — a record and a context that free themselves, their creation REQUIREd, and the getters of a
// record's values the tests read (the report, problem-directory and sequence-fit suites).
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attnmech/attnmech.h"

namespace am_test {

struct Rec {
  am_record *r = nullptr;
  Rec() { REQUIRE(am_record_create(&r) == AM_OK); }
  ~Rec() { am_record_destroy(&r); }
  Rec(const Rec &) = delete;
  Rec &operator=(const Rec &) = delete;
};

// The number at `key` (NaN when absent or not a number).
inline double num(const am_record *r, const char *key) {
  double v = NAN;
  am_record_get_number(r, key, &v);
  return v;
}

// The shape of the array at `key` (empty when absent).
inline std::vector<size_t> shape_of(const am_record *r, const char *key) {
  am_array_view v{};
  if (am_record_get_array(r, key, &v) != AM_OK) return {};
  return std::vector<size_t>(v.shape, v.shape + v.ndim);
}

// The values at `key` as doubles (empty when absent).
inline std::vector<double> vec(const am_record *r, const char *key) {
  size_t n = 0;
  am_record_get_vector(r, key, nullptr, 0, &n);
  std::vector<double> v(n);
  am_record_get_vector(r, key, v.data(), n, &n);
  return v;
}

struct Ctx {
  am_context *c = nullptr;
  Ctx() { REQUIRE(am_context_create(&c, nullptr) == AM_OK); }
  ~Ctx() { am_context_destroy(&c); }
  std::string err() const { return am_context_last_error(c); }
};

}  // namespace am_test
