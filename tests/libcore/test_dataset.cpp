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
am_array_view view(const double *d, std::vector<size_t> shape, int fortran) {
  am_array_view v;
  std::memset(&v, 0, sizeof v);
  v.dtype = AM_F64;
  v.ndim = (uint32_t)shape.size();
  for (size_t i = 0; i < shape.size(); ++i) v.shape[i] = shape[i];
  v.fortran_order = fortran;
  v.data = d;
  return v;
}

am_record *toy_dataset(const toy_problem &t) {
  am_record *ds = nullptr;
  REQUIRE(am_record_create(&ds) == AM_OK);
  am_record_set_string(ds, "kind", "attention");
  am_array_view v = view(t.X.data(), {t.P, t.S, t.N0}, 0);
  am_record_set_array(ds, "X_train", &v);
  v = view(t.Xt.data(), {t.Pt, t.S, t.N0}, 0);
  am_record_set_array(ds, "X_test", &v);
  am_record_set_vector(ds, "y_train", t.y.data(), t.P);
  const double yt[2] = {1, -1};
  am_record_set_vector(ds, "y_test", yt, 2);
  const double heads[2] = {2, 2}, widths[3] = {3, 4, 5}, vars[4] = {1.0, 0.8, 1.2, 1.5};
  am_record_set_vector(ds, "heads", heads, 2);
  am_record_set_vector(ds, "widths", widths, 3);
  am_record_set_vector(ds, "variances", vars, 4);
  am_record_set_number(ds, "temperature", t.T);
  am_record_set_string(ds, "readout", "last");
  am_record *att = am_record_object(ds, "attention");
  const std::vector<double> *Ws[4] = {&t.W11, &t.W12, &t.W21, &t.W22};
  const char *keys[4] = {"l1_h1", "l1_h2", "l2_h1", "l2_h2"};
  for (int k = 0; k < 4; ++k) {
    v = view(Ws[k]->data(), {t.N0, t.N0}, 1);  // column-major storage of W(i,j)
    am_record_set_array(att, keys[k], &v);
  }
  return ds;
}
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
