// The SPD inverse from the Cholesky factor (spd.h) against closed forms, across the block recursion's sizes.
#include "spd.h"

#include <attnmech/rng.h>
#include <doctest/doctest.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace am::posterior;

namespace {

// A = Q diag(lam) Qᵀ (n × n, column-major) with Q a product of three Householder reflections of random vectors
// (exactly orthogonal in closed form), so A⁻¹ = Q diag(1/lam) Qᵀ is known without inverting anything.
struct Spectral {
  size_t n;
  std::vector<double> Q;
  Spectral(size_t n_, uint64_t seed) : n(n_), Q(n_ * n_, 0.0) {
    am_rng r;
    am_rng_init(&r, seed, 0);
    for (size_t i = 0; i < n; ++i) Q[i * (n + 1)] = 1.0;
    for (int k = 0; k < 3; ++k) {  // Q ← Q (I − 2 v vᵀ/vᵀv)
      std::vector<double> v(n), Qv(n, 0.0);
      double vv = 0;
      for (double &x : v) {
        x = am_rng_normal(&r);
        vv += x * x;
      }
      for (size_t j = 0; j < n; ++j)
        for (size_t i = 0; i < n; ++i) Qv[i] += Q[i + j * n] * v[j];
      for (size_t j = 0; j < n; ++j)
        for (size_t i = 0; i < n; ++i) Q[i + j * n] -= 2.0 * Qv[i] * v[j] / vv;
    }
  }
  double entry(const std::vector<double> &lam, size_t i, size_t j) const {
    double s = 0;
    for (size_t k = 0; k < n; ++k) s += Q[i + k * n] * lam[k] * Q[j + k * n];
    return s;
  }
};

}  // namespace

TEST_CASE("SPD inverse from the Cholesky factor equals Q diag(1/λ) Qᵀ at sizes across the recursion") {
  // Eigenvalues spread over [1, 1000] (condition number κ = 1000). The inverse from a Cholesky factor has a
  // forward error of order n κ ε (Higham, Accuracy and Stability, §14.2): n ≤ 131, κ = 1e3, ε = 1.1e-16 give
  // 1.5e-11; the bound allows 60× that, relative to the largest entry of A⁻¹ (= 1 at most).
  for (size_t n : {1, 2, 15, 16, 17, 33, 64, 100, 131}) {
    CAPTURE(n);
    const size_t lda = n + 3;  // a submatrix of a larger array: the padding rows must stay untouched
    const Spectral sp(n, 900 + n);
    std::vector<double> lam(n), inv_lam(n);
    for (size_t k = 0; k < n; ++k) {
      lam[k] = n == 1 ? 7.0 : std::pow(1000.0, static_cast<double>(k) / static_cast<double>(n - 1));
      inv_lam[k] = 1.0 / lam[k];
    }
    std::vector<double> A(lda * n, -5.0);  // -5: the padding and the upper triangle's marker
    for (size_t j = 0; j < n; ++j)
      for (size_t i = j; i < n; ++i) A[i + j * lda] = sp.entry(lam, i, j);
    REQUIRE(LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', static_cast<int>(n), A.data(), static_cast<int>(lda)) == 0);
    spd_inverse_from_cholesky(n, A.data(), lda);
    double err = 0;
    for (size_t j = 0; j < n; ++j)
      for (size_t i = j; i < n; ++i) err = std::max(err, std::fabs(A[i + j * lda] - sp.entry(inv_lam, i, j)));
    CHECK(err < 1e-9);
    bool untouched = true;
    for (size_t j = 0; j < n; ++j) {
      for (size_t i = 0; i < j; ++i) untouched = untouched && A[i + j * lda] == -5.0;  // upper triangle
      for (size_t i = n; i < lda; ++i) untouched = untouched && A[i + j * lda] == -5.0;
    }
    CHECK(untouched);
  }
}

TEST_CASE("Lower triangular inverse: L X = I; Gram of a triangle: Xᵀ X by explicit sums") {
  // L has diagonal in [1, 2] and off-diagonal entries of size 0.3/√n: well conditioned (κ < 10), so L X = I to
  // n κ ε < 1e-13 (n ≤ 77); the Gram's entries are sums of at most n products of entries ≤ 2, exact to 4 n ε
  // < 4e-14. Both bounds are checked with a 10× margin.
  for (size_t n : {3, 16, 17, 40, 77}) {
    CAPTURE(n);
    am_rng r;
    am_rng_init(&r, 950 + n, 0);
    std::vector<double> L(n * n, 0.0);
    for (size_t j = 0; j < n; ++j) {
      L[j * (n + 1)] = 1.0 + am_rng_uniform(&r);
      for (size_t i = j + 1; i < n; ++i) L[i + j * n] = 0.3 * am_rng_normal(&r) / std::sqrt(static_cast<double>(n));
    }
    std::vector<double> X = L;
    lower_triangular_inverse(n, X.data(), n);
    double err = 0;
    for (size_t j = 0; j < n; ++j)
      for (size_t i = 0; i < n; ++i) {
        double s = 0;
        for (size_t k = 0; k < n; ++k) s += L[i + k * n] * (k >= j ? X[k + j * n] : 0.0);  // X's lower triangle
        err = std::max(err, std::fabs(s - (i == j ? 1.0 : 0.0)));
      }
    CHECK(err < 1e-12);
    std::vector<double> G = L;
    lower_gram_of_triangle(n, G.data(), n);
    double gerr = 0;
    for (size_t j = 0; j < n; ++j)
      for (size_t i = j; i < n; ++i) {
        double s = 0;
        for (size_t k = i; k < n; ++k) s += L[k + i * n] * L[k + j * n];
        gerr = std::max(gerr, std::fabs(G[i + j * n] - s));
      }
    CHECK(gerr < 1e-12);
  }
}
