// attnmech — path kernels as BLAS products on ξ.
//
// With ξ stored P × N0 × H (column-major), two views of the same memory make every kernel one or
// two level-3 calls and no loop over features:
//   tall view  Ξ_t: (P·N0) × H      (row μ + P·i, column π)
//   wide view  Ξ_w: P × (N0·H)      (row μ, column i + N0·π)
// K_U(1,2) = Σ_i ξ1_i U ξ2_iᵀ = (Ξ1_t U)_w · Ξ2_wᵀ.  For the symmetric kernel and PD U = LLᵀ,
// K_U = (Ξ_t L)_w (Ξ_t L)_wᵀ — one TRMM-sized GEMM and one SYRK (half the flops of a GEMM).
#include <cmath>
#include <cstring>
#include <vector>

#include "attnmech/paths.h"
#include "abi.hpp"
#include "internal.hpp"
#include "linalg.hpp"

using am::la::vec;

namespace am {

// Z = Ξ_t · M (P·N0 × H), M is H×H (ld H).
void xi_times(size_t P, size_t N0, size_t H, const double *xi, const double *M, double *Z) {
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)(P * N0), (int)H, (int)H, 1.0, xi, (int)(P * N0), M,
              (int)H, 0.0, Z, (int)(P * N0));
}

// K = c · Z_w Z_wᵀ (full symmetric P×P).
void syrk_wide(size_t P, size_t N0, size_t H, double c, const double *Z, double *K, size_t ldk) {
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, (int)P, (int)(N0 * H), c, Z, (int)P, 0.0, K, (int)ldk);
  la::symmetrize_from_lower(K, P, ldk);
}

bool u_cholesky(const double *U, size_t H, std::vector<double> *L) {
  L->assign(U, U + H * H);
  if (!la::chol(L->data(), H, H)) return false;
  for (size_t j = 0; j < H; ++j)
    for (size_t i = 0; i < j; ++i) (*L)[i + j * H] = 0.0;
  return true;
}

void kernel_u_sym(size_t N0, size_t H, const double *U, size_t P, const double *xi, double *K, size_t ldk) {
  vec L;
  if (u_cholesky(U, H, &L)) {
    vec Z(P * N0 * H);
    xi_times(P, N0, H, xi, L.data(), Z.data());
    syrk_wide(P, N0, H, 1.0, Z.data(), K, ldk);
  } else {  // indefinite U (e.g. a Hessian direction): general product
    vec Z(P * N0 * H);
    xi_times(P, N0, H, xi, U, Z.data());
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)P, (int)P, (int)(N0 * H), 1.0, Z.data(), (int)P, xi,
                (int)P, 0.0, K, (int)ldk);
  }
}

}  // namespace am

extern "C" {

AM_API am_status am_kernel_u(am_context *ctx, size_t N0, size_t H, const double *U, size_t P1, const double *xi1,
                             size_t P2, const double *xi2, double *K, size_t ldk) {
  return am::guarded(ctx, [&]() -> am_status {
    if (!U || !xi1 || !xi2 || !K) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "NULL argument to am_kernel_u");
    if (N0 == 0 || H == 0 || P1 == 0 || P2 == 0) return am::fail(ctx, AM_ERR_SHAPE, "empty kernel dimensions");
    if (ldk < P1) return am::fail(ctx, AM_ERR_SHAPE, "ldk = %zu is smaller than P1 = %zu", ldk, P1);
    if (!am::all_finite(U, H * H)) return am::fail(ctx, AM_ERR_NONFINITE, "U has non-finite entries");
    if (xi1 == xi2 && P1 == P2) {
      am::kernel_u_sym(N0, H, U, P1, xi1, K, ldk);
    } else {
      vec Z(P1 * N0 * H);
      am::xi_times(P1, N0, H, xi1, U, Z.data());
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)P1, (int)P2, (int)(N0 * H), 1.0, Z.data(), (int)P1, xi2,
                  (int)P2, 0.0, K, (int)ldk);
    }
    return am::check_result(ctx, K, P1, P2, ldk, "the kernel");
  });
}

AM_API am_status am_kernel_u_diag(am_context *ctx, size_t N0, size_t H, const double *U, size_t P, const double *xi,
                                  double *kdiag) {
  return am::guarded(ctx, [&]() -> am_status {
    if (!U || !xi || !kdiag) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "NULL argument to am_kernel_u_diag");
    if (N0 == 0 || H == 0 || P == 0) return am::fail(ctx, AM_ERR_SHAPE, "empty kernel dimensions");
    vec Z(P * N0 * H);
    am::xi_times(P, N0, H, xi, U, Z.data());
    for (size_t mu = 0; mu < P; ++mu) kdiag[mu] = 0;
    for (size_t c = 0; c < N0 * H; ++c) {
      const double *z = Z.data() + c * P, *x = xi + c * P;
      for (size_t mu = 0; mu < P; ++mu) kdiag[mu] += z[mu] * x[mu];
    }
    return am::check_result(ctx, kdiag, P, 1, P, "the kernel's diagonal");
  });
}

AM_API am_status am_kernel_gp(am_context *ctx, const am_arch *arch_in, size_t N0, size_t P, const double *xi, double *K,
                              size_t ldk) {
  return am::guarded(ctx, [&]() -> am_status {
    am_arch copy;
    am_status st = am::arch_in(ctx, arch_in, &copy);
    if (st) return st;
    const am_arch *arch = &copy;
    if (!xi || !K) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "NULL argument to am_kernel_gp");
    if (N0 == 0 || P == 0) return am::fail(ctx, AM_ERR_SHAPE, "empty kernel dimensions");
    if (ldk < P) return am::fail(ctx, AM_ERR_SHAPE, "ldk = %zu is smaller than P = %zu", ldk, P);
    double c = arch->variances[arch->layers + 1];
    for (uint32_t l = 1; l <= arch->layers; ++l) c *= arch->variances[l];
    am::syrk_wide(P, N0, am_arch_paths(arch), c, xi, K, ldk);
    return am::check_result(ctx, K, P, P, ldk, "the GP kernel");
  });
}

AM_API am_status am_prekernel(am_context *ctx, size_t N0, size_t H, size_t P, const double *xi, size_t pi, size_t pj,
                              double *C, size_t ldc) {
  return am::guarded(ctx, [&]() -> am_status {
    if (!xi || !C) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "NULL argument to am_prekernel");
    if (N0 == 0 || P == 0) return am::fail(ctx, AM_ERR_SHAPE, "empty kernel dimensions");
    if (pi >= H || pj >= H) return am::fail(ctx, AM_ERR_SHAPE, "path index (%zu, %zu) outside [0, %zu)", pi, pj, H);
    if (ldc < P) return am::fail(ctx, AM_ERR_SHAPE, "ldc = %zu is smaller than P = %zu", ldc, P);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)P, (int)P, (int)N0, (double)H, xi + P * N0 * pi, (int)P,
                xi + P * N0 * pj, (int)P, 0.0, C, (int)ldc);
    return am::check_result(ctx, C, P, P, ldc, "the pre-kernel");
  });
}

}  // extern "C"
