// attnmech — thin C++ wrappers over CBLAS/LAPACKE used inside libcore (column-major throughout).
#pragma once
#include <cblas.h>
#include <lapacke.h>
#include <cmath>
#include <cstddef>
#include <memory>
#include <vector>

namespace am::la {

using vec = std::vector<double>;

// Cholesky in place (lower). Returns false if the matrix is not numerically positive definite.
inline bool chol(double *A, std::size_t n, std::size_t lda) {
  if (n == 0) return true;
  return LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, A, (lapack_int)lda) == 0;
}
// log det from a lower Cholesky factor.
inline double chol_logdet(const double *L, std::size_t n, std::size_t ld) {
  double s = 0;
  for (std::size_t i = 0; i < n; ++i) s += std::log(L[i + i * ld]);
  return 2 * s;
}
// Solve A X = B given the lower Cholesky factor of A; B is n×nrhs (ldb), overwritten.
inline void chol_solve(const double *L, std::size_t n, std::size_t ld, double *B, std::size_t nrhs, std::size_t ldb) {
  if (n == 0 || nrhs == 0) return;
  LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', (lapack_int)n, (lapack_int)nrhs, L, (lapack_int)ld, B, (lapack_int)ldb);
}
// A⁻¹ from its lower Cholesky factor (in place, full symmetric result). Used only where the inverse
// itself is the wanted quantity (the entropy gradient is −U⁻¹), never to solve systems.
inline void chol_inverse(double *L, std::size_t n, std::size_t ld) {
  if (n == 0) return;
  LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', (lapack_int)n, L, (lapack_int)ld);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < j; ++i) L[i + j * ld] = L[j + i * ld];
}
// Copy the lower triangle onto the upper one.
inline void symmetrize_from_lower(double *A, std::size_t n, std::size_t ld) {
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < j; ++i) A[i + j * ld] = A[j + i * ld];
}
// Eigenvalues (ascending) of a symmetric matrix by dsyevd; A is destroyed (eigenvectors if vectors).
inline bool syevd(double *A, std::size_t n, std::size_t lda, double *w, bool vectors) {
  if (n == 0) return true;
  return LAPACKE_dsyevd(LAPACK_COL_MAJOR, vectors ? 'V' : 'N', 'L', (lapack_int)n, A, (lapack_int)lda, w) == 0;
}
// The k largest eigenpairs of a symmetric matrix (lower triangle of A, destroyed): eigenvalues ascending into
// w[0..k), their eigenvectors into the columns of Z (n × k, ld n). dsyevr with an index range computes only the
// k wanted vectors (dsyevd back-transforms all n). Its outputs are sized as LAPACK documents them, not from k:
// W holds N values (the routine uses it as workspace for all N), ISUPPZ 2·N, and Z gets N columns, because M —
// the number of eigenvalues found — is only bounded by N (a cluster of equal eigenvalues at the cut, e.g. the
// zero eigenvalues of a low-rank kernel, is where a bound from k would be wrong). Z's N columns are left
// uninitialised, so only the M columns dsyevr writes become resident: the call holds A plus ~M·N doubles, not
// three N×N matrices. Returns false if dsyevr fails or finds fewer than k values (A is then destroyed: the
// caller redoes the problem from its own copy with syevd_top).
// A matrix of max-norm below 2^-400 is first scaled by a power of two (exact) and the eigenvalues scaled back:
// dsyevr's index range, on a matrix it scales up itself (norm below √(safe min/ε) ≈ 1.5e-146), returns
// eigenvalues off by ~1e-10 of the norm (dsyevd and the whole-spectrum dsyevr keep ~1e-16).
inline int tiny_norm_shift(double *A, std::size_t n, std::size_t lda) {
  double amax = 0;
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = j; i < n; ++i) amax = std::fmax(amax, std::fabs(A[i + j * lda]));
  const int shift = amax > 0 && amax < 0x1p-400 ? -std::ilogb(amax) : 0;
  if (shift)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t i = j; i < n; ++i) A[i + j * lda] = std::ldexp(A[i + j * lda], shift);
  return shift;
}
inline bool syevr_top(double *A, std::size_t n, std::size_t lda, std::size_t k, double *w, double *Z) {
  if (n == 0 || k == 0) return true;
  if (k > n) return false;
  const int shift = tiny_norm_shift(A, n, lda);
  lapack_int m = 0;
  vec W(n);
  std::unique_ptr<double[]> Zfull(new double[n * n]);  // uninitialised: pages dsyevr does not write stay unmapped
  std::vector<lapack_int> support(2 * n);
  const lapack_int info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'I', 'L', (lapack_int)n, A, (lapack_int)lda, 0.0,
                                         0.0, (lapack_int)(n - k + 1), (lapack_int)n, 0.0, &m, W.data(),
                                         Zfull.get(), (lapack_int)n, support.data());
  if (info != 0 || m < (lapack_int)k || m > (lapack_int)n) return false;
  const std::size_t first = (std::size_t)m - k;  // M > k: the top k of the M found (ascending)
  for (std::size_t c = 0; c < k; ++c) {
    w[c] = std::ldexp(W[first + c], -shift);
    for (std::size_t i = 0; i < n; ++i) Z[i + c * n] = Zfull[i + (first + c) * n];
  }
  return true;
}
// syevr_top's answer from the whole spectrum by dsyevd (A destroyed: its eigenvectors; dsyevd's workspace is
// 1 + 6n + 2n² doubles): the fallback when dsyevr fails.
inline bool syevd_top(double *A, std::size_t n, std::size_t lda, std::size_t k, double *w, double *Z) {
  if (n == 0 || k == 0) return true;
  if (k > n) return false;
  const int shift = tiny_norm_shift(A, n, lda);
  vec W(n);
  if (!syevd(A, n, lda, W.data(), true)) return false;
  for (std::size_t c = 0; c < k; ++c) {
    w[c] = std::ldexp(W[n - k + c], -shift);
    for (std::size_t i = 0; i < n; ++i) Z[i + c * n] = A[i + (n - k + c) * lda];
  }
  return true;
}
inline double min_eig(const double *A, std::size_t n, std::size_t lda) {
  if (n == 0) return 0;
  vec B(n * n), w(n);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < n; ++i) B[i + j * n] = A[i + j * lda];
  if (!syevd(B.data(), n, n, w.data(), false)) return NAN;
  return w[0];
}

}  // namespace am::la
