// potts_core — vectorised element-wise kernels of the Potts code (exp for the softmaxes of the fit and of the
// Gibbs conditionals, axpy for the sampler's incremental local fields). One translation unit per ISA (xsimd 8.1,
// compiled with its own flags), chosen at run time by the CPU's capabilities (as libcore's kernels do), with a
// scalar fallback. AM_SIMD=scalar|sse2|avx2|avx512 forces a variant (the same variable libcore reads).
// Results may differ between variants in the last bits (exp), never between runs or thread counts.
#ifndef ATTNMECH_POTTS_SIMD_VEC_H
#define ATTNMECH_POTTS_SIMD_VEC_H

#include <cstddef>

namespace am::potts::simd {

struct Kernels {
  const char *name;
  std::size_t width;  // doubles per vector register (pad rows to a multiple of it to avoid scalar tails)
  // x[k] ← exp(x[k] − shift) for k < n; returns Σ_k of the new x (summed in a fixed order).
  double (*exp_shift_sum)(double *x, std::size_t n, double shift);
  // x[k] ← exp(x[k]) for k < n.
  void (*exp_inplace)(double *x, std::size_t n);
  // x[k] ← log(x[k]) for k < n.
  void (*log_inplace)(double *x, std::size_t n);
  // y[k] += a · x[k] for k < n.
  void (*axpy)(std::size_t n, double a, const double *x, double *y);
  // Rows j < rows of Y (row j at Y + j·ld, n values, n a multiple of width): Y_j += w[j] · x, rows with
  // w[j] = 0 skipped.
  void (*rank1_rows)(std::size_t rows, std::size_t n, const double *w, const double *x, double *Y, std::size_t ld);
  // Rows of width n (a multiple of width) at base + offs[k], k < count: acc += Σ_k row_k (added in k order).
  void (*gather_rows)(const double *base, const int *offs, std::size_t count, std::size_t n, double *acc);
  // The transpose: row_k += r for k < count (rows may repeat; each is updated in k order).
  void (*scatter_rows)(double *base, const int *offs, std::size_t count, std::size_t n, const double *r);
  // The changes between two such gathers: acc += Σ_k (row at base + to[k] − row at base + from[k]) ...
  void (*gather_diff)(const double *base, const int *from, const int *to, std::size_t count, std::size_t n,
                      double *acc);
  // ... and their transpose: row from[k] += p, row to[k] −= p (k in order).
  void (*scatter_diff)(double *base, const int *from, const int *to, std::size_t count, std::size_t n,
                       const double *p);
};

const Kernels &kernels();                 // the variant in use
const Kernels *scalar_kernels();
const Kernels *sse2_kernels();            // nullptr when not built
const Kernels *avx2_kernels();
const Kernels *avx512_kernels();

}  // namespace am::potts::simd
#endif
