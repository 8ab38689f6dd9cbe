// attnmech — the kernel–task alignment of K_U from the kernel's factor (am_theory_alignment, theory.h).
//
// K_U = Z Zᵀ with Z = Ξ_t·L viewed wide (P × r, r = N0·H; U1 = L Lᵀ; kernels.cpp). The thin QR Z = Q R
// (Householder, dgeqrf) gives K_U = Q (R Rᵀ) Qᵀ with Q's r columns orthonormal: the nonzero eigenvalues of K_U are
// those of the r×r matrix R Rᵀ, and its eigenvectors are v = Q w for the eigenvectors w of R Rᵀ, so
// v·y = w·(Qᵀy). Q is never formed, nor any eigenvector of length P. dgeqrf costs 2Pr² − 2r³/3 flops, mostly
// level 3; dsyevr on the whole kernel costs 4P³/3 for the tridiagonal reduction alone, half of it level 2. At
// P = 8000, r = 924 that is about 50× fewer flops.
// Accuracy: Householder QR is backward stable (Q R = Z + δZ with ‖δZ‖ ≈ ε‖Z‖), so R Rᵀ represents K_U up to
// O(ε·λ_max), the same backward error as dsyevr applied to the formed kernel: the eigenvalues agree within a few
// ε·λ_max and the eigenvectors (hence the overlaps) within ε·λ_max divided by the eigenvalue's gap.
#include <cmath>
#include <string>
#include <vector>

#include "attnmech/metrics.h"
#include "attnmech/theory.h"
#include "abi.hpp"
#include "internal.hpp"
#include "linalg.hpp"
#include "theory.hpp"

using am::la::vec;

namespace {

// B = R Rᵀ (r×r, full) for the thin QR of Z = Ξ_t·L, and qy = Qᵀy (its first r entries are the ones that count).
am_status factor_qr(am_context *ctx, const am_theory &th, const vec &L, vec *B, vec *qy) {
  const size_t P = th.P, r = th.N0 * th.H;
  vec Z(P * r), tau(r);
  am::xi_times(P, th.N0, th.H, th.xi, L.data(), Z.data());
  if (LAPACKE_dgeqrf(LAPACK_COL_MAJOR, (lapack_int)P, (lapack_int)r, Z.data(), (lapack_int)P, tau.data()) != 0)
    return am::fail(ctx, AM_ERR_INTERNAL, "dgeqrf failed on the kernel's factor (%zu × %zu)", P, r);
  qy->assign(th.y, th.y + th.P);
  if (LAPACKE_dormqr(LAPACK_COL_MAJOR, 'L', 'T', (lapack_int)P, 1, (lapack_int)r, Z.data(), (lapack_int)P,
                     tau.data(), qy->data(), (lapack_int)P) != 0)
    return am::fail(ctx, AM_ERR_INTERNAL, "dormqr failed on the kernel's factor (%zu × %zu)", P, r);
  B->assign(r * r, 0.0);  // R (the upper triangle of Z's first r rows), then R·Rᵀ in place
  for (size_t j = 0; j < r; ++j)
    for (size_t i = 0; i <= j; ++i) (*B)[i + j * r] = Z[i + j * P];
  cblas_dtrmm(CblasColMajor, CblasRight, CblasUpper, CblasTrans, CblasNonUnit, (int)r, (int)r, 1.0, Z.data(), (int)P,
              B->data(), (int)r);
  return AM_OK;
}

// The factor route (k ≤ r < P): the k leading eigenpairs of R Rᵀ, dsyevr with an index range (dsyevd on a fresh
// R Rᵀ if it fails), and the overlaps w·(Qᵀy)/|y|.
am_status from_factor(am_context *ctx, const am_theory &th, const vec &L, size_t k, double *overlaps,
                      double *eigenvalues) {
  const size_t r = th.N0 * th.H;
  vec B, qy, w(k), W(r * k);
  if (am_status st = factor_qr(ctx, th, L, &B, &qy)) return st;
  if (!am::all_finite(B.data(), B.size())) return am::fail(ctx, AM_ERR_NONFINITE, "the kernel has non-finite entries");
  if (!am::la::syevr_top(B.data(), r, r, k, w.data(), W.data())) {
    if (am_status st = factor_qr(ctx, th, L, &B, &qy)) return st;
    if (!am::la::syevd_top(B.data(), r, r, k, w.data(), W.data()))
      return am::fail(ctx, AM_ERR_INTERNAL, "dsyevr and dsyevd failed on the kernel's %zu × %zu factor product", r, r);
  }
  const double ny = cblas_dnrm2((int)th.P, th.y, 1);
  for (size_t i = 0; i < k; ++i) {
    const size_t c = k - 1 - i;  // eigenvalues ascending: the largest first
    overlaps[i] = ny > 0 ? std::fabs(cblas_ddot((int)r, W.data() + c * r, 1, qy.data(), 1)) / ny : 0.0;
    if (eigenvalues) eigenvalues[i] = w[c];
  }
  return AM_OK;
}

std::string what_of(const am_theory &th) {
  return am::format("the alignment of the theory's kernel (P = %zu, N0 = %zu, %zu path%s)", th.P, th.N0, th.H,
                    th.H == 1 ? "" : "s");
}

}  // namespace

extern "C" AM_API am_status am_theory_alignment(am_context *ctx, am_theory *th, const double *U1, const double *K,
                                                size_t k, double *overlaps, double *eigenvalues) {
  return am::guarded(ctx, [&]() -> am_status {
    if (!th) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "theory handle is NULL");
    if (!U1 || !overlaps) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "NULL argument to am_theory_alignment");
    const size_t P = th->P, H = th->H, r = th->N0 * th->H;
    if (k > P) return am::fail(ctx, AM_ERR_SHAPE, "asked for %zu principal components of a %zu×%zu kernel", k, P, P);
    if (k == 0) return AM_OK;
    if (!am::all_finite(U1, H * H)) return am::fail(ctx, AM_ERR_NONFINITE, "U_1 has non-finite entries");
    th->release_gamma();  // its memory goes to the alignment's work (the kernels come after the predictions)
    am::theory_sizes sz = am::theory_sizes_of(th->arch, (double)P, (double)th->N0);
    sz.k = (double)k;
    vec L;
    if (am::alignment_from_factor((double)P, (double)r, (double)k) && am::u_cholesky(U1, H, &L)) {
      if (am_status st = am::theory_memory_check(ctx, sz, am::kMemHandle | am::kMemAlignFactor, what_of(*th).c_str()))
        return st;
      return from_factor(ctx, *th, L, k, overlaps, eigenvalues);
    }
    if (K) return am_kernel_alignment(ctx, K, P, P, th->y, k, overlaps, eigenvalues);
    sz.extra_doubles = (double)P * (double)P;  // the kernel, built here, beside am_kernel_alignment's copy
    if (am_status st = am::theory_memory_check(ctx, sz, am::kMemHandle | am::kMemAlignment, what_of(*th).c_str()))
      return st;
    vec Kf(P * P);
    am::kernel_u_sym(th->N0, H, U1, P, th->xi, Kf.data(), P);
    if (am_status st = am::check_result(ctx, Kf.data(), P, P, P, "the kernel K_U")) return st;
    return am_kernel_alignment(ctx, Kf.data(), P, P, th->y, k, overlaps, eigenvalues);
  });
}
