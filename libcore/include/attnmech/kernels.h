/* attnmech — kernels from the path-transformed input ξ (paths.h, am_xi): the renormalised kernel K_U, its diagonal,
 * the GP kernel and one pre-kernel C^{ππ'}, each a BLAS product over ξ (libcore/src/kernels.cpp). Declared in
 * paths.h up to 3.5, which includes this header. */
#ifndef ATTNMECH_KERNELS_H
#define ATTNMECH_KERNELS_H

#include "paths.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Renormalised kernel K_U(1,2) = Σ_i ξ1_i U ξ2_iᵀ (P1 × P2, ldk >= P1); U is H×H (ld H).
 * When xi2 == xi1 and P2 == P1 the symmetric kernel is built (Cholesky of U + SYRK when U is PD). */
AM_API am_status am_kernel_u(am_context *ctx, size_t N0, size_t H, const double *U, size_t P1, const double *xi1,
                             size_t P2, const double *xi2, double *K, size_t ldk);
/* Diagonal only: k_μ = Σ_i ξ_iμ U ξ_iμᵀ for each of the P examples. */
AM_API am_status am_kernel_u_diag(am_context *ctx, size_t N0, size_t H, const double *U, size_t P, const double *xi,
                                  double *kdiag);
/* GP kernel K_GP = (s1⋯sL sa / H_tot) Σ_π C^{ππ} = K_U at U = s1⋯sL sa · I. */
AM_API am_status am_kernel_gp(am_context *ctx, const am_arch *arch, size_t N0, size_t P, const double *xi, double *K,
                              size_t ldk);
/* Pre-kernel C^{ππ'} = H_tot ξ_πᵀ ξ_π' restricted to one pair (P × P, ldc). */
AM_API am_status am_prekernel(am_context *ctx, size_t N0, size_t H, size_t P, const double *xi, size_t pi, size_t pj,
                              double *C, size_t ldc);

#ifdef __cplusplus
}
#endif
#endif
