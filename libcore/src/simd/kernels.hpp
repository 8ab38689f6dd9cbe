// attnmech — SIMD kernel tables (internal).
//
// Each instruction set has its own translation unit (kernels_<isa>.cpp) compiled with that ISA's
// flags, instantiating the templates of kernels_impl.hpp for one xsimd architecture; the scalar
// table (kernels_scalar.cpp) is the reference and the fallback. dispatch.cpp picks the best table the
// CPU supports at run time (xsimd::available_architectures), so shipped binaries never assume more
// than the baseline ISA (no -march=native).
#pragma once
#include <cstddef>

namespace am::simd {

struct kernel_table {
  const char *name;
  // Column softmax in place: every column j of the rows×cols matrix a (column-major, lda) becomes
  // exp(a_ij − max_i a_ij) / Σ_i exp(a_ij − max_i a_ij).
  void (*softmax_columns)(std::size_t rows, std::size_t cols, double *a, std::size_t lda);
  // C = A·B, all column-major: A m×k (lda), B k×n (ldb), C m×n (ldc). For the small products of
  // attention paths (m = S tokens, k = S, n ≤ a few dozen), where a BLAS call costs more than the work.
  void (*small_gemm)(std::size_t m, std::size_t n, std::size_t k, const double *A, std::size_t lda, const double *B,
                     std::size_t ldb, double *C, std::size_t ldc);
};

const kernel_table &scalar_table();
const kernel_table *sse2_table();    // nullptr if not built
const kernel_table *avx2_table();    // fma3<avx2>; nullptr if not built
const kernel_table *avx512_table();  // nullptr if not built

// Tables usable on this CPU, scalar first, best last.
std::size_t table_count();
const kernel_table &table_at(std::size_t i);
// The table used by the library (best available; AM_SIMD=scalar|sse2|avx2|avx512 in the environment
// forces a lower one, for testing and benchmarking).
const kernel_table &active();

}  // namespace am::simd
