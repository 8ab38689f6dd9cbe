// Identities of spec attention-paths.md §8 items 2–4, metrics and head scores against independent
// (slow, literal) implementations.
#include <doctest/doctest.h>

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "random_problem.hpp"
#include "toy.hpp"

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

TEST_CASE("kernel identities: K_U(cI) = c/(s1..sL sa) K_GP, K_U = (1/H) sum U C, diag, cross") {
  random_problem rp({2, 2}, {4, 4, 4}, {1.3, 0.8, 1.2, 1.5}, AM_READOUT_LAST, 9, 5, 4, 31);
  const size_t P = rp.P, N0 = rp.N0, H = rp.H;
  std::vector<double> Kgp(P * P), Ku(P * P), U(H * H, 0.0);
  REQUIRE(am_kernel_gp(nullptr, &rp.arch, N0, P, rp.xi.data(), Kgp.data(), P) == AM_OK);
  const double c = 2.5, prod = 0.8 * 1.2 * 1.5;
  for (size_t i = 0; i < H; ++i) U[i + i * H] = c;
  REQUIRE(am_kernel_u(nullptr, N0, H, U.data(), P, rp.xi.data(), P, rp.xi.data(), Ku.data(), P) == AM_OK);
  for (size_t k = 0; k < P * P; ++k) CHECK(Ku[k] == doctest::Approx(c / prod * Kgp[k]).epsilon(1e-13));
  // general (indefinite) U against the literal sum over pre-kernels
  for (size_t j = 0; j < H; ++j)
    for (size_t i = 0; i <= j; ++i) U[i + j * H] = U[j + i * H] = std::cos(1.0 + (double)(3 * i + 7 * j));
  REQUIRE(am_kernel_u(nullptr, N0, H, U.data(), P, rp.xi.data(), P, rp.xi.data(), Ku.data(), P) == AM_OK);
  std::vector<double> C(P * P), ref(P * P, 0.0);
  for (size_t a = 0; a < H; ++a)
    for (size_t b = 0; b < H; ++b) {
      REQUIRE(am_prekernel(nullptr, N0, H, P, rp.xi.data(), a, b, C.data(), P) == AM_OK);
      for (size_t k = 0; k < P * P; ++k) ref[k] += U[a + b * H] * C[k] / (double)H;
    }
  for (size_t k = 0; k < P * P; ++k) CHECK(Ku[k] == doctest::Approx(ref[k]).epsilon(1e-12).scale(1.0));
  // diagonal helper and the non-symmetric (cross) path agree with the symmetric kernel
  std::vector<double> d(P), Kx(P * P);
  REQUIRE(am_kernel_u_diag(nullptr, N0, H, U.data(), P, rp.xi.data(), d.data()) == AM_OK);
  std::vector<double> xi2(rp.xi);  // a different pointer forces the general GEMM path
  REQUIRE(am_kernel_u(nullptr, N0, H, U.data(), P, rp.xi.data(), P, xi2.data(), Kx.data(), P) == AM_OK);
  for (size_t m = 0; m < P; ++m) CHECK(d[m] == doctest::Approx(Ku[m + m * P]).epsilon(1e-12));
  for (size_t k = 0; k < P * P; ++k) CHECK(Kx[k] == doctest::Approx(Ku[k]).epsilon(1e-12).scale(1.0));
}

TEST_CASE("entropy at the GP point: 7 (H=2,2), 4 (H=2,1), 3 (one path); U_a = 1") {
  struct cfg {
    std::vector<uint32_t> h;
    double expect;
  } cfgs[] = {{{2, 2}, 7.0}, {{2, 1}, 4.0}, {{1, 1}, 3.0}};
  for (auto &c : cfgs) {
    random_problem rp(c.h, {10, 10, 10}, {1, 1, 1, 1}, AM_READOUT_LAST, 6, 4, 4, 41);
    am_theory *th = nullptr;
    REQUIRE(am_theory_create(nullptr, &th, &rp.arch, rp.P, rp.N0, rp.xi.data(), rp.y.data(), 0.5) == AM_OK);
    std::vector<double> U(am_theory_u_size(th));
    am_theory_gp_point(th, U.data());
    am_action a{sizeof(am_action)};
    REQUIRE(am_theory_action(nullptr, th, U.data(), &a, nullptr, nullptr) == AM_OK);
    CHECK(a.entropy == doctest::Approx(c.expect).epsilon(1e-14));
    CHECK(a.U_a == doctest::Approx(1.0).epsilon(1e-14));
    am_theory_destroy(&th);
  }
}

