// attnmech posterior — SPD inverse from the Cholesky factor by level-3 recursions (see spd.h).
#include "spd.h"

#include <cblas.h>

namespace am::posterior {

namespace {
const size_t kBase = 16;  // blocks of at most this many columns use the loops below
inline int I(size_t n) { return static_cast<int>(n); }

// L⁻¹ in place, column by column: with t = L(j+1:, j) x_j, x_k = −t_k / L_kk for k = j+1.. (t accumulates the
// columns of L as the x_k become known).
void triangular_inverse_small(size_t n, double *A, size_t lda) {
  double t[kBase];
  for (size_t j = 0; j < n; ++j) A[j + j * lda] = 1.0 / A[j + j * lda];
  for (size_t j = 0; j < n; ++j) {
    double *x = A + j * lda;
    for (size_t i = j + 1; i < n; ++i) t[i] = x[i] * x[j];
    for (size_t k = j + 1; k < n; ++k) {
      const double xk = -A[k + k * lda] * t[k];
      x[k] = xk;
      const double *l = A + k * lda;
      for (size_t i = k + 1; i < n; ++i) t[i] += l[i] * xk;
    }
  }
}

// (Xᵀ X)_ij = Σ_{k ≥ i} X_ki X_kj for i ≥ j, in place: entry (i, j) reads columns i and j below row i, which
// are still X's when columns go left to right and rows top to bottom.
void gram_small(size_t n, double *A, size_t lda) {
  for (size_t j = 0; j < n; ++j)
    for (size_t i = j; i < n; ++i) {
      const double *a = A + i * lda, *b = A + j * lda;
      double s = 0;
      for (size_t k = i; k < n; ++k) s += a[k] * b[k];
      A[i + j * lda] = s;
    }
}
}  // namespace

void lower_triangular_inverse(size_t n, double *A, size_t lda) {
  if (n <= kBase) {
    triangular_inverse_small(n, A, lda);
    return;
  }
  const size_t n1 = n / 2, n2 = n - n1;
  double *A11 = A, *A21 = A + n1, *A22 = A + n1 + n1 * lda;
  lower_triangular_inverse(n1, A11, lda);
  lower_triangular_inverse(n2, A22, lda);
  // B ← −C⁻¹ B A⁻¹ with A⁻¹, C⁻¹ now in place
  cblas_dtrmm(CblasColMajor, CblasRight, CblasLower, CblasNoTrans, CblasNonUnit, I(n2), I(n1), -1.0, A11, I(lda), A21,
              I(lda));
  cblas_dtrmm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, I(n2), I(n1), 1.0, A22, I(lda), A21,
              I(lda));
}

void lower_gram_of_triangle(size_t n, double *A, size_t lda) {
  if (n <= kBase) {
    gram_small(n, A, lda);
    return;
  }
  const size_t n1 = n / 2, n2 = n - n1;
  double *A11 = A, *A21 = A + n1, *A22 = A + n1 + n1 * lda;
  lower_gram_of_triangle(n1, A11, lda);  // A'ᵀA'
  cblas_dsyrk(CblasColMajor, CblasLower, CblasTrans, I(n1), I(n2), 1.0, A21, I(lda), 1.0, A11, I(lda));  // + B'ᵀB'
  cblas_dtrmm(CblasColMajor, CblasLeft, CblasLower, CblasTrans, CblasNonUnit, I(n2), I(n1), 1.0, A22, I(lda), A21,
              I(lda));  // C'ᵀB'
  lower_gram_of_triangle(n2, A22, lda);
}

void spd_inverse_from_cholesky(size_t n, double *A, size_t lda) {
  lower_triangular_inverse(n, A, lda);
  lower_gram_of_triangle(n, A, lda);
}

}  // namespace am::posterior
