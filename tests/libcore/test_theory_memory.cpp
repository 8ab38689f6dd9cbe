// The theory's memory estimate (libcore/src/theory_memory.cpp): am_theory_create, _solve, am_kernel_alignment,
// am_dataset_xi and am_theory_memory_check refuse a problem that cannot fit before they allocate it — AM_ERR_NO_MEMORY
// with am_memory_check's message — and AM_MEMORY_LIMIT moves the budget both ways.
#include <cblas.h>
#include <doctest/doctest.h>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attnmech/attnmech.h"
#include "../memory_limit.hpp"
#include "../handles.hpp"  // am_test::Ctx
#include "random_problem.hpp"
#include "theory.hpp"

namespace {

using am_test::Ctx;
using am_test::Limit;
using am_test::peak_mb;
using am_test::peak_above;
using am_test::reset_peak;
using am_test::status_kib;

am_arch arch_with(std::vector<uint32_t> heads) {
  am_arch a;
  am_arch_default(&a);
  a.layers = (uint32_t)heads.size();
  for (size_t l = 0; l < heads.size(); ++l) a.heads[l] = heads[l];
  return a;
}

}  // namespace

TEST_CASE("theory memory: P = 10^6 is refused before allocating (8 TB kernel), with the machine's memory") {
  const Limit unset(nullptr);
  Ctx ctx;
  const size_t P = 1000000;
  std::vector<double> xi(P, 1.0), y(P, 1.0);  // 16 MB of inputs for an 8 TB P×P kernel
  const am_arch a = arch_with({1});
  const double before = peak_mb();
  am_theory *th = nullptr;
  CHECK(am_theory_create(ctx.c, &th, &a, P, 1, xi.data(), y.data(), 0.1) == AM_ERR_NO_MEMORY);
  CHECK(th == nullptr);
  // 8·P² = 8.0e12 bytes for Γ; the message is am_memory_check's, naming the problem
  CHECK(ctx.err().find("the theory (P = 1000000, N0 = 1, 1 path) needs 8000.0") != std::string::npos);
  CHECK(ctx.err().find("this machine has") != std::string::npos);
  CHECK(ctx.err().find("AM_MEMORY_LIMIT") != std::string::npos);
  CHECK(peak_mb() - before < 50);  // nothing of the refused size was touched (the inputs were already resident)
}

TEST_CASE("theory memory: AM_MEMORY_LIMIT refuses P = 5·10^4 at 1G and lets it be built at 1T") {
  Ctx ctx;
  const size_t P = 50000;
  std::vector<double> xi(P * 2, 0.5), y(P, 1.0);
  const am_arch a = arch_with({1});
  am_theory *th = nullptr;
  {
    const Limit l("1G");
    const double before = peak_mb();
    CHECK(am_theory_create(ctx.c, &th, &a, P, 2, xi.data(), y.data(), 0.1) == AM_ERR_NO_MEMORY);
    CHECK(ctx.err().find("needs 20.0 GB; AM_MEMORY_LIMIT allows 1.1 GB") != std::string::npos);
    CHECK(peak_mb() - before < 50);
  }
  {
    const Limit l("1T");  // the handle itself holds only ξ and y (1.2 MB): creating it allocates no P×P block
    const double before = peak_mb();
    REQUIRE(am_theory_create(ctx.c, &th, &a, P, 2, xi.data(), y.data(), 0.1) == AM_OK);
    CHECK(peak_mb() - before < 50);
    am_theory_destroy(&th);
  }
}