TEST_CASE("head scores: inclusion-exclusion form of spec §4.5 on a random U") {
  am_arch a;
  am_arch_default(&a);
  a.layers = 3;
  a.heads[0] = 2;
  a.heads[1] = 3;
  a.heads[2] = 2;
  const size_t H = 12;
  std::vector<double> U(H * H);
  for (size_t j = 0; j < H; ++j)
    for (size_t i = 0; i <= j; ++i) U[i + j * H] = U[j + i * H] = std::sin(0.37 * (double)(i * 13 + j * 5 + 1));
  std::vector<double> sc(7);
  REQUIRE(am_head_scores(nullptr, &a, U.data(), sc.data()) == AM_OK);
  // digits of π: (h1, h2, h3), h1 most significant
  auto digit = [](size_t pi, int l) { return l == 0 ? pi / 6 : (l == 1 ? (pi / 2) % 3 : pi % 2); };
  std::vector<double> ref;
  for (int l = 0; l < 3; ++l)
    for (size_t h = 0; h < a.heads[l]; ++h) {
      double row = 0, col = 0, both = 0;
      for (size_t p = 0; p < H; ++p)
        for (size_t q = 0; q < H; ++q) {
          const double v = std::fabs(U[p + q * H]);
          if (digit(p, l) == h) row += v;
          if (digit(q, l) == h) col += v;
          if (digit(p, l) == h && digit(q, l) == h) both += v;
        }
      ref.push_back(row + col - both);
    }
  const double mx = *std::max_element(ref.begin(), ref.end());
  for (size_t i = 0; i < 7; ++i) CHECK(sc[i] == doctest::Approx(ref[i] / mx).epsilon(1e-14));
}

TEST_CASE("kernel alignment: a kernel dominated by y yᵀ has its top PC aligned with y") {
  const size_t P = 20;
  std::vector<double> y(P), K(P * P);
  for (size_t i = 0; i < P; ++i) y[i] = (i % 3) ? 1.0 : -1.0;
  for (size_t j = 0; j < P; ++j)
    for (size_t i = 0; i < P; ++i) K[i + j * P] = 5.0 * y[i] * y[j] + (i == j ? 1.0 + 0.01 * (double)i : 0.0);
  std::vector<double> o(3), e(3);
  REQUIRE(am_kernel_alignment(nullptr, K.data(), P, P, y.data(), 3, o.data(), e.data()) == AM_OK);
  // exact: eigenvector ∝ y up to the O(0.01) diagonal perturbation
  CHECK(o[0] == doctest::Approx(1.0).epsilon(1e-4));
  CHECK(e[0] > e[1]);
  CHECK(o[1] < 0.05);
}

TEST_CASE("kernel alignment: the k leading components equal those of a full eigendecomposition") {
  // A random SPD kernel K = B Bᵀ + I with distinct eigenvalues; reference: dsyevd of the whole matrix.
  random_problem rp({1}, {2, 2}, {1, 1, 1}, AM_READOUT_LAST, 1, 2, 2, 77);
  const size_t P = 60, k = 7;
  std::vector<double> B(P * P), K(P * P), y(P);
  for (auto &v : B) v = rp.normal();
  for (auto &v : y) v = rp.normal();
  for (size_t j = 0; j < P; ++j)
    for (size_t i = 0; i < P; ++i) {
      double s = i == j ? 1.0 : 0.0;
      for (size_t t = 0; t < P; ++t) s += B[i + t * P] * B[j + t * P];
      K[i + j * P] = s;
    }
  std::vector<double> A = K, w(P);
  REQUIRE(LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', (lapack_int)P, A.data(), (lapack_int)P, w.data()) == 0);
  double ny = 0;
  for (double v : y) ny += v * v;
  ny = std::sqrt(ny);
  std::vector<double> o(k), e(k);
  REQUIRE(am_kernel_alignment(nullptr, K.data(), P, P, y.data(), k, o.data(), e.data()) == AM_OK);
  for (size_t r = 0; r < k; ++r) {
    const size_t c = P - 1 - r;
    double dot = 0;
    for (size_t i = 0; i < P; ++i) dot += A[i + c * P] * y[i];
    // eigenvalues O(P) with gaps O(1): both solvers are backward stable, agreement to ~1e-13 relative
    CHECK(e[r] == doctest::Approx(w[c]).epsilon(1e-12));
    CHECK(o[r] == doctest::Approx(std::fabs(dot) / ny).epsilon(1e-9));
  }
  CHECK(am_kernel_alignment(nullptr, K.data(), P, P, y.data(), 0, o.data(), e.data()) == AM_OK);  // k = 0: nothing
}

TEST_CASE("accuracy and regression errors: closed forms") {
  const double mean[4] = {0.5, -0.2, 0.1, 0.0}, var[4] = {0.25, 0.04, 0.0, 1.0}, y[4] = {1, 1, 1, -1};
  CHECK(am_accuracy(mean, y, 4) == doctest::Approx(0.5));
  double b, v, f;
  REQUIRE(am_regression_errors(nullptr, mean, var, y, 4, &b, &v, &f) == AM_OK);
  CHECK(b == doctest::Approx((0.25 + 1.44 + 0.81 + 1.0) / 4).epsilon(1e-15));
  CHECK(v == doctest::Approx((0.25 + 0.04 + 0 + 1.0) / 4).epsilon(1e-15));
  // Φ(1) + Φ(−1) + 1 + Φ(0)
  CHECK(f == doctest::Approx((0.8413447460685429 + 0.15865525393145707 + 1.0 + 0.5) / 4).epsilon(1e-14));
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
