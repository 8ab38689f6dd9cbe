// potts_core — run-time choice of the Potts kernels (compiled for the baseline ISA) and the scalar fallback.
#include <attnmech/version.h>  // am_simd_level
#include "simd/vec.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <xsimd/config/xsimd_config.hpp>
#include <xsimd/config/xsimd_cpuid.hpp>

namespace am::potts::simd {

#ifndef POTTS_HAVE_SSE2_KERNELS
const Kernels *sse2_kernels() { return nullptr; }
#endif
#ifndef POTTS_HAVE_AVX2_KERNELS
const Kernels *avx2_kernels() { return nullptr; }
#endif
#ifndef POTTS_HAVE_AVX512_KERNELS
const Kernels *avx512_kernels() { return nullptr; }
#endif

namespace {

double exp_shift_sum_scalar(double *x, std::size_t n, double shift) {
  double s = 0.0;
  for (std::size_t k = 0; k < n; ++k) s += (x[k] = std::exp(x[k] - shift));
  return s;
}
void exp_inplace_scalar(double *x, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) x[k] = std::exp(x[k]);
}
void log_inplace_scalar(double *x, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) x[k] = std::log(x[k]);
}
void axpy_scalar(std::size_t n, double a, const double *x, double *y) {
  for (std::size_t k = 0; k < n; ++k) y[k] = std::fma(a, x[k], y[k]);
}
void rank1_rows_scalar(std::size_t rows, std::size_t n, const double *w, const double *x, double *Y, std::size_t ld) {
  for (std::size_t j = 0; j < rows; ++j)
    if (w[j] != 0.0) axpy_scalar(n, w[j], x, Y + j * ld);
}
void gather_rows_scalar(const double *base, const int *offs, std::size_t count, std::size_t n, double *acc) {
  for (std::size_t k = 0; k < count; ++k)
    for (std::size_t a = 0; a < n; ++a) acc[a] += base[offs[k] + a];
}
void scatter_rows_scalar(double *base, const int *offs, std::size_t count, std::size_t n, const double *r) {
  for (std::size_t k = 0; k < count; ++k)
    for (std::size_t a = 0; a < n; ++a) base[offs[k] + a] += r[a];
}
void gather_diff_scalar(const double *base, const int *from, const int *to, std::size_t count, std::size_t n,
                        double *acc) {
  for (std::size_t k = 0; k < count; ++k)
    for (std::size_t a = 0; a < n; ++a) acc[a] += base[to[k] + a] - base[from[k] + a];
}
void scatter_diff_scalar(double *base, const int *from, const int *to, std::size_t count, std::size_t n,
                         const double *p) {
  for (std::size_t k = 0; k < count; ++k)
    for (std::size_t a = 0; a < n; ++a) {
      base[from[k] + a] += p[a];
      base[to[k] + a] -= p[a];
    }
}
const Kernels kScalar{"scalar",           1,           &exp_shift_sum_scalar, &exp_inplace_scalar,
                      &log_inplace_scalar, &axpy_scalar, &rank1_rows_scalar,    &gather_rows_scalar,
                      &scatter_rows_scalar, &gather_diff_scalar,   &scatter_diff_scalar};

const Kernels *choose() {
  const Kernels *cands[4];
  std::size_t n = 0;
  cands[n++] = &kScalar;
#if defined(__x86_64__) || defined(__i386__)
  const auto cpu = xsimd::available_architectures();
  if (cpu.sse2 && sse2_kernels()) cands[n++] = sse2_kernels();
  if (cpu.fma3_avx2 && avx2_kernels()) cands[n++] = avx2_kernels();
  if (cpu.avx512f && avx512_kernels()) cands[n++] = avx512_kernels();
#endif
  // The core's choice (am_simd_level: the CPU's best, or the level AM_SIMD names, checked there) decides for these
  // kernels too, so one process runs one level; the best this CPU has when the core's is not among them.
  const char *level = am_simd_level();
  for (std::size_t i = 0; i < n; ++i)
    if (level && std::strcmp(cands[i]->name, level) == 0) return cands[i];
  return cands[n - 1];
}

}  // namespace

const Kernels *scalar_kernels() { return &kScalar; }

const Kernels &kernels() {
  static const Kernels *k = choose();  // function-local: initialised once, thread-safe
  return *k;
}

}  // namespace am::potts::simd
