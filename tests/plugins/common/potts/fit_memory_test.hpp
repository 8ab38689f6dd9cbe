// tests — what the memory tests of the sequence fits share (tests/plugins/common/potts, common/msa,
// estimator-vanilla): random sequences, the peak resident set an operation adds, and the check of an estimate
// against it.
#ifndef ATTNMECH_TESTS_FIT_MEMORY_TEST_HPP
#define ATTNMECH_TESTS_FIT_MEMORY_TEST_HPP

#include <doctest/doctest.h>

#include <attnmech/record.h>
#include <malloc.h>

#include <random>
#include <string>

#include "../../../handles.hpp"  // Rec
#include "../../../memory_limit.hpp"
#include "potts_estimators.h"

namespace fit_memory_test {

using am_test::Rec;

// M training and M_test held-out sequences of L sites, colours uniform in 0..C−1.
inline am::potts::SeqData sequences(size_t M, size_t M_test, int L, int C, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> colour(0, C - 1);
  am::potts::SeqData d;
  d.L = L, d.C = C, d.M = M, d.M_test = M_test;
  d.train.resize(M * L);
  d.test.resize(M_test * L);
  for (auto &x : d.train) x = colour(g);
  for (auto &x : d.test) x = colour(g);
  return d;
}

// KiB `op` made resident at its peak above what was resident before (0 when it cannot be measured).
template <class F>
long rise_kib(F &&op) {
  const bool ok = am_test::reset_peak();
  const long before = am_test::status_kib("VmRSS:");
  op();
  return ok && before >= 0 ? am_test::status_kib("VmHWM:") - before : 0;
}

// The ratio's bounds: every array the estimates count is written whole (zero-filled or computed) and none is
// counted that is not allocated, so estimate ÷ peak sits near 1; below, allocator rounding and the small work
// vectors the estimates leave out (< 5 %); above, the upper bounds the estimates take (the plan's changed sites
// counted as every site, one worker's scratch per thread of the machine).
constexpr double kLow = 0.9, kHigh = 1.1;

// estimate ÷ measured peak within [kLow, kHigh]; a rise of 0 or less (not measurable here) is only reported.
// malloc set for RSS measurements: large blocks mmapped fresh and returned when freed, and no MALLOC_PERTURB_ (meson
// test sets it; it would make reserved pages resident). Once per test, before the first measurement.
inline void quiet_malloc() {
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_PERTURB, 0);
}

// The peak RSS `fit(run)` adds (am_test::peak_above: the smaller of two runs), each run into a fresh record; the fit
// must return AM_OK. -1 when it cannot be measured here.
template <class Fit>
double fit_rise(Fit &&fit) {
  am_record *run = nullptr;
  am_status st = AM_OK;
  const double rise = am_test::peak_above(
      [&] {
        am_record_create(&run);
        st = fit(run);
      },
      [&] { am_record_destroy(&run); });
  am_record_destroy(&run);
  REQUIRE(st == AM_OK);
  return rise;
}

inline void check_estimate(const std::string &what, double est, double rise) {
  MESSAGE(what << est / 1e6 << " MB, measured " << rise / 1e6 << " MB");
  if (rise > 0) {
    CHECK(est / rise >= kLow);
    CHECK(est / rise <= kHigh);
  }
}

}  // namespace fit_memory_test

#endif
