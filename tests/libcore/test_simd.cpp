// Each SIMD kernel against the scalar reference, on every instruction set this machine runs.
// Tolerance: the SIMD exp (xsimd) and the libm exp differ by at most a few ulp, and sums are
// re-associated across lanes: 1e-14 relative is a few hundred ulp of margin on values ≤ 1.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "simd/kernels.hpp"

TEST_CASE("simd: every available kernel table matches the scalar reference") {
  const auto &ref = am::simd::scalar_table();
  std::mt19937_64 g(7);
  auto u = [&] { return (double)(g() >> 11) * 0x1.0p-53 * 20.0 - 10.0; };
  MESSAGE("kernel tables on this machine: " << am::simd::table_count() << ", active: " << std::string(am::simd::active().name));
  CHECK(am::simd::table_count() >= 1);
  for (size_t t = 0; t < am::simd::table_count(); ++t) {
    const auto &k = am::simd::table_at(t);
    CAPTURE(k.name);
    for (size_t rows : {1, 2, 3, 7, 8, 9, 16, 31, 48, 65}) {
      const size_t cols = 5, lda = rows + 3;
      std::vector<double> a(lda * cols), b;
      for (auto &v : a) v = u();
      b = a;
      ref.softmax_columns(rows, cols, a.data(), lda);
      k.softmax_columns(rows, cols, b.data(), lda);
      for (size_t j = 0; j < cols; ++j)
        for (size_t i = 0; i < lda; ++i) CHECK(b[i + j * lda] == doctest::Approx(a[i + j * lda]).epsilon(1e-14));
    }
    for (size_t m : {1, 3, 8, 31, 33}) {
      for (size_t n : {1, 4, 16}) {
        const size_t kk = 31, lda = m + 1, ldb = kk + 2, ldc = m + 5;
        std::vector<double> A(lda * kk), B(ldb * n), C1(ldc * n, 0.0), C2(ldc * n, 0.0);
        for (auto &v : A) v = u();
        for (auto &v : B) v = u();
        ref.small_gemm(m, n, kk, A.data(), lda, B.data(), ldb, C1.data(), ldc);
        k.small_gemm(m, n, kk, A.data(), lda, B.data(), ldb, C2.data(), ldc);
        // fused multiply–adds round differently: bound by k·ε·Σ|a||b| ≈ 31 · 1e-16 · 31·100
        for (size_t i = 0; i < C1.size(); ++i) CHECK(C2[i] == doctest::Approx(C1[i]).epsilon(1e-12).scale(100.0));
      }
    }
  }
}

TEST_CASE("simd: softmax is stable for large logits and exact for constant columns") {
  for (size_t t = 0; t < am::simd::table_count(); ++t) {
    const auto &k = am::simd::table_at(t);
    CAPTURE(k.name);
    std::vector<double> a = {1000.0, 1000.0, 999.0, -1e300, 0, 0, 0, 0, 0, 0};
    k.softmax_columns(5, 2, a.data(), 5);
    const double e = std::exp(-1.0), z = 2 + e;
    CHECK(a[0] == doctest::Approx(1 / z).epsilon(1e-15));
    CHECK(a[2] == doctest::Approx(e / z).epsilon(1e-15));
    CHECK(a[3] == 0.0);
    for (int i = 5; i < 10; ++i) CHECK(a[i] == doctest::Approx(0.2).epsilon(1e-15));
  }
}

// A per-level CI run (AM_SIMD=<level> meson test --suite numerics) must test that level: the dispatcher takes the
// last table whose name starts with AM_SIMD and silently keeps the best one when none does (a level the CPU lacks,
// a typo), so the run would test the best table under another name. The library never prints; this says so.
TEST_CASE("simd: AM_SIMD, when set, picks that table") {
  const char *force = std::getenv("AM_SIMD");
  if (!force || !*force) return;
  const std::string want = force, got = am::simd::active().name;
  CHECK_MESSAGE(got.compare(0, want.size(), want) == 0,
                "AM_SIMD=" << want << " but the active kernel table is " << got << " (not available on this CPU?)");
}
