// attnmech — thin C++ wrappers over CBLAS/LAPACKE used inside libcore (column-major throughout).
#pragma once
#include <cblas.h>
#include <lapacke.h>
#include <cmath>
#include <cstddef>
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
// The k largest eigenpairs of a symmetric matrix (lower triangle of A, destroyed) by dsyevr with an index
// range: eigenvalues ascending into w[0..k), their eigenvectors into the columns of Z (n × k, ld n). Only the
// k wanted vectors are computed (dsyevd with vectors back-transforms all n).
inline bool syevr_top(double *A, std::size_t n, std::size_t lda, std::size_t k, double *w, double *Z) {
  if (n == 0 || k == 0) return true;
  lapack_int m = 0;
  std::vector<lapack_int> support(2 * k);
  const lapack_int info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'I', 'L', (lapack_int)n, A, (lapack_int)lda, 0.0,
                                         0.0, (lapack_int)(n - k + 1), (lapack_int)n, 0.0, &m, w, Z, (lapack_int)n,
                                         support.data());
  return info == 0 && m == (lapack_int)k;
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
