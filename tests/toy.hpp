// The RNG-free toy problem of spec attention-paths.md §8.0, shared by the libcore tests and the attention
// library's (tests/plugins/common/attention).
#pragma once
#include <cmath>
#include <vector>

#include "attnmech/attnmech.h"

struct toy_problem {
  static constexpr size_t P = 8, N0 = 5, S = 4, Pt = 2;
  std::vector<double> X, Xt, y, W11, W12, W21, W22;
  am_arch arch;
  am_head heads[4];
  double T = 0.1;

  static void example(double mu, double *X) {  // N0 × S column-major
    for (size_t s = 0; s < S; ++s)
      for (size_t i = 0; i < N0; ++i) X[i + s * N0] = std::sin(1 + 0.7 * mu + 0.3 * (double)i + 0.2 * (double)s) + 0.1 * (double)i;
  }
  toy_problem() : X(P * N0 * S), Xt(Pt * N0 * S), y(P), W11(N0 * N0, 0.0), W12(N0 * N0), W21(N0 * N0, 0.0), W22(N0 * N0) {
    for (size_t mu = 0; mu < P; ++mu) {
      example((double)mu, X.data() + mu * N0 * S);
      y[mu] = mu % 2 == 0 ? 1.0 : -1.0;
    }
    example(8.5, Xt.data());
    example(9.5, Xt.data() + N0 * S);
    for (size_t j = 0; j < N0; ++j)
      for (size_t i = 0; i < N0; ++i) {  // W[i,j], i = row = key side; column-major storage
        W11[i + j * N0] = i == j ? 0.5 : 0.0;
        W12[i + j * N0] = std::cos((double)i + 2.0 * (double)j);
        W22[i + j * N0] = std::cos(0.5 * (double)i - 1.5 * (double)j);
      }
    am_arch_default(&arch);
    arch.layers = 2;
    arch.heads[0] = 2;
    arch.heads[1] = 2;
    arch.widths[0] = 3;
    arch.widths[1] = 4;
    arch.widths[2] = 5;
    arch.variances[0] = 1.0;
    arch.variances[1] = 0.8;
    arch.variances[2] = 1.2;
    arch.variances[3] = 1.5;
    const double *Ws[4] = {W11.data(), W12.data(), W21.data(), W22.data()};
    for (int k = 0; k < 4; ++k) heads[k] = am_head AM_BILINEAR_HEAD(Ws[k]);
  }
};

// A borrowed f64 view (C order unless fortran) through libcore's one constructor.
inline am_array_view test_view(const double *d, std::vector<size_t> shape, int fortran) {
  return am_array_view_make(AM_F64, (uint32_t)shape.size(), shape.data(), fortran, d);
}

// The toy problem as an attention dataset record (dataset.h): train and test splits, 2 × 2 heads, widths 3, 4, 5;
// NULL when the record cannot be made. The caller destroys it.
inline am_record *toy_dataset(const toy_problem &t) {
  am_record *ds = nullptr;
  if (am_record_create(&ds) != AM_OK) return nullptr;
  am_record_set_string(ds, "kind", "attention");
  am_array_view v = test_view(t.X.data(), {t.P, t.S, t.N0}, 0);
  am_record_set_array(ds, "X_train", &v);
  v = test_view(t.Xt.data(), {t.Pt, t.S, t.N0}, 0);
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
    v = test_view(Ws[k]->data(), {t.N0, t.N0}, 1);  // column-major storage of W(i,j)
    am_record_set_array(att, keys[k], &v);
  }
  return ds;
}
