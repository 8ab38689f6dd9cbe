// The theory on query/key heads: the spec §8.0 toy with its bilinear heads written as Q/K pairs (K = √G·I, Q = W,
// G = N0, so (K x_s)·(Q x_t)/√G = x_sᵀ W x_t) must give the spec's optimum; am_xi on Q/K heads against a direct
// computation with mean readout. (Head scores are tested in tests/libcore/test_metrics.cpp.)
#include <doctest/doctest.h>

#include "oneshot_core.h"
#include "estimate.hpp"
#include "../../newton_distance.hpp"
#include "../../toy.hpp"

#include <attnmech/plugin.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

double toyX(double mu, size_t i, size_t s) {
  return std::sin(1 + 0.7 * mu + 0.3 * double(i) + 0.2 * double(s)) + 0.1 * double(i);
}

}  // namespace

TEST_CASE("am_xi on query/key heads with mean readout equals a direct computation") {
  const size_t N0 = 4, S = 3, G = 2, P = 2;
  am_arch a;
  am_arch_default(&a);
  a.layers = 2;
  a.heads[0] = 2;
  a.heads[1] = 1;
  a.widths[0] = a.widths[1] = a.widths[2] = 5;
  a.variances[0] = 1.7;
  std::vector<double> Q[3], K[3];
  am_rng r;
  am_rng_init(&r, 31, 0);
  for (int j = 0; j < 3; ++j) {
    Q[j].resize(G * N0);
    K[j].resize(G * N0);
    am_rng_fill_normal(&r, Q[j].data(), G * N0);
    am_rng_fill_normal(&r, K[j].data(), G * N0);
  }
  std::vector<am_head> heads(3);
  for (int j = 0; j < 3; ++j) heads[j] = am_head AM_QK_HEAD(G, Q[j].data(), K[j].data());
  std::vector<double> X(P * S * N0);
  am_rng_fill_normal(&r, X.data(), X.size());
  const size_t Ht = 2;
  std::vector<double> xi(P * N0 * Ht);
  REQUIRE(am_xi(nullptr, &a, heads.data(), AM_READOUT_MEAN, P, N0, S, X.data(), xi.data()) == AM_OK);
  for (size_t mu = 0; mu < P; ++mu) {
    const double *x = X.data() + mu * N0 * S;
    auto omega = [&](int j) {
      std::vector<double> O(S * S);
      for (size_t t = 0; t < S; ++t) {
        double sum = 0;
        for (size_t s = 0; s < S; ++s) {
          double lg = 0;
          for (size_t g = 0; g < G; ++g) {
            double kx = 0, qx = 0;
            for (size_t i = 0; i < N0; ++i) {
              kx += K[j][g + G * i] * x[i + N0 * s];
              qx += Q[j][g + G * i] * x[i + N0 * t];
            }
            lg += kx * qx;
          }
          O[s + S * t] = std::exp(lg / std::sqrt(double(G)));
          sum += O[s + S * t];
        }
        for (size_t s = 0; s < S; ++s) O[s + S * t] /= sum;
      }
      return O;
    };
    const auto O2 = omega(2);
    std::vector<double> w2(S, 0.0);
    for (size_t s = 0; s < S; ++s)
      for (size_t t = 0; t < S; ++t) w2[s] += O2[s + S * t] / double(S);
    for (size_t h = 0; h < 2; ++h) {
      const auto O1 = omega(int(h));
      for (size_t i = 0; i < N0; ++i) {
        double v = 0;
        for (size_t s = 0; s < S; ++s) {
          double A = 0;
          for (size_t t = 0; t < S; ++t) A += O1[s + S * t] * w2[t];
          v += x[i + N0 * s] * A;
        }
        v *= std::sqrt(1.7 / (double(N0) * double(Ht)));
        CHECK(xi[mu + P * (i + N0 * h)] == doctest::Approx(v).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("theory on Q/K heads reproduces the spec 8.0 toy optimum (bilinear W written as K = sqrt(G) I, Q = W)") {
  const size_t P = 8, N0 = 5, S = 4;
  am_record *ds = nullptr;
  REQUIRE(am_record_create(&ds) == AM_OK);
  std::vector<double> X(P * S * N0), Xt(2 * S * N0), y(P), yt{1, -1};
  for (size_t mu = 0; mu < P; ++mu) {
    y[mu] = mu % 2 == 0 ? 1 : -1;
    for (size_t s = 0; s < S; ++s)
      for (size_t i = 0; i < N0; ++i) X[(mu * S + s) * N0 + i] = toyX(double(mu), i, s);
  }
  for (size_t k = 0; k < 2; ++k)
    for (size_t s = 0; s < S; ++s)
      for (size_t i = 0; i < N0; ++i) Xt[(k * S + s) * N0 + i] = toyX(8.5 + double(k), i, s);
  auto put3 = [&](const char *key, const std::vector<double> &v, size_t n) {
    am_array_view av;
    std::memset(&av, 0, sizeof av);
    av.dtype = AM_F64;
    av.ndim = 3;
    av.shape[0] = n;
    av.shape[1] = S;
    av.shape[2] = N0;
    av.data = v.data();
    REQUIRE(am_record_set_array(ds, key, &av) == AM_OK);
  };
  am_record_set_string(ds, "kind", "attention");
  put3("X_train", X, P);
  put3("X_test", Xt, 2);
  am_record_set_vector(ds, "y_train", y.data(), P);
  am_record_set_vector(ds, "y_test", yt.data(), 2);
  am_record *hl = am_record_list(ds, "heads");
  am_record_append_number(hl, 2);
  am_record_append_number(hl, 2);
  am_record *wl = am_record_list(ds, "widths");
  for (double w : {3.0, 4.0, 5.0}) am_record_append_number(wl, w);
  am_record *vl = am_record_list(ds, "variances");
  for (double v : {1.0, 0.8, 1.2, 1.5}) am_record_append_number(vl, v);
  am_record_set_number(ds, "temperature", 0.1);
  am_record_set_string(ds, "readout", "last");
  am_record *att = am_record_object(ds, "attention");
  // W matrices of spec §8.0 (i = row = key side), column-major
  std::vector<std::vector<double>> W(4, std::vector<double>(N0 * N0, 0.0));
  for (size_t i = 0; i < N0; ++i)
    for (size_t j = 0; j < N0; ++j) {
      W[0][i + N0 * j] = i == j ? 0.5 : 0.0;
      W[1][i + N0 * j] = std::cos(double(i) + 2.0 * double(j));
      W[2][i + N0 * j] = 0.0;
      W[3][i + N0 * j] = std::cos(0.5 * double(i) - 1.5 * double(j));
    }
  const char *keys[4] = {"l1_h1", "l1_h2", "l2_h1", "l2_h2"};
  std::vector<double> Kmat(N0 * N0, 0.0);
  for (size_t i = 0; i < N0; ++i) Kmat[i + N0 * i] = std::sqrt(double(N0));
  for (int j = 0; j < 4; ++j) {
    am_record *h = am_record_object(att, keys[j]);
    // logit = (K x_s)·(Q x_t)/√G = x_sᵀ Kᵀ Q x_t /√G = x_sᵀ W x_t with K = √G I, Q = W
    REQUIRE(am_record_set_matrix(h, "Q", W[j].data(), N0, N0, N0) == AM_OK);
    REQUIRE(am_record_set_matrix(h, "K", Kmat.data(), N0, N0, N0) == AM_OK);
  }
  am_record *run = nullptr;
  REQUIRE(am_record_create(&run) == AM_OK);
  am::attention::Options opt;
  opt.alignment_k = 0;
  REQUIRE(am::attention::estimate(nullptr, ds, am::sdk::make_record().get(), opt, run) == AM_OK);
  double S_code = 0, Ua = 0;
  REQUIRE(am_record_get_number(run, "action", &S_code) == AM_OK);
  REQUIRE(am_record_get_number(run, "U_a", &Ua) == AM_OK);
  // spec §8.0 values (10 digits): the action moves to second order in the solve's distance to the optimum, U_a
  // and the means to first order: within the spec's digits plus their drift over the run's distance (its report)
  CHECK(S_code == doctest::Approx(18.0688248255).epsilon(1e-9));
  am_array_view mv;
  REQUIRE(am_record_get_array(am_record_get(run, "test"), "mean", &mv) == AM_OK);
  std::vector<double> mean(2);
  REQUIRE(am_array_to_f64_c(nullptr, &mv, mean.data(), 2) == AM_OK);
  {
    const toy_problem t;  // the same architecture (heads, widths, variances)
    double *xi = nullptr, *xit = nullptr, *yy = nullptr;
    size_t Pn = 0, N0n = 0, Ptn = 0;
    REQUIRE(am_dataset_xi(nullptr, ds, "train", &xi, &Pn, &N0n, &yy) == AM_OK);
    REQUIRE(am_dataset_xi(nullptr, ds, "test", &xit, &Ptn, &N0n, nullptr) == AM_OK);
    am_theory *th = nullptr;
    REQUIRE(am_theory_create(nullptr, &th, &t.arch, Pn, N0n, xi, yy, 0.1) == AM_OK);
    const std::vector<double> U = newton_test::record_u(th, t.arch, run);
    const double d = newton_test::report_distance(run);
    const auto ua = [&](const double *V) {
      am_action a{sizeof a};
      return am_theory_action(nullptr, th, V, &a, nullptr, nullptr) == AM_OK ? a.U_a : NAN;
    };
    CHECK(std::fabs(Ua - 1.0475780679) <= 1e-8 * 1.0475780679 + newton_test::drift(th, t.arch, U.data(), ua, d));
    const double ref[2] = {0.0252733611, 0.0410944365};
    for (size_t b = 0; b < 2; ++b) {
      const auto m = [&](const double *V) {
        double mm[2], vv[2];
        return am_theory_predict(nullptr, th, V, 2, xit, mm, vv) == AM_OK ? mm[b] : NAN;
      };
      CHECK(std::fabs(mean[b] - ref[b]) <= 1e-8 * ref[b] + newton_test::drift(th, t.arch, U.data(), m, d));
    }
    am_theory_destroy(&th);
    am_free(xi);
    am_free(xit);
    am_free(yy);
  }
  am_record_destroy(&run);
  am_record_destroy(&ds);
}
