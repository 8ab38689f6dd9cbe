// metrics.cpp against independent (slow, literal) implementations: head scores (spec §4.5, the
// inclusion-exclusion form and a brute-force sum over path pairs), kernel alignment (against dsyevd), accuracy
// and regression errors (closed forms).
#include <doctest/doctest.h>

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "random_problem.hpp"

namespace {

// Brute force: unfold U into (h_1..h_L ; h'_1..h'_L) and sum |U| over pairs where either path uses head h of layer l.
std::vector<double> brute_scores(const am_arch &a, const std::vector<double> &U) {
  const size_t L = a.layers;
  size_t Ht = 1;
  for (size_t l = 0; l < L; ++l) Ht *= a.heads[l];
  auto head_of = [&](size_t p, size_t l) {
    size_t div = 1;
    for (size_t k = l + 1; k < L; ++k) div *= a.heads[k];
    return (p / div) % a.heads[l];
  };
  std::vector<double> sc;
  for (size_t l = 0; l < L; ++l)
    for (size_t h = 0; h < a.heads[l]; ++h) {
      double s = 0;
      for (size_t p = 0; p < Ht; ++p)
        for (size_t q = 0; q < Ht; ++q)
          if (head_of(p, l) == h || head_of(q, l) == h) s += std::fabs(U[p + Ht * q]);
      sc.push_back(s);
    }
  double mx = 0;
  for (double v : sc) mx = std::max(mx, v);
  for (double &v : sc) v /= mx;
  return sc;
}

}  // namespace

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

TEST_CASE("log-likelihood: the Gaussian predictive density, closed form") {
  const double mean[3] = {0.5, -0.2, 1.0}, var[3] = {0.15, 0.0, 0.4}, y[3] = {1, 1, -1}, T = 0.1;
  // s = var + T = 0.25, 0.1, 0.5; (y − mean)² = 0.25, 1.44, 4
  const double two_pi = 6.283185307179586;
  const double want = -0.5 * ((std::log(two_pi * 0.25) + 0.25 / 0.25) + (std::log(two_pi * 0.1) + 1.44 / 0.1) +
                              (std::log(two_pi * 0.5) + 4.0 / 0.5)) / 3;
  CHECK(am_log_likelihood(mean, var, y, 3, T) == doctest::Approx(want).epsilon(1e-15));
  CHECK(std::isnan(am_log_likelihood(mean, var, y, 3, 0.0)));  // var + T = 0 at the second point
  CHECK(std::isnan(am_log_likelihood(mean, var, y, 0, T)));
  CHECK(std::isnan(am_log_likelihood(nullptr, var, y, 3, T)));
}

TEST_CASE("validation selection: accuracy, then likelihood, then toward the GP limit, then the first (known answers)") {
  const double nan = NAN;
  size_t k = 99;
  SUBCASE("the best accuracy wins, whatever its likelihood") {
    const double acc[4] = {0.7, 0.75, nan, 0.7}, ll[4] = {-0.1, -2.0, 5.0, -0.2};
    REQUIRE(am_select_validation(nullptr, 4, acc, ll, nullptr, nullptr, nullptr, &k) == AM_OK);
    CHECK(k == 1);
  }
  SUBCASE("equal accuracies: the best likelihood") {
    const double acc[4] = {0.75, 0.5, 0.75, 0.75}, ll[4] = {-1.0, 3.0, -0.25, -0.5}, T[4] = {0.1, 0.2, 0.3, 0.4};
    REQUIRE(am_select_validation(nullptr, 4, acc, ll, nullptr, nullptr, T, &k) == AM_OK);
    CHECK(k == 2);
  }
  SUBCASE("likelihoods within 1e-9 relative tie: the larger T; 1e-6 apart do not") {
    const double acc[3] = {0.8, 0.8, 0.8}, T[3] = {0.5, 2.0, 1.0};
    const double tie[3] = {-2.0, -2.0 - 1e-12, -2.0 + 1e-12}, apart[3] = {-2.0 + 1e-6, -2.0, -2.0};
    REQUIRE(am_select_validation(nullptr, 3, acc, tie, nullptr, nullptr, T, &k) == AM_OK);
    CHECK(k == 1);
    REQUIRE(am_select_validation(nullptr, 3, acc, apart, nullptr, nullptr, T, &k) == AM_OK);
    CHECK(k == 0);
  }
  SUBCASE("a full tie: the larger smallest width, then the larger sum, then the larger T, then the first") {
    const double acc[5] = {0.6, 0.6, 0.6, 0.6, 0.6}, ll[5] = {-1, -1, -1, -1, -1};
    const double wmin[5] = {10, 100, 100, 100, 100}, wsum[5] = {1e6, 300, 400, 400, 400}, T[5] = {9, 1, 0.5, 2, 2};
    REQUIRE(am_select_validation(nullptr, 5, acc, ll, wmin, wsum, T, &k) == AM_OK);
    CHECK(k == 3);  // 1–4 share wmin 100; 2–4 the sum 400; 3 and 4 T = 2: the first of them
  }
  SUBCASE("no likelihoods given: accuracy, then the larger T") {
    const double acc[3] = {0.5, 0.9, 0.9}, T[3] = {3, 0.1, 0.2};
    REQUIRE(am_select_validation(nullptr, 3, acc, nullptr, nullptr, nullptr, T, &k) == AM_OK);
    CHECK(k == 2);
  }
  SUBCASE("every solve failed, or none given") {
    am_context *ctx = nullptr;
    REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
    const double acc[2] = {nan, nan}, ll[2] = {nan, nan};
    CHECK(am_select_validation(ctx, 2, acc, ll, nullptr, nullptr, nullptr, &k) == AM_ERR_NOT_CONVERGED);
    CHECK(k == 2);
    CHECK(std::string(am_context_last_error(ctx)).find("every solve failed") != std::string::npos);
    CHECK(am_select_validation(ctx, 0, nullptr, nullptr, nullptr, nullptr, nullptr, &k) == AM_ERR_NOT_CONVERGED);
    CHECK(k == 0);
    CHECK(am_select_validation(ctx, 2, acc, ll, nullptr, nullptr, nullptr, nullptr) == AM_ERR_INVALID_ARGUMENT);
    am_context_destroy(&ctx);
  }
}

