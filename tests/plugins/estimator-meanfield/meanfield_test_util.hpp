// Helpers of the estimator meanfield's tests: small alignments as sequence dataset records, the estimator run on
// them, a run record's arrays read back.
#pragma once
#include <doctest/doctest.h>

#include <attnmech/array.h>
#include <attnmech/record.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../../handles.hpp"  // Rec, Ctx
#include "estimate.h"

namespace mf_test {

// An alignment as a task would hand it over: rows [M, L] of states 0..C−1, weights (empty: none), alphabet and site
// numbers (empty: none, the potts task's shape).
struct Alignment {
  int L = 0, C = 0;
  std::vector<int32_t> tokens;
  std::vector<double> w;
  std::string alphabet;
  std::vector<double> sites;
  size_t M() const { return tokens.size() / (size_t)L; }
};

using am_test::Ctx;
using am_test::Rec;


inline void put_dataset(am_record *ds, const Alignment &a) {
  const size_t sh[2] = {a.M(), (size_t)a.L};
  const am_array_view v = am_array_view_make(AM_I32, 2, sh, 0, a.tokens.data());
  am_record_set_string(ds, "kind", "sequence");
  am_record_set_number(ds, "C", a.C);
  am_record_set_array(ds, "tokens", &v);
  if (!a.w.empty()) am_record_set_vector(ds, "weights", a.w.data(), a.w.size());
  if (!a.alphabet.empty()) am_record_set_string(ds, "alphabet", a.alphabet.c_str());
  if (!a.sites.empty()) am_record_set_vector(ds, "site_numbers", a.sites.data(), a.sites.size());
}

// M rows of L uniform states; then each site i ≥ 1 copies site i − 1 with probability `copy` (coupled neighbours).
inline Alignment random_alignment(uint64_t seed, size_t M, int L, int C, double copy) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> col(0, C - 1);
  std::bernoulli_distribution cp(copy);
  Alignment a;
  a.L = L;
  a.C = C;
  a.tokens.resize(M * (size_t)L);
  for (size_t mu = 0; mu < M; ++mu)
    for (int i = 0; i < L; ++i)
      a.tokens[mu * L + i] = i > 0 && cp(g) ? a.tokens[mu * L + i - 1] : col(g);
  return a;
}

inline std::vector<double> numbers(const am_record *obj, const char *key) {
  am_array_view v{};
  const am_record *n = am_record_get(obj, key);
  REQUIRE_MESSAGE(n != nullptr, key);
  if (am_record_type_of(n) != AM_REC_ARRAY) {
    size_t len = 0;
    am_record_get_vector(obj, key, nullptr, 0, &len);
    std::vector<double> out(len);
    am_record_get_vector(obj, key, out.data(), len, &len);
    return out;
  }
  REQUIRE(am_record_array(n, &v) == AM_OK);
  std::vector<double> out(am_array_view_count(&v));
  REQUIRE(am_array_to_f64_c(nullptr, &v, out.data(), out.size()) == AM_OK);
  return out;
}

inline double number(const am_record *obj, const char *key) {
  double v = NAN;
  am_record_get_number(obj, key, &v);
  return v;
}

// The estimate on `a` with options `o` on a serial loop; REQUIREs AM_OK.
inline void estimate(const Alignment &a, const am::meanfield::Options &o, Rec &run,
                     const am::sdk::ParallelFor &loop = am::sdk::serial_loop()) {
  Rec ds;
  Ctx ctx;
  put_dataset(ds.r, a);
  REQUIRE_MESSAGE(am::meanfield::estimate(ctx.c, o, ds.r, loop, run.r) == AM_OK, ctx.err());
}

}  // namespace mf_test