TEST_CASE("theory memory: the solve of 4096 paths is refused (vech Hessian of 8.4·10^6 coordinates)") {
  Ctx ctx;
  const am_arch a = arch_with({64, 64});
  const size_t P = 2, N0 = 1, H = 4096;
  std::vector<double> xi(P * N0 * H, 0.01), y{1.0, -1.0};
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(ctx.c, &th, &a, P, N0, xi.data(), y.data(), 0.1) == AM_OK);
  std::vector<double> U(am_theory_u_size(th));
  const double before = peak_mb();
  CHECK(am_theory_solve(ctx.c, th, nullptr, U.data(), nullptr) == AM_ERR_NO_MEMORY);
  CHECK(ctx.err().find("the theory (P = 2, N0 = 1, 4096 paths) needs") != std::string::npos);
  CHECK(peak_mb() - before < 50);
  am_theory_destroy(&th);
}

TEST_CASE("theory memory: alignment and ξ of a dataset check before allocating") {
  Ctx ctx;
  const Limit l("1M");
  // alignment of a 400×400 kernel: a copy (1.3 MB), its top vectors and LAPACK's workspace > 1 MB
  const size_t P = 400;
  std::vector<double> K(P * P, 0.0), y(P, 1.0), ov(10);
  for (size_t i = 0; i < P; ++i) K[i + i * P] = 1.0;
  CHECK(am_kernel_alignment(ctx.c, K.data(), P, P, y.data(), 10, ov.data(), nullptr) == AM_ERR_NO_MEMORY);
  CHECK(ctx.err().find("the alignment of a 400×400 kernel needs") != std::string::npos);
  // a dataset of 10^5 examples: ξ (and X as float64) are refused before they are made
  am_record *ds = nullptr;
  REQUIRE(am_record_create(&ds) == AM_OK);
  std::vector<double> X(100000, 1.0), W{0.5}, Y(100000, 1.0), ones{1, 1, 1};
  am_array_view v;
  std::memset(&v, 0, sizeof v);
  v.dtype = AM_F64;
  v.ndim = 3;
  v.shape[0] = 100000, v.shape[1] = 1, v.shape[2] = 1;
  v.data = X.data();
  am_record_set_string(ds, "kind", "attention");
  am_record_set_array(ds, "X_train", &v);
  am_record_set_vector(ds, "y_train", Y.data(), Y.size());
  am_record_set_vector(ds, "heads", ones.data(), 1);
  am_record_set_vector(ds, "widths", ones.data(), 2);
  am_record_set_vector(ds, "variances", ones.data(), 3);
  am_record_set_number(ds, "temperature", 0.1);
  am_record_set_string(ds, "readout", "last");
  v.ndim = 2, v.shape[0] = 1, v.shape[1] = 1, v.data = W.data();
  am_record_set_array(am_record_object(ds, "attention"), "l1_h1", &v);
  double *xi = nullptr, *yy = nullptr;
  size_t Pn = 0, N0 = 0;
  CHECK(am_dataset_xi(ctx.c, ds, "train", &xi, &Pn, &N0, &yy) == AM_ERR_NO_MEMORY);
  CHECK(ctx.err().find("ξ of 'X_train' (P = 100000, S = 1, N0 = 1, 1 path) needs") != std::string::npos);
  {  // a whole run's check: room for ξ (64 MB) but not for the 10^5 × 10^5 kernels of the alignment
    const Limit room("64M");
    const am_arch a = arch_with({1});
    CHECK(am_theory_memory_check(ctx.c, &a, 100000, 1, 0, 30, 0, 1e5, "the run") == AM_ERR_NO_MEMORY);
    CHECK(ctx.err().find("the run needs") != std::string::npos);
    CHECK(am_theory_memory_check(ctx.c, &a, 100, 1, 0, 0, 0, 0, "a small run") == AM_OK);
  }
  // the estimator calling it: tests/plugins/common/attention/test_estimate.cpp
  am_record_destroy(&ds);
}

TEST_CASE("theory memory: dimensions beyond 32-bit BLAS are refused even when the budget allows") {
  Ctx ctx;
  const Limit l("1000000T");
  // P·N0 = 3·10^9 > INT_MAX: refused before any copy of the (here deliberately tiny, never read) inputs
  const am_arch a = arch_with({1});
  double dummy = 0;
  am_theory *th = nullptr;
  CHECK(am_theory_create(ctx.c, &th, &a, 3000000, 1000, &dummy, &dummy, 0.1) == AM_ERR_NO_MEMORY);
  CHECK(ctx.err().find("exceeds the 32-bit BLAS limit") != std::string::npos);
}