TEST_CASE("head scores equal a brute-force sum over path pairs on a random U (L=2, H=(3,2) and L=3, H=(2,2,2))") {
  for (int cfg = 0; cfg < 2; ++cfg) {
    am_arch a;
    am_arch_default(&a);
    if (cfg == 0) {
      a.layers = 2;
      a.heads[0] = 3;
      a.heads[1] = 2;
    } else {
      a.layers = 3;
      a.heads[0] = a.heads[1] = a.heads[2] = 2;
    }
    const size_t Ht = am_arch_paths(&a), nh = cfg == 0 ? 5 : 6;
    am_rng r;
    am_rng_init(&r, 21 + cfg, 0);
    std::vector<double> U(Ht * Ht);
    for (size_t p = 0; p < Ht; ++p)
      for (size_t q = 0; q <= p; ++q) U[p + Ht * q] = U[q + Ht * p] = am_rng_normal(&r);
    std::vector<double> sc(nh);
    REQUIRE(am_head_scores(nullptr, &a, U.data(), sc.data()) == AM_OK);
    const auto bf = brute_scores(a, U);
    for (size_t j = 0; j < nh; ++j) CHECK(sc[j] == doctest::Approx(bf[j]).epsilon(1e-12));  // sums of ≤ 64 terms
  }
}

