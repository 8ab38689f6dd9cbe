// attnmech posterior — run-time choice of the small SPD kernels (compiled for the baseline ISA) and the scalar
// variant, the LAPACK route.
#include <attnmech/version.h>  // am_simd_level

#include "simd/spd_kernels.h"
#include "spd.h"

#include <lapack.h>

#include <cmath>
#include <cstring>
#include <xsimd/config/xsimd_config.hpp>
#include <xsimd/config/xsimd_cpuid.hpp>

namespace am::posterior::simd {

#ifndef POSTERIOR_HAVE_SSE2_KERNELS
const SpdKernels *spd_sse2_kernels() { return nullptr; }
#endif
#ifndef POSTERIOR_HAVE_AVX2_KERNELS
const SpdKernels *spd_avx2_kernels() { return nullptr; }
#endif
#ifndef POSTERIOR_HAVE_AVX512_KERNELS
const SpdKernels *spd_avx512_kernels() { return nullptr; }
#endif

namespace {

// LAPACK's dpotrf called directly: LAPACKE's wrapper would scan the matrix for NaNs first, which the pivots'
// check here makes redundant (a NaN or infinity in the lower triangle reaches its row's pivot).
int cholesky_lapack(std::size_t n, double *A, std::size_t lda) {
  const lapack_int nn = static_cast<lapack_int>(n), ld = static_cast<lapack_int>(lda);
  lapack_int info = 0;
  LAPACK_dpotrf("L", &nn, A, &ld, &info);
  if (info > 0) return static_cast<int>(info);
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(A[i * (lda + 1)])) return static_cast<int>(i + 1);
  return 0;
}

void inverse_lapack(std::size_t n, double *A, std::size_t lda, double *) { spd_inverse_from_cholesky(n, A, lda); }

const SpdKernels kScalar{"scalar", &cholesky_lapack, &inverse_lapack, &combine_scalar, &traces_scalar};

const SpdKernels *choose() {
  // The core's level (the CPU's best, or the one AM_SIMD names) decides here too, so one process runs one level; the
  // best this CPU has when the core's is not among them.
  const char *level = am_simd_level();
  const SpdKernels *best = nullptr;
  for (std::size_t i = 0; const SpdKernels *k = spd_variant(i); ++i) {
    if (level && std::strcmp(k->name, level) == 0) return k;
    best = k;
  }
  return best;
}

}  // namespace

void combine_scalar(std::size_t n, std::size_t pairs, const double *S, const double *u, double diag, double *K,
                    std::size_t ld) {
  const std::size_t np = n * (n + 1) / 2;
  for (std::size_t j = 0, p = 0; j < n; p += n - j, ++j) {
    double *col = K + j * (ld + 1);
    for (std::size_t i = 0; i < n - j; ++i) {
      double s = 0;
      for (std::size_t k = 0; k < pairs; ++k) s += u[k] * S[k * np + p + i];
      col[i] = s;
    }
    col[0] += diag;
  }
}

void traces_scalar(std::size_t n, std::size_t pairs, const double *S, const double *a, const double *M, std::size_t ld,
                   double *g) {
  const std::size_t np = n * (n + 1) / 2;
  for (std::size_t k = 0; k < pairs; ++k) g[k] = 0;
  for (std::size_t j = 0, p = 0; j < n; p += n - j, ++j) {
    const double *m = M + j * (ld + 1);
    for (std::size_t i = 0; i < n - j; ++i) {
      const double q = (a[j + i] * a[j] - m[i]) * (i == 0 ? 0.5 : 1.0);
      for (std::size_t k = 0; k < pairs; ++k) g[k] += q * S[k * np + p + i];
    }
  }
}

const SpdKernels *spd_scalar_kernels() { return &kScalar; }

const SpdKernels *spd_variant(std::size_t i) {
  const SpdKernels *cands[4];
  std::size_t n = 0;
  cands[n++] = &kScalar;
#if defined(__x86_64__) || defined(__i386__)
  const auto cpu = xsimd::available_architectures();
  if (cpu.sse2 && spd_sse2_kernels()) cands[n++] = spd_sse2_kernels();
  if (cpu.fma3_avx2 && spd_avx2_kernels()) cands[n++] = spd_avx2_kernels();
  if (cpu.avx512f && spd_avx512_kernels()) cands[n++] = spd_avx512_kernels();
#endif
  return i < n ? cands[i] : nullptr;
}

const SpdKernels &spd_kernels() {
  static const SpdKernels *k = choose();  // initialised once, thread-safe
  return *k;
}

}  // namespace am::posterior::simd
