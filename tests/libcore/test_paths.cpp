// paths.cpp against independent (slow, literal) implementations: path packing (spec attention-paths.md §8
// item 2, A_π = Ω1_h1 Ω2_h2 r and the ξ scaling), attention columns and the mean readout, single-column attention.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "random_problem.hpp"

TEST_CASE("path packing: A_pi = Omega1_h1 Omega2_h2 r with pi = h1*H2 + h2; xi scaling") {
  random_problem rp({2, 3}, {3, 3, 3}, {1.7, 1, 1, 1}, AM_READOUT_LAST, 3, 5, 6, 21);
  const size_t S = rp.S, N0 = rp.N0;
  std::vector<double> A(S * 6), O1(S * S), O2(S * S);
  const double *X = rp.X.data();
  REQUIRE(am_path_vectors(nullptr, &rp.arch, rp.heads.data(), AM_READOUT_LAST, N0, S, X, A.data()) == AM_OK);
  for (size_t h1 = 0; h1 < 2; ++h1)
    for (size_t h2 = 0; h2 < 3; ++h2) {
      REQUIRE(am_attention(nullptr, &rp.heads[h1], N0, S, X, O1.data()) == AM_OK);
      REQUIRE(am_attention(nullptr, &rp.heads[2 + h2], N0, S, X, O2.data()) == AM_OK);
      for (size_t s = 0; s < S; ++s) {
        double v = 0;  // (Ω1 Ω2 e_{S−1})_s
        for (size_t t = 0; t < S; ++t) v += O1[s + t * S] * O2[t + (S - 1) * S];
        CHECK(A[s + (h1 * 3 + h2) * S] == doctest::Approx(v).epsilon(1e-14));  // round-off of a length-S sum
      }
    }
  // ξ^0_π = sqrt(s0/(N0 H)) X^0 A_π
  const double sc = std::sqrt(1.7 / (double)(N0 * 6));
  for (size_t p = 0; p < 6; ++p)
    for (size_t i = 0; i < N0; ++i) {
      double v = 0;
      for (size_t s = 0; s < S; ++s) v += X[i + s * N0] * A[s + p * S];
      CHECK(rp.xi[0 + rp.P * (i + N0 * p)] == doctest::Approx(sc * v).epsilon(1e-13));
    }
}

TEST_CASE("columns of attention sum to one; mean readout averages over queries") {
  random_problem rp({1}, {2, 2}, {1, 1, 1}, AM_READOUT_MEAN, 2, 4, 7, 5);
  std::vector<double> O(7 * 7), A(7);
  REQUIRE(am_attention(nullptr, &rp.heads[0], 4, 7, rp.X.data(), O.data()) == AM_OK);
  for (size_t t = 0; t < 7; ++t) {
    double s = 0;
    for (size_t k = 0; k < 7; ++k) s += O[k + t * 7];
    CHECK(s == doctest::Approx(1.0).epsilon(1e-14));
  }
  REQUIRE(am_path_vectors(nullptr, &rp.arch, rp.heads.data(), AM_READOUT_MEAN, 4, 7, rp.X.data(), A.data()) == AM_OK);
  for (size_t s = 0; s < 7; ++s) {
    double v = 0;
    for (size_t t = 0; t < 7; ++t) v += O[s + t * 7] / 7.0;
    CHECK(A[s] == doctest::Approx(v).epsilon(1e-14));
  }
}

TEST_CASE("single-column attention (last/first readout) equals the column of the full Ω, both head forms") {
  random_problem rp({2}, {3, 3}, {1, 1, 1}, AM_READOUT_LAST, 2, 6, 7, 51);
  const size_t N0 = 6, S = 7, G = 4;
  std::vector<double> Q(G * N0), K(G * N0);
  for (auto &v : Q) v = rp.normal();
  for (auto &v : K) v = rp.normal();
  am_head hs[2] = {rp.heads[0], am_head AM_QK_HEAD(G, Q.data(), K.data())};
  std::vector<double> O(S * S), A(S * 2);
  for (am_readout ro : {AM_READOUT_LAST, AM_READOUT_FIRST}) {
    REQUIRE(am_path_vectors(nullptr, &rp.arch, hs, ro, N0, S, rp.X.data(), A.data()) == AM_OK);
    const size_t t = ro == AM_READOUT_LAST ? S - 1 : 0;
    for (size_t h = 0; h < 2; ++h) {
      REQUIRE(am_attention(nullptr, &hs[h], N0, S, rp.X.data(), O.data()) == AM_OK);
      for (size_t s = 0; s < S; ++s) CHECK(A[s + h * S] == doctest::Approx(O[s + t * S]).epsilon(1e-13));
    }
  }
}
