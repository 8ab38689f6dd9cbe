// attnmech tests — a record and a context that free themselves, their creation REQUIREd (the report and
// problem-directory suites).
#pragma once
#include <doctest/doctest.h>

#include <string>

#include "attnmech/attnmech.h"

namespace am_test {

struct Rec {
  am_record *r = nullptr;
  Rec() { REQUIRE(am_record_create(&r) == AM_OK); }
  ~Rec() { am_record_destroy(&r); }
};

struct Ctx {
  am_context *c = nullptr;
  Ctx() { REQUIRE(am_context_create(&c, nullptr) == AM_OK); }
  ~Ctx() { am_context_destroy(&c); }
  std::string err() const { return am_context_last_error(c); }
};

}  // namespace am_test