namespace {

// The k leading eigenpairs of the symmetric K (dsyevd of the whole matrix): eigenvalues descending, overlaps
// |v·y|/|y| and each eigenvalue's gap to its nearest neighbour in the whole spectrum.
void whole_alignment(const std::vector<double> &K, size_t P, const std::vector<double> &y, size_t k,
                     std::vector<double> *ov, std::vector<double> *ev, std::vector<double> *gap) {
  std::vector<double> A = K, w(P);
  REQUIRE(LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', (lapack_int)P, A.data(), (lapack_int)P, w.data()) == 0);
  double ny = 0;
  for (double v : y) ny += v * v;
  ny = std::sqrt(ny);
  ov->assign(k, 0);
  ev->assign(k, 0);
  gap->assign(k, 0);
  for (size_t r = 0; r < k; ++r) {
    const size_t c = P - 1 - r;
    double dot = 0;
    for (size_t i = 0; i < P; ++i) dot += A[i + c * P] * y[i];
    (*ov)[r] = std::fabs(dot) / ny;
    (*ev)[r] = w[c];
    (*gap)[r] = std::min(c + 1 < P ? w[c + 1] - w[c] : INFINITY, c > 0 ? w[c] - w[c - 1] : INFINITY);
  }
}

struct theory_case {
  random_problem rp;
  am_theory *th = nullptr;
  std::vector<double> U, K;
  theory_case(std::vector<uint32_t> heads, size_t P, size_t N0, uint64_t seed)
      : rp(heads, std::vector<double>(heads.size() + 1, 2.0), std::vector<double>(heads.size() + 2, 1.0),
           AM_READOUT_LAST, P, N0, 4, seed) {
    REQUIRE(am_theory_create(nullptr, &th, &rp.arch, P, N0, rp.xi.data(), rp.y.data(), 0.1) == AM_OK);
    U = rp.random_u(th);
    K.resize(P * P);
    REQUIRE(am_theory_kernel(nullptr, th, U.data(), K.data()) == AM_OK);
  }
  ~theory_case() { am_theory_destroy(&th); }
};

}  // namespace

TEST_CASE("theory alignment from the kernel's factor equals the whole kernel's eigenpairs (dsyevd)") {
  // r = N0·H_tot = 5·4 = 20 < P = 90: the factor route (thin QR of the P × r factor, eigenpairs of R Rᵀ).
  for (uint64_t seed : {3, 4, 5}) {
    theory_case c({2, 2}, 90, 5, seed);
    const size_t P = c.rp.P, r = c.rp.N0 * c.rp.H;
    for (size_t k : {size_t(1), size_t(7), r}) {
      std::vector<double> ov(k), ev(k), ov0, ev0, gap;
      REQUIRE(am_theory_alignment(nullptr, c.th, c.U.data(), nullptr, k, ov.data(), ev.data()) == AM_OK);
      whole_alignment(c.K, P, c.rp.y, k, &ov0, &ev0, &gap);
      // Both routes are backward stable with a backward error of a few ε·‖K‖ (Householder QR, dsyevr / dsyevd;
      // a low-order polynomial in r and P in the worst case, ~1 in practice): eigenvalues within 100·ε·λ_max, and
      // eigenvectors — hence overlaps, |Δ(v·y)| ≤ |Δv|·|y| — within 100·ε·λ_max over the eigenvalue's gap.
      const double lmax = ev0[0], tol = 100 * 0x1p-52 * lmax;
      for (size_t i = 0; i < k; ++i) {
        CAPTURE(seed);
        CAPTURE(k);
        CAPTURE(i);
        CHECK(std::fabs(ev[i] - ev0[i]) <= tol);
        CHECK(std::fabs(ov[i] - ov0[i]) <= tol / gap[i] + 1e-15);
      }
      // The same call handed the formed kernel takes the factor route too: the same bits.
      std::vector<double> ov2(k), ev2(k);
      REQUIRE(am_theory_alignment(nullptr, c.th, c.U.data(), c.K.data(), k, ov2.data(), ev2.data()) == AM_OK);
      CHECK(ov2 == ov);
      CHECK(ev2 == ev);
    }
  }
}

TEST_CASE("theory alignment: the whole kernel's route (k > r, r ≥ P, U_1 indefinite) is am_kernel_alignment's") {
  const auto same_as_whole = [](theory_case &c, const std::vector<double> &U, size_t k) {
    const size_t P = c.rp.P;
    std::vector<double> K(P * P), ov(k), ev(k), ov0(k), ev0(k);
    REQUIRE(am_theory_kernel(nullptr, c.th, U.data(), K.data()) == AM_OK);
    REQUIRE(am_kernel_alignment(nullptr, K.data(), P, P, c.rp.y.data(), k, ov0.data(), ev0.data()) == AM_OK);
    REQUIRE(am_theory_alignment(nullptr, c.th, U.data(), nullptr, k, ov.data(), ev.data()) == AM_OK);
    CHECK(ov == ov0);  // the kernel built as am_theory_kernel builds it, then am_kernel_alignment: the same bits
    CHECK(ev == ev0);
    REQUIRE(am_theory_alignment(nullptr, c.th, U.data(), K.data(), k, ov.data(), ev.data()) == AM_OK);
    CHECK(ov == ov0);
    CHECK(ev == ev0);
  };
  theory_case narrow({2, 2}, 40, 5, 6);  // r = 20 < P = 40
  same_as_whole(narrow, narrow.U, 25);   // k > r: the null space's components come from the whole kernel
  std::vector<double> Uind = narrow.U;   // U_1 with a negative eigenvalue: no Cholesky factor
  const size_t H = narrow.rp.H;
  for (size_t i = 0; i < H; ++i) Uind[i + i * H] -= 1e3;
  same_as_whole(narrow, Uind, 5);
  theory_case wide({2, 2}, 15, 5, 7);  // r = 20 ≥ P = 15
  same_as_whole(wide, wide.U, 4);
}

TEST_CASE("theory alignment: bad arguments are refused with a message") {
  theory_case c({2}, 12, 3, 8);
  std::vector<double> ov(13), ev(13), Unan = c.U;
  CHECK(am_theory_alignment(nullptr, nullptr, c.U.data(), nullptr, 2, ov.data(), ev.data()) == AM_ERR_INVALID_ARGUMENT);
  CHECK(am_theory_alignment(nullptr, c.th, nullptr, nullptr, 2, ov.data(), ev.data()) == AM_ERR_INVALID_ARGUMENT);
  CHECK(am_theory_alignment(nullptr, c.th, c.U.data(), nullptr, 13, ov.data(), ev.data()) == AM_ERR_SHAPE);
  Unan[0] = NAN;
  CHECK(am_theory_alignment(nullptr, c.th, Unan.data(), nullptr, 2, ov.data(), ev.data()) == AM_ERR_NONFINITE);
  CHECK(am_theory_alignment(nullptr, c.th, c.U.data(), nullptr, 0, nullptr, nullptr) == AM_ERR_INVALID_ARGUMENT);
  CHECK(am_theory_alignment(nullptr, c.th, c.U.data(), nullptr, 2, ov.data(), nullptr) == AM_OK);  // eigenvalues optional
}
