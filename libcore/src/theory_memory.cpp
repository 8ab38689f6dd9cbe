// attnmech — the one memory estimate of the theory (see theory.hpp, am::theory_memory_check): the bytes the
// theory handle, its evaluations, the Newton solve, predictions, the kernel–task alignment and ξ will allocate,
// computed from the problem's sizes before anything is allocated, in doubles (the products cannot overflow).
#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#include "abi.hpp"
#include "internal.hpp"
#include "theory.hpp"

namespace am {

theory_sizes theory_sizes_of(const am_arch &arch, double P, double N0) {
  theory_sizes s;
  s.P = P;
  s.N0 = N0;
  s.H = 1;
  for (uint32_t l = 0; l < arch.layers; ++l) s.H *= arch.heads[l];
  double d = 1;  // D_l = H_l⋯H_L, from the last layer up
  for (uint32_t l = arch.layers; l >= 1; --l) {
    d *= arch.heads[l - 1];
    s.usize += d * d;
    s.vsize += d * (d + 1) / 2;
  }
  return s;
}

double theory_bytes(const theory_sizes &s, unsigned ops) {
  const double P = s.P, N0 = s.N0, H = s.H, u = s.usize, n = s.vsize, m1 = H * (H + 1) / 2;
  const double NH = N0 * H, PNH = P * NH;
  // With an engine the handle keeps no Γ, B̃ or P-sized directions: those terms are the engine's (engine_bytes).
  const double own = s.engine ? 0.0 : 1.0;
  double resident = s.extra_doubles, phase = 0;
  if (ops & kMemHandle) resident += PNH + P;  // ξ and y, copied into the handle
  if (ops & (kMemGradient | kMemHessian)) resident += own * PNH + NH;  // the handle's B̃ = L⁻¹Ξ, kept between calls
  if (ops & kMemHessian) resident += 2 * NH * NH;  // the handle's N0H × N0H Gram matrix and its Q blocks
  // One evaluation: Γ = K_U + T·I (P×P) and its Cholesky factor in place, ξ·L for the kernel, per-layer factors.
  const double value = own * (P * P + PNH + 2 * P) + H * H + 3 * u;
  if (ops & kMemValue) phase = std::max(phase, value);
  if (ops & kMemGradient) phase = std::max(phase, own * P * P + NH + 2 * u);
  // The H²×H² Gram of the Q blocks, the directions K[E]α (P × H², P × m1; with an engine their coefficients C and
  // MC, N0H × m1 each), their Gram
  if (ops & kMemHessian)
    phase = std::max(phase, own * (P * P + P * H * H + P * m1) + (1 - own) * 2 * NH * m1 + H * H * H * H + m1 * m1 +
                                n * n + 3 * u);
  if (ops & kMemNewton) resident += 3 * n * n + 4 * n + 2 * u;  // Hessian, damped copy, min-eig copy; x, g, δ
  if (ops & kMemPredict)  // the training Γ, the train × test kernel, ξ·U of the larger set (an engine: |L⁻¹k|²)
    phase = std::max(phase, own * (P * P + P * s.Pt + std::max(P, s.Pt) * NH) + s.Pt);
  // Alignment: a copy of the kernel, the k eigenvectors dsyevr writes and their copy, its W, ISUPPZ and workspace
  // (26P + 10P ints); dsyevd's fallback checks its own workspace when it is needed. The estimator holds the
  // renormalised and GP kernels (and the H path pre-kernels) meanwhile.
  const double align_dense = P * P + 2 * P * s.k + 40 * P;
  // From the factor (am_theory_alignment): Z = Ξ_t·L with its Householder vectors in place and τ, Qᵀy, R Rᵀ
  // (N0H²), dsyevr's k vectors of it and their copy, its W, ISUPPZ and workspace; L (H²).
  const double align_factor = PNH + NH + P + NH * NH + 2 * NH * s.k + 40 * NH + H * H;
  const double align = alignment_from_factor(P, NH, s.k) ? align_factor : align_dense;
  if (ops & kMemAlignment) phase = std::max(phase, align_dense);
  if (ops & kMemAlignFactor) phase = std::max(phase, align_factor);
  // Kernels: one P×P kernel at a time (the blocks the plots draw) beside the alignment, from the factor or from a
  // copy of that kernel; whole kernels to store (kernels=full) hold both kernels and the alignment's work, then the
  // GP kernel and the H path pre-kernels. An engine's are its own.
  if ((ops & kMemKernels) && !s.engine)
    phase = std::max(phase, s.store_kernels ? std::max(2 * P * P + (s.k > 0 ? align : 0), (1 + H) * P * P)
                                            : P * P + (s.k > 0 ? align : 0));
  if (ops & kMemXi) phase = std::max(phase, P * s.S * N0 + PNH + P);  // X as float64 and ξ (am_dataset_xi)
  return 8.0 * (resident + phase) + (s.engine ? s.engine_bytes : 0.0);
}

am_status theory_memory_check(am_context *ctx, const theory_sizes &s, unsigned ops, const char *what) {
  // BLAS and LAPACK take 32-bit dimensions: every one the theory passes must fit an int.
  const double m1 = s.H * (s.H + 1) / 2;
  const double dims[] = {s.P * s.N0, s.N0 * s.H, s.Pt * s.N0, s.H * s.H, s.N0 * s.N0, m1, s.vsize, s.P, s.Pt,
                         s.P * s.S};
  for (double d : dims)
    if (d > (double)INT_MAX)
      return fail(ctx, AM_ERR_NO_MEMORY, "%s: a matrix dimension of %.0f exceeds the 32-bit BLAS limit (%d)",
                  what, d, INT_MAX);
  const double bytes = theory_bytes(s, ops);
  // Beyond the address space no budget (AM_MEMORY_LIMIT included) can allow it, and size_t products overflow.
  if (!(bytes < 0x1p62))
    return fail(ctx, AM_ERR_NO_MEMORY, "%s needs %.3g bytes, more than the address space", what, bytes);
  return am_memory_check(ctx, bytes, what, nullptr);
}

}  // namespace am

