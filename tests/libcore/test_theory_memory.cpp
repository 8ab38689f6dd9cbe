// The theory's memory estimate (libcore/src/theory_memory.cpp): am_theory_create, _solve, am_kernel_alignment,
// am_dataset_xi and am_theory_memory_check refuse a problem that cannot fit before they allocate it — AM_ERR_NO_MEMORY
// with am_memory_check's message — and AM_MEMORY_LIMIT moves the budget both ways.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attnmech/attnmech.h"
#include "../memory_limit.hpp"

namespace {

using am_test::Ctx;
using am_test::Limit;
using am_test::peak_mb;

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
  // alignment of a 400×400 kernel: 5·P² doubles (6.4 MB) of copies and LAPACK workspace > 1 MB
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
