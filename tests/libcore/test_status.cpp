// status.cpp: every status code has its own name, never NULL.
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <string>

#include "attnmech/attnmech.h"

TEST_CASE("status strings are never NULL and distinct for every code") {
  std::set<std::string> names;
  for (int c = -15; c <= 2; ++c) {
    const char *s = am_status_string(c);
    REQUIRE(s != nullptr);
    CHECK(std::strlen(s) > 0);
    names.insert(s);
  }
  CHECK(names.size() == 18);  // every code has its own name
  CHECK(std::string(am_status_string(12345)) == "unknown status");
}