TEST_CASE("theory memory: with an engine the check counts the engine's bytes, not the handle's P×P matrices") {
  Ctx ctx;
  const Limit l("1000000T");
  const am_arch a = arch_with({2, 2});
  const size_t P = 20000, N0 = 50, Pt = 1000;
  double serial = 0, with_engine = 0, engine2 = 0;
  // engine_bytes = 0 is am_theory_memory_check: the same verdict, and *bytes is its estimate (the model's terms)
  REQUIRE(am_theory_memory_check_engine(ctx.c, &a, P, N0, Pt, 30, 0, 1e6, 0.0, "x", &serial) == AM_OK);
  am::theory_sizes sz = am::theory_sizes_of(a, double(P), double(N0));
  sz.Pt = double(Pt), sz.k = 30, sz.extra_doubles = 1e6;
  const unsigned all = am::kMemHandle | am::kMemValue | am::kMemGradient | am::kMemHessian | am::kMemNewton |
                       am::kMemPredict | am::kMemKernels;
  CHECK(serial == am::theory_bytes(sz, all));
  // An engine holding B bytes: the estimate moves by exactly B − B' between two engines, and the handle's own part
  // (its copy of ξ and y, the N0·H-square arrays, the Newton matrices) is what is left: far below one P×P matrix.
  REQUIRE(am_theory_memory_check_engine(ctx.c, &a, P, N0, Pt, 30, 0, 1e6, 1e9, "x", &with_engine) == AM_OK);
  REQUIRE(am_theory_memory_check_engine(ctx.c, &a, P, N0, Pt, 30, 0, 1e6, 3e9, "x", &engine2) == AM_OK);
  CHECK(engine2 - with_engine == doctest::Approx(2e9).epsilon(1e-12));
  const double own = with_engine - 1e9, NH = double(N0) * 4;
  CHECK(own >= 8 * (double(P) * NH + 1e6));  // at least ξ's copy and the caller's doubles
  CHECK(own < 8 * (double(P) * NH + 1e6 + 4 * NH * NH + double(Pt) + 1e5));
  CHECK(serial - own > 8.0 * double(P) * double(P));  // the handle's P×P Γ and the kernels are not counted
  {  // the budget: the engine's bytes decide
    const Limit room("2G");
    CHECK(am_theory_memory_check_engine(ctx.c, &a, P, N0, Pt, 30, 0, 1e6, 1e9, "the share", nullptr) == AM_OK);
    CHECK(am_theory_memory_check_engine(ctx.c, &a, P, N0, Pt, 30, 0, 1e6, 3e9, "the share", &engine2) ==
          AM_ERR_NO_MEMORY);
    CHECK(ctx.err().find("the share needs") != std::string::npos);
    CHECK(engine2 > 3e9);  // *bytes is set when the check fails too
    CHECK(am_theory_memory_check(ctx.c, &a, P, N0, Pt, 30, 0, 1e6, "serial") == AM_ERR_NO_MEMORY);
  }
  CHECK(am_theory_memory_check_engine(ctx.c, &a, P, N0, Pt, 30, 0, 1e6, -1.0, "x", nullptr) == AM_ERR_INVALID_ARGUMENT);
  CHECK(am_theory_memory_check_engine(ctx.c, &a, P, N0, Pt, 30, 0, 1e6, NAN, "x", nullptr) == AM_ERR_INVALID_ARGUMENT);
  CHECK(am_theory_memory_check_engine(ctx.c, nullptr, P, N0, Pt, 30, 0, 0, 1.0, "x", nullptr) == AM_ERR_INVALID_ARGUMENT);
}

