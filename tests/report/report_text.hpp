// attnmech report tests — a record as am_report_json prints it (the report tests' shared reading of the text).
#pragma once
#include <doctest/doctest.h>

#include <string>

#include <attnmech/report.h>

#include "attnmech/attnmech.h"

namespace am_test {

inline std::string text_of(const am_record *r) {
  char *t = nullptr;
  REQUIRE(am_report_json(nullptr, r, &t) == AM_OK);
  std::string s(t);
  am_free(t);
  return s;
}

}  // namespace am_test
