// attnmech — templated SIMD kernels; included by exactly one TU per ISA (internal linkage).
#pragma once
#include <xsimd/xsimd.hpp>
#include <cmath>
#include <cstddef>
#include "simd/kernels.hpp"

namespace {

template <class Arch>
void softmax_columns_impl(std::size_t rows, std::size_t cols, double *a, std::size_t lda) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  const std::size_t vend = rows - rows % W;
  for (std::size_t j = 0; j < cols; ++j) {
    double *c = a + j * lda;
    // max
    double m = -INFINITY;
    if (vend) {
      B vm = B::load_unaligned(c);
      for (std::size_t i = W; i < vend; i += W) vm = xsimd::max(vm, B::load_unaligned(c + i));
      alignas(64) double tmp[W];
      vm.store_aligned(tmp);
      for (std::size_t k = 0; k < W; ++k) m = tmp[k] > m ? tmp[k] : m;
    }
    for (std::size_t i = vend; i < rows; ++i) m = c[i] > m ? c[i] : m;
    // exp and sum
    const B bm(m);
    B vs(0.0);
    for (std::size_t i = 0; i < vend; i += W) {
      B e = xsimd::exp(B::load_unaligned(c + i) - bm);
      e.store_unaligned(c + i);
      vs += e;
    }
    double s = vend ? xsimd::hadd(vs) : 0.0;
    for (std::size_t i = vend; i < rows; ++i) {
      c[i] = std::exp(c[i] - m);
      s += c[i];
    }
    const double inv = 1.0 / s;
    const B binv(inv);
    for (std::size_t i = 0; i < vend; i += W) (B::load_unaligned(c + i) * binv).store_unaligned(c + i);
    for (std::size_t i = vend; i < rows; ++i) c[i] *= inv;
  }
}

template <class Arch>
void small_gemm_impl(std::size_t m, std::size_t n, std::size_t k, const double *A, std::size_t lda, const double *Bm,
                     std::size_t ldb, double *C, std::size_t ldc) {
  using B = xsimd::batch<double, Arch>;
  constexpr std::size_t W = B::size;
  const std::size_t vend = m - m % W;
  for (std::size_t j = 0; j < n; ++j) {
    double *c = C + j * ldc;
    const double *b = Bm + j * ldb;
    // vector part: 4 accumulators' worth of rows at a time would need more registers than sse2 has;
    // keep one column strip per pass, streaming over k.
    for (std::size_t i = 0; i < vend; i += W) {
      B acc(0.0);
      for (std::size_t l = 0; l < k; ++l) acc = xsimd::fma(B::load_unaligned(A + i + l * lda), B(b[l]), acc);
      acc.store_unaligned(c + i);
    }
    for (std::size_t i = vend; i < m; ++i) {
      double acc = 0.0;
      for (std::size_t l = 0; l < k; ++l) acc += A[i + l * lda] * b[l];
      c[i] = acc;
    }
  }
}

template <class Arch>
const am::simd::kernel_table &make_table(const char *name) {
  static const am::simd::kernel_table t{name, &softmax_columns_impl<Arch>, &small_gemm_impl<Arch>};
  return t;
}

}  // namespace
