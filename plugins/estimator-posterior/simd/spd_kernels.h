// attnmech posterior — register-blocked Cholesky factor and SPD inverse for the small matrices of the marginal
// model (P ≈ 100, one of each per gradient), where BLAS's packing and call overheads cost as much as the flops.
//
// One translation unit per ISA (xsimd 8.1, own compiler flags), chosen at run time by the core's SIMD level
// (am_simd_level, AM_SIMD=scalar|sse2|avx2|avx512) as the Potts kernels are. The scalar variant is the LAPACK route
// (dpotrf, then spd_inverse_from_cholesky of spd.h); the vector variants do the same three steps — the factor
// L Lᵀ = A (left-looking, panels of 8 columns), Y = L⁻ᵀ (upper triangular, left to right by panels of 8, in the work
// space), the lower triangle of A⁻¹ = Y Yᵀ — with every inner product in register tiles (8 rows × 4 columns on
// AVX2) that run down the rows of a column, in a fixed order: results differ between variants in the last bits,
// never between runs or thread counts.
//
// Layout (every variant): A is n × n, column-major, leading dimension lda; lda ≥ spd_padded(n) and the rows n ..
// spd_padded(n) − 1 of each column are zero, and so is the strict upper triangle; both stay so. Only the lower
// triangle is read or written.
#ifndef ATTNMECH_POSTERIOR_SIMD_SPD_KERNELS_H
#define ATTNMECH_POSTERIOR_SIMD_SPD_KERNELS_H

#include <cstddef>

namespace am::posterior::simd {

// n rounded up to a multiple of 8: the rows the kernels run over (their vector loops have no scalar tails).
inline std::size_t spd_padded(std::size_t n) { return (n + 7) / 8 * 8; }
// Doubles of work space inverse() needs at size n (where it builds L⁻ᵀ).
inline std::size_t spd_work_size(std::size_t n) { return spd_padded(n) * (n + 8); }

struct SpdKernels {
  const char *name;
  // The lower triangle of A becomes its Cholesky factor L. Returns 0, or j + 1 when the pivot of column j is not
  // positive and finite (A is not numerically positive definite; A is then partly overwritten).
  int (*cholesky)(std::size_t n, double *A, std::size_t lda);
  // Given L in the lower triangle, the lower triangle becomes that of (L Lᵀ)⁻¹ (work: spd_work_size(n) doubles).
  void (*inverse)(std::size_t n, double *A, std::size_t lda, double *work);
  // The marginal model's two passes over its pair kernels, without a packed copy of K or of Q: S holds `pairs`
  // packed lower triangles of n × n matrices (column j: rows j..n−1; n(n+1)/2 entries each, consecutive).
  // K's lower triangle (ld; the rest untouched) ← Σ_k u_k S_k + diag·I.
  void (*combine)(std::size_t n, std::size_t pairs, const double *S, const double *u, double diag, double *K,
                  std::size_t ld);
  // g_k ← Σ_{i ≥ j} w_ij Q_ij (S_k)_ij with Q = a aᵀ − M (M's lower triangle, ld), w = ½ on the diagonal and 1
  // below it: ½ ⟨Q, S_k⟩ for symmetric S_k.
  void (*traces)(std::size_t n, std::size_t pairs, const double *S, const double *a, const double *M, std::size_t ld,
                 double *g);
};

// The scalar passes (reference for the vector variants' tests).
void combine_scalar(std::size_t n, std::size_t pairs, const double *S, const double *u, double diag, double *K,
                    std::size_t ld);
void traces_scalar(std::size_t n, std::size_t pairs, const double *S, const double *a, const double *M, std::size_t ld,
                   double *g);

const SpdKernels &spd_kernels();  // the variant in use
// The i-th variant this CPU runs (0: scalar, then sse2, avx2, avx512 as built and supported); nullptr past the last.
const SpdKernels *spd_variant(std::size_t i);
const SpdKernels *spd_scalar_kernels();
const SpdKernels *spd_sse2_kernels();  // nullptr when not built
const SpdKernels *spd_avx2_kernels();
const SpdKernels *spd_avx512_kernels();

}  // namespace am::posterior::simd

#endif
