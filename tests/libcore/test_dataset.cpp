// Attention datasets (dataset.h): ξ from a record equals ξ from the arrays and follows a change of s_0. The
// theory estimator on the same record: tests/plugins/common/attention/test_estimate.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../toy.hpp"

namespace {
}  // namespace

TEST_CASE("dataset: xi from a record, and a change of s0") {
  toy_problem t;
  am_record *ds = toy_dataset(t);
  std::vector<double> ref(t.P * t.N0 * 4);
  REQUIRE(am_xi(nullptr, &t.arch, t.heads, AM_READOUT_LAST, t.P, t.N0, t.S, t.X.data(), ref.data()) == AM_OK);
  double *xi = nullptr, *y = nullptr;
  size_t P = 0, N0 = 0;
  REQUIRE(am_dataset_xi(nullptr, ds, "train", &xi, &P, &N0, &y) == AM_OK);
  REQUIRE(P == t.P);
  REQUIRE(N0 == t.N0);
  for (size_t k = 0; k < ref.size(); ++k) CHECK(xi[k] == ref[k]);  // same code path: bitwise
  am_free(xi);
  am_free(y);
  REQUIRE(am_dataset_xi(nullptr, ds, "test", &xi, &P, &N0, &y) == AM_OK);
  CHECK(y[1] == -1.0);
  am_free(xi);
  am_free(y);
  // s0 = 4 doubles ξ (ξ ∝ √s0)
  const double vars[4] = {4.0, 0.8, 1.2, 1.5};
  am_record_set_vector(ds, "variances", vars, 4);
  REQUIRE(am_dataset_xi(nullptr, ds, "train", &xi, &P, &N0, nullptr) == AM_OK);
  for (size_t k = 0; k < ref.size(); ++k) CHECK(xi[k] == doctest::Approx(2.0 * ref[k]).epsilon(1e-15));
  am_free(xi);
  am_record_destroy(&ds);
}
