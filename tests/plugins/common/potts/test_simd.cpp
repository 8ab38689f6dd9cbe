// Each Potts kernel set this CPU runs (common/potts/simd/vec.h: scalar, sse2, avx2+fma, avx512f) against the scalar
// set, as tests/libcore/test_simd.cpp does for libcore's tables; and AM_SIMD, when set, really picks its set (a
// per-level CI run, AM_SIMD=<level> meson test --suite numerics, must not test the best set under another name).
// Tolerances, from the operations (u = ε/2):
//   gathers, scatters and their differences: the same additions per element in the same order (vec.h: "in k
//   order"), lane by lane: the same bits;
//   axpy, rank-1 rows: y + a·x by a fused multiply-add (hardware FMA, or the scalar set's std::fma: the same bits)
//   or, where the ISA has none (sse2), a rounded product then a rounded sum: at most u·(|a·x| + |r₁| + |r₂|) apart
//   (one rounding of the product, one of each result);
//   exp, log: xsimd's against the C library's, each within a few ulp of the exact value: 4·u relative each side;
//   exp_shift_sum: those exps, summed lane-wise then across lanes instead of in order: n·u of the sum of n
//   positive terms each side on top.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <xsimd/config/xsimd_config.hpp>
#include <xsimd/config/xsimd_cpuid.hpp>

#include "simd/vec.h"

namespace {

using am::potts::simd::Kernels;
constexpr double u = DBL_EPSILON / 2;

std::vector<const Kernels *> available() {
  std::vector<const Kernels *> k{am::potts::simd::scalar_kernels()};
#if defined(__x86_64__) || defined(__i386__)
  const auto cpu = xsimd::available_architectures();
  if (cpu.sse2 && am::potts::simd::sse2_kernels()) k.push_back(am::potts::simd::sse2_kernels());
  if (cpu.fma3_avx2 && am::potts::simd::avx2_kernels()) k.push_back(am::potts::simd::avx2_kernels());
  if (cpu.avx512f && am::potts::simd::avx512_kernels()) k.push_back(am::potts::simd::avx512_kernels());
#endif
  return k;
}

struct Draw {
  std::mt19937_64 g{11};
  double unif(double lo, double hi) { return lo + (hi - lo) * double(g() >> 11) * 0x1.0p-53; }
};

}  // namespace

TEST_CASE("potts simd: AM_SIMD, when set, picks that kernel set") {
  const char *force = std::getenv("AM_SIMD");
  MESSAGE("Potts kernel sets on this machine: " << available().size() << ", in use: "
                                                << std::string(am::potts::simd::kernels().name));
  if (force && *force) {
    const std::string want = force, got = am::potts::simd::kernels().name;
    CHECK_MESSAGE(got.compare(0, want.size(), want) == 0,
                  "AM_SIMD=" << want << " but the kernels in use are " << got << " (not available on this CPU?)");
  }
}

TEST_CASE("potts simd: every available kernel set matches the scalar set") {
  const Kernels &ref = *am::potts::simd::scalar_kernels();
  Draw d;
  for (const Kernels *kp : available()) {
    const Kernels &k = *kp;
    const std::string name = k.name;
    CAPTURE(name);
    for (size_t n : {1, 2, 3, 7, 8, 9, 16, 21, 33, 64}) {
      CAPTURE(n);
      std::vector<double> a(n), b;
      for (auto &v : a) v = d.unif(-30.0, 5.0);
      b = a;
      ref.exp_inplace(a.data(), n);
      k.exp_inplace(b.data(), n);
      for (size_t i = 0; i < n; ++i) CHECK(std::fabs(b[i] - a[i]) <= 8 * u * a[i]);
      for (auto &v : a) v = d.unif(-30.0, 5.0);
      b = a;
      const double shift = 3.0;
      const double sa = ref.exp_shift_sum(a.data(), n, shift), sb = k.exp_shift_sum(b.data(), n, shift);
      for (size_t i = 0; i < n; ++i) CHECK(std::fabs(b[i] - a[i]) <= 8 * u * a[i]);
      CHECK(std::fabs(sb - sa) <= (8 + 2 * double(n)) * u * sa);
      for (auto &v : a) v = std::exp(d.unif(-690.0, 690.0));
      b = a;
      ref.log_inplace(a.data(), n);
      k.log_inplace(b.data(), n);
      for (size_t i = 0; i < n; ++i) CHECK(std::fabs(b[i] - a[i]) <= 8 * u * std::fabs(a[i]));
      std::vector<double> x(n), y(n), y2;
      for (auto &v : x) v = d.unif(-2.0, 2.0);
      for (auto &v : y) v = d.unif(-2.0, 2.0);
      y2 = y;
      const double al = d.unif(-3.0, 3.0);
      ref.axpy(n, al, x.data(), y.data());
      k.axpy(n, al, x.data(), y2.data());
      for (size_t i = 0; i < n; ++i)
        CHECK(std::fabs(y2[i] - y[i]) <= u * (std::fabs(al * x[i]) + std::fabs(y[i]) + std::fabs(y2[i])));
    }
    // row kernels: widths a multiple of the set's vector width, 1 to 9 registers (the fixed and the generic loops)
    for (size_t nv : {1, 2, 3, 8, 9}) {
      const size_t n = nv * k.width, rows = 5, ld = n + 2 * k.width;
      CAPTURE(n);
      std::vector<double> base(rows * ld), x(n), w = {0.5, 0.0, -1.25, 2.0, 1e-3};
      for (auto &v : base) v = d.unif(-1.0, 1.0);
      for (auto &v : x) v = d.unif(-1.0, 1.0);
      std::vector<double> Y1 = base, Y2 = base;
      ref.rank1_rows(rows, n, w.data(), x.data(), Y1.data(), ld);
      k.rank1_rows(rows, n, w.data(), x.data(), Y2.data(), ld);
      for (size_t j = 0; j < rows; ++j)
        for (size_t i = 0; i < n; ++i)
          CHECK(std::fabs(Y2[j * ld + i] - Y1[j * ld + i]) <=
                u * (std::fabs(w[j] * x[i]) + std::fabs(Y1[j * ld + i]) + std::fabs(Y2[j * ld + i])));
      const std::vector<int> offs = {int(2 * ld), 0, int(4 * ld), int(2 * ld)}, to = {int(ld), int(3 * ld), 0, int(ld)};
      std::vector<double> acc1(n, 0.25), acc2(n, 0.25);
      ref.gather_rows(base.data(), offs.data(), offs.size(), n, acc1.data());
      k.gather_rows(base.data(), offs.data(), offs.size(), n, acc2.data());
      CHECK(acc1 == acc2);
      ref.gather_diff(base.data(), offs.data(), to.data(), offs.size(), n, acc1.data());
      k.gather_diff(base.data(), offs.data(), to.data(), offs.size(), n, acc2.data());
      CHECK(acc1 == acc2);
      std::vector<double> B1 = base, B2 = base;
      ref.scatter_rows(B1.data(), offs.data(), offs.size(), n, x.data());
      k.scatter_rows(B2.data(), offs.data(), offs.size(), n, x.data());
      CHECK(B1 == B2);
      ref.scatter_diff(B1.data(), offs.data(), to.data(), offs.size(), n, x.data());
      k.scatter_diff(B2.data(), offs.data(), to.data(), offs.size(), n, x.data());
      CHECK(B1 == B2);
    }
  }
}
