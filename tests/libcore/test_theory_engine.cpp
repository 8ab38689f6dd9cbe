// am_theory_set_engine (theory.cpp's engine path): a handle whose P-sized work goes through an engine gives the
// serial handle's action, gradient, Hessian, solution and predictions. The engine here is a plain serial one written
// for the test from the public kernel functions and LAPACK (independent of theory.cpp's own products), so the
// engine path's own algebra — the energy gradient from M = B̃ᵀB̃'s diagonal blocks, the direction Gram 2CᵀMC —
// is checked in every build, without MPI (tests/scalapack checks the ScaLAPACK engine).
// Bound 1e-11 relative: the same quantities summed in another order (a full GEMM for M against SYRKs, the Gram
// through M), ~ε·κ(Γ) with κ(Γ) ≲ 1e3 for these problems; a wrong index or transpose errs at O(1).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "../memory_limit.hpp"
#include "../handles.hpp"  // am_test::Ctx
#include "abi.hpp"  // am::kMinTheoryEngine: the 3.3 prefix
#include "linalg.hpp"
#include "../newton_distance.hpp"
#include "random_problem.hpp"

namespace {

struct plain_engine {
  size_t P, N0, H;
  const double *xi, *y;
  std::vector<double> L, alpha;
  int factors = 0, released = 0;
};

am_status plain_factor(void *user, am_context *ctx, const double *U1, double T, double *logdet, double *y_alpha) {
  auto &e = *static_cast<plain_engine *>(user);
  e.L.assign(e.P * e.P, 0.0);
  if (am_status st = am_kernel_u(ctx, e.N0, e.H, U1, e.P, e.xi, e.P, e.xi, e.L.data(), e.P)) return st;
  for (size_t i = 0; i < e.P; ++i) e.L[i + i * e.P] += T;
  if (!am::la::chol(e.L.data(), e.P, e.P)) return am_context_fail(ctx, AM_ERR_SINGULAR, "not positive definite");
  e.alpha.assign(e.y, e.y + e.P);
  am::la::chol_solve(e.L.data(), e.P, e.P, e.alpha.data(), 1, e.P);
  *logdet = am::la::chol_logdet(e.L.data(), e.P, e.P);
  *y_alpha = 0;
  for (size_t i = 0; i < e.P; ++i) *y_alpha += e.y[i] * e.alpha[i];
  ++e.factors;
  return AM_OK;
}

am_status plain_whiten(void *user, am_context *, double *b, double *M) {
  auto &e = *static_cast<plain_engine *>(user);
  const int P = int(e.P), NH = int(e.N0 * e.H);
  std::vector<double> Bt(e.xi, e.xi + e.P * e.N0 * e.H);
  cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, P, NH, 1.0, e.L.data(), P, Bt.data(), P);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, NH, NH, P, 1.0, Bt.data(), P, Bt.data(), P, 0.0, M, NH);
  cblas_dgemv(CblasColMajor, CblasTrans, P, NH, 1.0, e.xi, P, e.alpha.data(), 1, 0.0, b, 1);
  return AM_OK;
}

am_status plain_predict(void *user, am_context *ctx, const double *U1, double T, size_t Pt, const double *xt,
                        double *mean, double *quad) {
  auto &e = *static_cast<plain_engine *>(user);
  double ld, ya;
  if (am_status st = plain_factor(user, ctx, U1, T, &ld, &ya)) return st;
  std::vector<double> k(e.P * Pt);
  if (am_status st = am_kernel_u(ctx, e.N0, e.H, U1, e.P, e.xi, Pt, xt, k.data(), e.P)) return st;
  for (size_t t = 0; t < Pt; ++t) {
    mean[t] = 0;
    for (size_t i = 0; i < e.P; ++i) mean[t] += k[i + t * e.P] * e.alpha[i];
  }
  cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, int(e.P), int(Pt), 1.0, e.L.data(),
              int(e.P), k.data(), int(e.P));
  for (size_t t = 0; t < Pt; ++t) quad[t] = cblas_ddot(int(e.P), k.data() + t * e.P, 1, k.data() + t * e.P, 1);
  return AM_OK;
}

void plain_release(void *user) { ++static_cast<plain_engine *>(user)->released; }

am_theory_engine engine_of(plain_engine *e) {
  am_theory_engine eng{};
  eng.struct_size = sizeof eng;
  eng.user = e;
  eng.factor = plain_factor;
  eng.whiten = plain_whiten;
  eng.predict = plain_predict;
  eng.release = plain_release;
  return eng;
}