// The model's terms against what the allocations make resident: the peak RSS (VmHWM, reset through clear_refs)
// above the RSS before one operation, measured in this process. Large blocks are mmapped fresh (M_MMAP_THRESHOLD
// pinned at 1 MB, so no block reuses heap pages an earlier test left resident) and BLAS/LAPACK are warmed up first
// (OpenBLAS allocates its buffers at its first call). Not under ASan: its allocator and shadow memory are not the
// ones the model counts.
namespace {


// OpenBLAS packs level-3 operands in a per-thread buffer it allocates once and touches as far as the largest call so
// far needed (its panel grows with the matrix dimension: ~5 MB at n = 2000): a dgemm of the largest dimension
// measured below touches it before measuring, and a small solve and alignment warm up LAPACK.
[[maybe_unused]] void warm_up_lapack() {
  const size_t big = 2048, kk = 512;
  std::vector<double> Ab(big * kk, 1e-3), C(big * big);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)big, (int)big, (int)kk, 1.0, Ab.data(), (int)big,
              Ab.data(), (int)big, 0.0, C.data(), (int)big);
  const size_t n = 600;
  std::vector<double> A(n * n, 0.0), w(n), y(n, 1.0);
  for (size_t i = 0; i < n; ++i) A[i + i * n] = 1.0 + double(i);
  Ctx ctx;
  (void)am_kernel_alignment(ctx.c, A.data(), n, n, y.data(), 3, w.data(), nullptr);
  random_problem rp({2, 2}, {10, 10, 10}, {1, 1, 1, 1}, AM_READOUT_LAST, n, 24, 1, 3);
  am_theory *th = nullptr;
  if (am_theory_create(ctx.c, &th, &rp.arch, rp.P, rp.N0, rp.xi.data(), rp.y.data(), 0.05) != AM_OK) return;
  std::vector<double> U(am_theory_u_size(th));
  (void)am_theory_solve(ctx.c, th, nullptr, U.data(), nullptr);
  am_theory_destroy(&th);
}

}  // namespace

