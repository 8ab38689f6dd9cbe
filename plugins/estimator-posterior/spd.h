// attnmech posterior — the inverse of a symmetric positive definite matrix from its Cholesky factor, for the trace
// terms of the marginal model's gradient at the scalar SIMD level (simd/spd_kernels.cpp: the LAPACK route, the
// reference of the vector kernels), where it runs once per gradient at P ≈ 100.
//
// The same operation as LAPACK's dpotri (K⁻¹ = L⁻ᵀ L⁻¹: the triangular inverse, then the product of the inverse's
// transpose with itself), with both halves written as recursions on 2 × 2 blocks whose off-diagonal work is level-3
// BLAS (dtrmm, dsyrk), down to blocks of at most 16 columns done by plain loops. OpenBLAS's dtrtri runs its
// unblocked, level-2 kernel below 256 columns — three times slower than this at P = 100 (bench_posterior). With
// L = [A 0; B C] (A and C square):
//   L⁻¹ = [A⁻¹ 0; −C⁻¹ B A⁻¹  C⁻¹],        Xᵀ X = [A'ᵀA' + B'ᵀB'  ·; C'ᵀB'  C'ᵀC']  for X = [A' 0; B' C'].
// Only the lower triangle of A is read or written; the flops are those of dpotri (n³/3 multiply-adds).
#ifndef ATTNMECH_POSTERIOR_SPD_H
#define ATTNMECH_POSTERIOR_SPD_H

#include <cstddef>

namespace am::posterior {

// A (n × n, column-major, leading dimension lda) holds a lower-triangular factor L with a nonzero diagonal;
// on return its lower triangle holds that of (L Lᵀ)⁻¹.
void spd_inverse_from_cholesky(size_t n, double *A, size_t lda);

// The two halves, in place on the lower triangle: L ← L⁻¹, and X ← Xᵀ X (lower triangle of the product).
void lower_triangular_inverse(size_t n, double *A, size_t lda);
void lower_gram_of_triangle(size_t n, double *A, size_t lda);

}  // namespace am::posterior

#endif