// A serial handle and one whose P-sized work goes through a plain engine, on the same problem.
struct two_handles {
  plain_engine pe;
  am_theory *ser = nullptr, *eng = nullptr;
  two_handles(am_context *ctx, const random_problem &rp, double T)
      : pe{rp.P, rp.N0, rp.H, rp.xi.data(), rp.y.data()} {
    REQUIRE(am_theory_create(ctx, &ser, &rp.arch, rp.P, rp.N0, rp.xi.data(), rp.y.data(), T) == AM_OK);
    REQUIRE(am_theory_create(ctx, &eng, &rp.arch, rp.P, rp.N0, rp.xi.data(), rp.y.data(), T) == AM_OK);
    const am_theory_engine e = engine_of(&pe);
    REQUIRE(am_theory_set_engine(ctx, eng, &e) == AM_OK);
  }
  ~two_handles() {
    am_theory_destroy(&eng);
    am_theory_destroy(&ser);
  }
};

void check_close(const std::vector<double> &a, const std::vector<double> &b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  CHECK(diff <= 1e-11 * scale);
}

}  // namespace

TEST_CASE("theory engine: action, gradient, Hessian, solve and predictions through the seam equal the serial path") {
  random_problem rp({2, 2}, {5, 7, 11}, {0.9, 1.3, 0.7, 1.1}, AM_READOUT_LAST, 40, 4, 5, 21);
  random_problem test({2, 2}, {5, 7, 11}, {0.9, 1.3, 0.7, 1.1}, AM_READOUT_LAST, 9, 4, 5, 22);
  two_handles h(nullptr, rp, 0.2);
  am_theory *ser = h.ser, *eng = h.eng;
  plain_engine &pe = h.pe;
  const size_t nu = am_theory_u_size(ser), n = am_theory_vech_size(ser);
  const std::vector<double> U = rp.random_u(ser);
  std::vector<double> g0(nu), g1(nu), h0(n * n), h1(n * n);
  am_action a0{sizeof a0}, a1{sizeof a1};
  REQUIRE(am_theory_action(nullptr, ser, U.data(), &a0, g0.data(), h0.data()) == AM_OK);
  REQUIRE(am_theory_action(nullptr, eng, U.data(), &a1, g1.data(), h1.data()) == AM_OK);
  CHECK(a1.S_code == doctest::Approx(a0.S_code).epsilon(1e-12));
  check_close(g1, g0);
  check_close(h1, h0);
  std::vector<double> S0(nu), S1(nu);
  am_solve_report r0{sizeof r0}, r1{sizeof r1};
  REQUIRE(am_theory_solve(nullptr, ser, nullptr, S0.data(), &r0) == AM_OK);
  REQUIRE(am_theory_solve(nullptr, eng, nullptr, S1.data(), &r1) == AM_OK);
  // The two paths' iterates agree to round-off until the stopping test; if one path's gradient sits within its
  // round-off of grad_tol there, it takes one more step, which (quadratic convergence) lands far below the
  // tolerance: at most one iteration apart, and the two points within their distances to the minimum.
  CHECK(std::abs((long)r1.iterations - (long)r0.iterations) <= 1);
  const double d = newton_test::distance(ser, rp.arch, S0.data()) + newton_test::distance(ser, rp.arch, S1.data());
  for (size_t k = 0; k < nu; ++k) CHECK(std::fabs(S1[k] - S0[k]) <= d + 1e-11 * std::fabs(S0[k]));
  std::vector<double> m0(test.P), v0(test.P), m1(test.P), v1(test.P);
  REQUIRE(am_theory_predict(nullptr, ser, S0.data(), test.P, test.xi.data(), m0.data(), v0.data()) == AM_OK);
  REQUIRE(am_theory_predict(nullptr, eng, S0.data(), test.P, test.xi.data(), m1.data(), v1.data()) == AM_OK);
  check_close(m1, m0);
  check_close(v1, v0);
  CHECK(pe.factors > 0);
  am_theory_destroy(&h.eng);
  CHECK(pe.released == 1);  // the handle releases its engine once
}

