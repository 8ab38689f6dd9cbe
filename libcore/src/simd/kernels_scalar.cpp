// Scalar reference kernels: the definition the SIMD variants are tested against, and the fallback.
#include <cmath>
#include "simd/kernels.hpp"

namespace am::simd {
namespace {
void softmax_columns_scalar(std::size_t rows, std::size_t cols, double *a, std::size_t lda) {
  for (std::size_t j = 0; j < cols; ++j) {
    double *c = a + j * lda;
    double m = -INFINITY;
    for (std::size_t i = 0; i < rows; ++i) m = c[i] > m ? c[i] : m;
    double s = 0.0;
    for (std::size_t i = 0; i < rows; ++i) {
      c[i] = std::exp(c[i] - m);
      s += c[i];
    }
    for (std::size_t i = 0; i < rows; ++i) c[i] /= s;
  }
}
void small_gemm_scalar(std::size_t m, std::size_t n, std::size_t k, const double *A, std::size_t lda, const double *B,
                       std::size_t ldb, double *C, std::size_t ldc) {
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < m; ++i) {
      double acc = 0.0;
      for (std::size_t l = 0; l < k; ++l) acc += A[i + l * lda] * B[l + j * ldb];
      C[i + j * ldc] = acc;
    }
}
}  // namespace

const kernel_table &scalar_table() {
  static const kernel_table t{"scalar", &softmax_columns_scalar, &small_gemm_scalar};
  return t;
}
}  // namespace am::simd
