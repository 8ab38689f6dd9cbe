// The SPD inverse from the Cholesky factor (spd.h) against closed forms, across the block recursion's sizes; the
// small SPD kernels of every SIMD variant this CPU runs (simd/spd_kernels.h) against the same closed forms, LAPACK's
// factor and explicit sums.
#include "simd/spd_kernels.h"
#include "spd.h"

#include <attnmech/rng.h>
#include <doctest/doctest.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
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
  // max over the lower triangle of |A_ij − (Q diag(lam) Qᵀ)_ij| (A: leading dimension lda)
  double lower_error(const std::vector<double> &A, size_t lda, const std::vector<double> &lam) const {
    double err = 0;
    for (size_t j = 0; j < n; ++j)
      for (size_t i = j; i < n; ++i) err = std::max(err, std::fabs(A[i + j * lda] - entry(lam, i, j)));
    return err;
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
    CHECK(sp.lower_error(A, lda, inv_lam) < 1e-9);
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

// ------------------------------------------------------------------ the small SPD kernels (simd/spd_kernels.h)
namespace {

namespace ps = am::posterior::simd;

// The variants this CPU can run: the scalar one (the LAPACK route) and each vector one built and supported.
std::vector<const ps::SpdKernels *> spd_variants() {
  std::vector<const ps::SpdKernels *> v;
  for (size_t i = 0; const ps::SpdKernels *k = ps::spd_variant(i); ++i) v.push_back(k);
  return v;
}

// The kernels' layout: lower triangle of A in an ld × n array whose upper triangle and padding rows are zero.
std::vector<double> padded_lower(const Spectral &sp, const std::vector<double> &lam, size_t ld) {
  std::vector<double> A(ld * sp.n, 0.0);
  for (size_t j = 0; j < sp.n; ++j)
    for (size_t i = j; i < sp.n; ++i) A[i + j * ld] = sp.entry(lam, i, j);
  return A;
}

}  // namespace

TEST_CASE("Small SPD kernels, every SIMD variant: factor = LAPACK's, inverse = Q diag(1/λ) Qᵀ, zeros kept") {
  // κ = 1000 as above. The inverse: forward error of order n κ ε (n ≤ 131: 1.5e-11), checked at 1e-9 (60×).
  // The factor: two backward-stable Cholesky factorisations of one matrix differ by at most of order
  // n κ ε ‖L‖ (Higham §10.1, the perturbation bound for the factor): 1.5e-11 · √λ_max ≈ 5e-10, checked at 1e-8.
  // The work space is shared by all sizes (zeroed once, as the kernels require), so its kept zeros are checked too.
  const auto variants = spd_variants();
  std::vector<double> work(ps::spd_work_size(131), 0.0);
  for (const ps::SpdKernels *kv : variants)
    for (size_t n : {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 31, 33, 64, 99, 100, 101, 131}) {
      const std::string variant = kv->name;
      CAPTURE(variant);
      CAPTURE(n);
      const size_t ld = ps::spd_padded(n) + (n % 2 ? 8 : 0);  // with and without rows beyond the padding
      const Spectral sp(n, 1900 + n);
      std::vector<double> lam(n), inv_lam(n);
      for (size_t k = 0; k < n; ++k) {
        lam[k] = n == 1 ? 7.0 : std::pow(1000.0, static_cast<double>(k) / static_cast<double>(n - 1));
        inv_lam[k] = 1.0 / lam[k];
      }
      std::vector<double> A = padded_lower(sp, lam, ld), R = A;
      REQUIRE(kv->cholesky(n, A.data(), ld) == 0);
      REQUIRE(LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', static_cast<int>(n), R.data(), static_cast<int>(ld)) == 0);
      double ferr = 0;
      for (size_t j = 0; j < n; ++j)
        for (size_t i = j; i < n; ++i) ferr = std::max(ferr, std::fabs(A[i + j * ld] - R[i + j * ld]));
      CHECK(ferr < 1e-8);
      kv->inverse(n, A.data(), ld, work.data());
      CHECK(sp.lower_error(A, ld, inv_lam) < 1e-9);
      bool zeros = true;
      for (size_t j = 0; j < n; ++j) {
        for (size_t i = 0; i < j; ++i) zeros = zeros && A[i + j * ld] == 0.0;
        for (size_t i = n; i < ld; ++i) zeros = zeros && A[i + j * ld] == 0.0;
      }
      CHECK(zeros);
    }
}

TEST_CASE("Small SPD kernels, every SIMD variant: a matrix that is not positive definite names its column") {
  // diag(1, 2, ..., n) with A_55 = −1: the first five pivots are 1..5, the sixth −1 (column 6, 1-based). A NaN at
  // (7, 3) reaches the pivot of row 7 (through L_73), an infinity on the diagonal its own pivot.
  for (const ps::SpdKernels *kv : spd_variants())
    for (size_t n : {9, 20, 100}) {
      const std::string variant = kv->name;
      CAPTURE(variant);
      CAPTURE(n);
      const size_t ld = ps::spd_padded(n);
      std::vector<double> D(ld * n, 0.0);
      for (size_t i = 0; i < n; ++i) D[i * (ld + 1)] = static_cast<double>(i + 1);
      std::vector<double> A = D;
      A[5 * (ld + 1)] = -1.0;
      CHECK(kv->cholesky(n, A.data(), ld) == 6);
      A = D;
      A[7 + 3 * ld] = std::numeric_limits<double>::quiet_NaN();
      CHECK(kv->cholesky(n, A.data(), ld) == 8);
      A = D;
      A[4 * (ld + 1)] = std::numeric_limits<double>::infinity();
      CHECK(kv->cholesky(n, A.data(), ld) == 5);
    }
}

TEST_CASE("Pair-kernel passes, every SIMD variant: K = Σ u_k S_k + d I and ½⟨a aᵀ − M, S_k⟩ by explicit sums") {
  // Each entry is a sum of N products (N = pairs, or the n(n+1)/2 entries of a triangle): any summation order is
  // within N ε Σ|terms| of the exact sum (Higham §3.1); checked at (N + 4) ε Σ|terms|.
  const double eps = std::numeric_limits<double>::epsilon();
  for (const ps::SpdKernels *kv : spd_variants())
    for (size_t n : {1, 5, 17, 100})
      for (size_t pairs : {1, 3, 10, 13}) {
        const std::string variant = kv->name;
      CAPTURE(variant);
        CAPTURE(n);
        CAPTURE(pairs);
        const size_t np = n * (n + 1) / 2, ld = ps::spd_padded(n);
        am_rng r;
        am_rng_init(&r, 77 + n, pairs);
        std::vector<double> S(np * pairs), u(pairs), a(n), M(ld * n, 0.0), K(ld * n, 0.0), g(pairs);
        for (double &v : S) v = am_rng_normal(&r);
        for (double &v : u) v = am_rng_normal(&r);
        for (double &v : a) v = am_rng_normal(&r);
        for (size_t j = 0; j < n; ++j)
          for (size_t i = j; i < n; ++i) M[i + j * ld] = am_rng_normal(&r);
        kv->combine(n, pairs, S.data(), u.data(), 0.25, K.data(), ld);
        kv->traces(n, pairs, S.data(), a.data(), M.data(), ld, g.data());
        bool combine_ok = true, upper_untouched = true;
        for (size_t j = 0, p = 0; j < n; ++j)
          for (size_t i = 0; i < n; ++i) {
            if (i < j) {
              upper_untouched = upper_untouched && K[i + j * ld] == 0.0;
              continue;
            }
            double s = i == j ? 0.25 : 0.0, mag = std::fabs(s);
            for (size_t k = 0; k < pairs; ++k) {
              s += u[k] * S[k * np + p];
              mag += std::fabs(u[k] * S[k * np + p]);
            }
            combine_ok = combine_ok && std::fabs(K[i + j * ld] - s) <= (pairs + 4) * eps * mag;
            ++p;
          }
        CHECK(combine_ok);
        CHECK(upper_untouched);
        for (size_t k = 0; k < pairs; ++k) {
          double s = 0, mag = 0;
          for (size_t j = 0, p = 0; j < n; ++j)
            for (size_t i = j; i < n; ++i, ++p) {
              const double t = (i == j ? 0.5 : 1.0) * (a[i] * a[j] - M[i + j * ld]) * S[k * np + p];
              s += t;
              mag += std::fabs(t);
            }
          CHECK(std::fabs(g[k] - s) <= (np + 4) * eps * mag);
        }
      }
}