TEST_CASE("theory engine: bad engines are refused; NULL goes back to the serial path") {
  random_problem rp({2}, {5, 7}, {0.9, 1.3, 0.7}, AM_READOUT_LAST, 12, 3, 4, 23);
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(ctx, &th, &rp.arch, rp.P, rp.N0, rp.xi.data(), rp.y.data(), 0.5) == AM_OK);
  plain_engine pe{rp.P, rp.N0, rp.H, rp.xi.data(), rp.y.data()};
  am_theory_engine e = engine_of(&pe);
  CHECK(am_theory_set_engine(ctx, nullptr, &e) == AM_ERR_INVALID_ARGUMENT);
  e.struct_size = 4;
  CHECK(am_theory_set_engine(ctx, th, &e) == AM_ERR_INVALID_ARGUMENT);
  CHECK(std::string(am_context_last_error(ctx)).find("struct_size") != std::string::npos);
  // The growth rule (docs/abi.md): the 3.3 prefix (through `release`) is the minimum; an engine compiled against a
  // later header, with members this library does not know, is accepted and its unknown tail ignored.
  e = engine_of(&pe);
  e.struct_size = static_cast<uint32_t>(am::kMinTheoryEngine - 1);
  CHECK(am_theory_set_engine(ctx, th, &e) == AM_ERR_INVALID_ARGUMENT);
  CHECK(std::string(am_context_last_error(ctx)).find("smaller than the") != std::string::npos);
  struct later_engine {
    am_theory_engine base;
    void *unknown[3];
  } later{engine_of(&pe), {nullptr, &pe, nullptr}};
  later.base.struct_size = sizeof later;
  REQUIRE(am_theory_set_engine(ctx, th, &later.base) == AM_OK);
  REQUIRE(am_theory_set_engine(ctx, th, nullptr) == AM_OK);
  CHECK(pe.released == 1);
  pe.released = 0;
  e = engine_of(&pe);
  e.whiten = nullptr;
  CHECK(am_theory_set_engine(ctx, th, &e) == AM_ERR_INVALID_ARGUMENT);
  CHECK(std::string(am_context_last_error(ctx)).find("whiten") != std::string::npos);
  e = engine_of(&pe);
  REQUIRE(am_theory_set_engine(ctx, th, &e) == AM_OK);
  std::vector<double> U(am_theory_u_size(th));
  am_theory_gp_point(th, U.data());
  am_action a1{sizeof a1}, a0{sizeof a0};
  REQUIRE(am_theory_action(ctx, th, U.data(), &a1, nullptr, nullptr) == AM_OK);
  CHECK(pe.factors == 1);
  REQUIRE(am_theory_set_engine(ctx, th, nullptr) == AM_OK);  // releases the engine, serial again
  CHECK(pe.released == 1);
  REQUIRE(am_theory_action(ctx, th, U.data(), &a0, nullptr, nullptr) == AM_OK);
  CHECK(pe.factors == 1);
  CHECK(a1.S_code == doctest::Approx(a0.S_code).epsilon(1e-12));
  am_theory_destroy(&th);
  CHECK(pe.released == 1);
  am_context_destroy(&ctx);
}

// With an engine the handle's own checks count what the handle allocates (its copy of ξ and y, the N0·H-sized
// arrays), not the P×P Γ the engine holds: a budget below one P×P matrix refuses the serial handle's solve and
// predictions and lets the engine handle's run (a distributed engine keeps 1/K of Γ on each process; the caller checks
// that share with am_theory_memory_check_engine). am_theory_kernel still returns a whole P×P kernel: still checked.
TEST_CASE("theory engine: the handle's memory checks leave the engine's P×P matrices to the engine") {
  random_problem rp({2}, {5, 7}, {0.9, 1.3, 0.7}, AM_READOUT_LAST, 1500, 3, 4, 24);  // Γ: 1500² doubles = 18 MB
  const am_test::Ctx c;  // destroyed after the handles
  am_context *ctx = c.c;
  two_handles h(ctx, rp, 0.5);
  am_theory *ser = h.ser, *eng = h.eng;
  std::vector<double> U(am_theory_u_size(ser)), K(rp.P * rp.P), m(5), v(5);
  am_theory_gp_point(ser, U.data());
  const am_test::Limit limit("8M");  // the handles' own arrays: ξ 72 KB; one Γ: 18 MB
  am_action a{sizeof a};
  CHECK(am_theory_action(ctx, ser, U.data(), &a, nullptr, nullptr) == AM_ERR_NO_MEMORY);
  CHECK(am_theory_predict(ctx, ser, U.data(), 5, rp.xi.data(), m.data(), v.data()) == AM_ERR_NO_MEMORY);
  CHECK(am_theory_action(ctx, eng, U.data(), &a, nullptr, nullptr) == AM_OK);
  CHECK(am_theory_predict(ctx, eng, U.data(), 5, rp.xi.data(), m.data(), v.data()) == AM_OK);
  CHECK(am_theory_kernel(ctx, eng, U.data(), K.data()) == AM_ERR_NO_MEMORY);  // whole P×P in this process
}