TEST_CASE("theory memory: the model's terms match the peak RSS of the alignment, the solve and predictions") {
#if defined(__SANITIZE_ADDRESS__) || !defined(__GLIBC__)
  return;  // ASan's allocator keeps freed blocks in quarantine and adds shadow pages: RSS is not the model's count
           // (and mallopt/malloc_trim below are glibc's)
#else
  const Limit unset(nullptr);
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_PERTURB, 0);  // meson test sets MALLOC_PERTURB_: glibc would fill (so make resident) what is left unwritten
  warm_up_lapack();
  Ctx ctx;
  // The alignment of a 2000×2000 kernel (k = 30): a copy of the kernel and the k vectors dsyevr writes, 33 MB.
  // Before this model it was counted as 5·P² (160 MB) while 3·P² were resident (dsyevr's second copy and a full
  // P-column Z, zero-filled). Lower bound 0.95: every counted block is written whole (page rounding and LAPACK's
  // small workspaces are < 1 %); upper 1.10: the counted W, ISUPPZ and work arrays are upper bounds of LAPACK's.
  const size_t P = 2000, k = 30;
  std::vector<double> K(P * P), y(P), ov(k), ev(k);
  for (size_t j = 0; j < P; ++j) {
    y[j] = j % 3 ? 1.0 : -1.0;
    for (size_t i = 0; i < P; ++i) K[i + j * P] = std::exp(-std::fabs(double(i) - double(j)) / 50.0);
  }
  am_status st = AM_OK;
  const double align = peak_above([&] { st = am_kernel_alignment(ctx.c, K.data(), P, P, y.data(), k, ov.data(), ev.data()); });
  REQUIRE(st == AM_OK);
  if (align < 0) return;  // clear_refs not writable (an old kernel, a restricted container): nothing to compare
  am::theory_sizes sz;
  sz.P = double(P);
  sz.k = double(k);
  const double model = am::theory_bytes(sz, am::kMemAlignment);
  MESSAGE("alignment P = 2000: model " << model / 1e6 << " MB, measured " << align / 1e6 << " MB");
  CHECK(model / align >= 0.95);
  CHECK(model / align <= 1.10);

  // Create, solve and predict on a two-layer problem (4 paths, N0 = 24, P = 1500, 500 test inputs). What the Newton
  // solve holds — Γ and its factor, the kernel's ξ·L, B̃, the Hessian's Gram workspaces — is written whole; the
  // solver's own vectors are a few KB. Same bounds as above; the upper one also covers the phases the model takes
  // as one maximum when two of them never overlap in time.
  random_problem rp({2, 2}, {10, 10, 10}, {1, 1, 1, 1}, AM_READOUT_LAST, 2000, 24, 1, 7);
  const size_t Pt = 500, Ptr = 1500, N0 = rp.N0, H = rp.H;
  std::vector<double> ytr(rp.y.begin(), rp.y.begin() + Ptr);
  for (size_t m = 0; m < Ptr; ++m) ytr[m] = rp.xi[m * N0 * H] > 0 ? 1.0 : -1.0;
  std::vector<double> xtr(rp.xi.begin(), rp.xi.begin() + Ptr * N0 * H), xte(rp.xi.begin() + Ptr * N0 * H, rp.xi.end());
  am_theory *th = nullptr;
  std::vector<double> U, mean(Pt), var(Pt);
  const double solve = peak_above(
      [&] {
        if ((st = am_theory_create(ctx.c, &th, &rp.arch, Ptr, N0, xtr.data(), ytr.data(), 0.05)) != AM_OK) return;
        U.resize(am_theory_u_size(th));
        st = am_theory_solve(ctx.c, th, nullptr, U.data(), nullptr);
      },
      [&] { am_theory_destroy(&th); });  // the first run's handle, before the second measurement
  REQUIRE(st == AM_OK);
  // The handle keeps the solve's factor of Γ (at its solution): a prediction there allocates no P×P matrix. Then the
  // phase as the model counts it, after am_theory_release: the prediction builds and factors Γ itself.
  const double kept = peak_above([&] { st = am_theory_predict(ctx.c, th, U.data(), Pt, xte.data(), mean.data(), var.data()); });
  REQUIRE(st == AM_OK);
  const double predict = peak_above([&] { st = am_theory_predict(ctx.c, th, U.data(), Pt, xte.data(), mean.data(), var.data()); },
                                    [&] { am_theory_release(th); });
  am_theory_destroy(&th);
  REQUIRE(st == AM_OK);
  const double gamma = 8.0 * double(Ptr) * double(Ptr);
  MESSAGE("predict with the kept factor: " << kept / 1e6 << " MB, with its own " << predict / 1e6 << " MB (Γ "
          << gamma / 1e6 << " MB)");
  CHECK(kept <= predict - 0.95 * gamma);
  am::theory_sizes ts = am::theory_sizes_of(rp.arch, double(Ptr), double(N0));
  ts.Pt = double(Pt);
  const unsigned held = am::kMemHandle | am::kMemGradient | am::kMemHessian;  // what the handle keeps after a solve
  const double smodel = am::theory_bytes(ts, held | am::kMemValue | am::kMemNewton);
  const double pmodel = am::theory_bytes(ts, am::kMemPredict);  // a phase: nothing resident of its own
  MESSAGE("solve P = 1500: model " << smodel / 1e6 << " MB, measured " << solve / 1e6 << " MB");
  MESSAGE("predict P = 1500, Pt = 500: model " << pmodel / 1e6 << " MB, measured " << predict / 1e6 << " MB");
  CHECK(smodel / solve >= 0.95);
  CHECK(smodel / solve <= 1.10);
  CHECK(pmodel / predict >= 0.95);
  CHECK(pmodel / predict <= 1.10);
#endif
}