namespace {

am_status memory_check(am_context *ctx, const am_arch *arch, size_t P, size_t N0, size_t Pt, size_t k,
                       int store_kernels, double extra_doubles, double engine_bytes, const char *what, double *bytes) {
  if (!arch) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_theory_memory_check: NULL arch");
  if (!(engine_bytes >= 0) || !std::isfinite(engine_bytes) || !(extra_doubles >= 0) || !std::isfinite(extra_doubles))
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_theory_memory_check: extra_doubles %g, engine_bytes %g (need "
                    "finite numbers >= 0)", extra_doubles, engine_bytes);
  am::theory_sizes s = am::theory_sizes_of(*arch, double(P), double(N0));
  s.Pt = double(Pt);
  s.k = double(k);
  s.store_kernels = store_kernels != 0;
  s.extra_doubles = extra_doubles;
  s.engine = engine_bytes > 0;
  s.engine_bytes = engine_bytes;
  const unsigned ops = am::kMemHandle | am::kMemValue | am::kMemGradient | am::kMemHessian | am::kMemNewton |
                       (s.Pt > 0 ? am::kMemPredict : 0u) | (s.k > 0 || s.store_kernels ? am::kMemKernels : 0u);
  if (bytes) *bytes = am::theory_bytes(s, ops);
  return am::theory_memory_check(ctx, s, ops, what ? what : "the run");
}

}  // namespace

extern "C" AM_API am_status am_theory_memory_check(am_context *ctx, const am_arch *arch, size_t P, size_t N0, size_t Pt,
                                                   size_t k, int store_kernels, double extra_doubles, const char *what) {
  return memory_check(ctx, arch, P, N0, Pt, k, store_kernels, extra_doubles, 0.0, what, nullptr);
}

extern "C" AM_API am_status am_theory_memory_check_engine(am_context *ctx, const am_arch *arch, size_t P, size_t N0,
                                                          size_t Pt, size_t k, int store_kernels, double extra_doubles,
                                                          double engine_bytes, const char *what, double *bytes) {
  if (bytes) *bytes = 0;
  return memory_check(ctx, arch, P, N0, Pt, k, store_kernels, extra_doubles, engine_bytes, what, bytes);
}
