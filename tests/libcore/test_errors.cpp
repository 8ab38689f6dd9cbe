// Cross-cutting, named after no one source: checks every entry's documented errors. Bad input gets its
// documented status and a message, never a crash.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../toy.hpp"

namespace {
struct ctx_holder {
  am_context *ctx = nullptr;
  ctx_holder() {
    am_context_settings s;
    am_context_default_settings(&s);
    REQUIRE(am_context_create(&ctx, &s) == AM_OK);
  }
  ~ctx_holder() { am_context_destroy(&ctx); }
  std::string msg() const { return am_context_last_error(ctx); }
};
}  // namespace

TEST_CASE("errors: temperature, widths, variances, shapes") {
  ctx_holder c;
  toy_problem t;
  std::vector<double> xi(t.P * t.N0 * 4);
  REQUIRE(am_xi(c.ctx, &t.arch, t.heads, AM_READOUT_LAST, t.P, t.N0, t.S, t.X.data(), xi.data()) == AM_OK);
  am_theory *th = nullptr;
  CHECK(am_theory_create(c.ctx, &th, &t.arch, t.P, t.N0, xi.data(), t.y.data(), 0.0) == AM_ERR_DOMAIN);
  CHECK(c.msg().find("temperature") != std::string::npos);
  CHECK(am_theory_create(c.ctx, &th, &t.arch, t.P, t.N0, xi.data(), t.y.data(), -1.0) == AM_ERR_DOMAIN);
  CHECK(am_theory_create(c.ctx, &th, &t.arch, t.P, t.N0, xi.data(), t.y.data(), NAN) == AM_ERR_DOMAIN);
  CHECK(th == nullptr);
  am_arch bad = t.arch;
  bad.widths[1] = 0;
  CHECK(am_theory_create(c.ctx, &th, &bad, t.P, t.N0, xi.data(), t.y.data(), 0.1) == AM_ERR_DOMAIN);
  CHECK(c.msg().find("W_1") != std::string::npos);
  bad = t.arch;
  bad.variances[3] = -2;
  CHECK(am_theory_create(c.ctx, &th, &bad, t.P, t.N0, xi.data(), t.y.data(), 0.1) == AM_ERR_DOMAIN);
  CHECK(c.msg().find("s_a") != std::string::npos);
  bad = t.arch;
  bad.heads[1] = 0;
  CHECK(am_theory_create(c.ctx, &th, &bad, t.P, t.N0, xi.data(), t.y.data(), 0.1) == AM_ERR_DOMAIN);
  CHECK(am_theory_create(c.ctx, &th, &t.arch, 0, t.N0, xi.data(), t.y.data(), 0.1) == AM_ERR_SHAPE);
  CHECK(am_theory_create(c.ctx, &th, &t.arch, t.P, t.N0, nullptr, t.y.data(), 0.1) == AM_ERR_INVALID_ARGUMENT);
  std::vector<double> Kout(t.P * t.P), U(16, 0.0);
  CHECK(am_kernel_u(c.ctx, t.N0, 4, U.data(), t.P, xi.data(), t.P, xi.data(), Kout.data(), t.P - 1) == AM_ERR_SHAPE);
  CHECK(am_prekernel(c.ctx, t.N0, 4, t.P, xi.data(), 4, 0, Kout.data(), t.P) == AM_ERR_SHAPE);
}

TEST_CASE("errors: non-finite data") {
  ctx_holder c;
  toy_problem t;
  std::vector<double> xi(t.P * t.N0 * 4);
  t.X[7] = NAN;
  CHECK(am_xi(c.ctx, &t.arch, t.heads, AM_READOUT_LAST, t.P, t.N0, t.S, t.X.data(), xi.data()) == AM_ERR_NONFINITE);
  CHECK(c.msg().find("example 0") != std::string::npos);
  toy_problem t2;
  REQUIRE(am_xi(c.ctx, &t2.arch, t2.heads, AM_READOUT_LAST, t2.P, t2.N0, t2.S, t2.X.data(), xi.data()) == AM_OK);
  t2.y[3] = INFINITY;
  am_theory *th = nullptr;
  CHECK(am_theory_create(c.ctx, &th, &t2.arch, t2.P, t2.N0, xi.data(), t2.y.data(), 0.1) == AM_ERR_NONFINITE);
  t2.W12[3] = NAN;
  CHECK(am_xi(c.ctx, &t2.arch, t2.heads, AM_READOUT_LAST, t2.P, t2.N0, t2.S, t2.X.data(), xi.data()) == AM_ERR_NONFINITE);
}

TEST_CASE("errors: U not positive definite; kernel singular at T") {
  ctx_holder c;
  toy_problem t;
  std::vector<double> xi(t.P * t.N0 * 4);
  REQUIRE(am_xi(c.ctx, &t.arch, t.heads, AM_READOUT_LAST, t.P, t.N0, t.S, t.X.data(), xi.data()) == AM_OK);
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(c.ctx, &th, &t.arch, t.P, t.N0, xi.data(), t.y.data(), 0.1) == AM_OK);
  std::vector<double> U(am_theory_u_size(th));
  am_theory_gp_point(th, U.data());
  U[0] = -1;
  am_action a{sizeof(am_action)};
  CHECK(am_theory_action(c.ctx, th, U.data(), &a, nullptr, nullptr) == AM_ERR_DOMAIN);
  CHECK(c.msg().find("U_1") != std::string::npos);
  am_theory_destroy(&th);

  // Two identical examples with all-one features: K = [[1,1],[1,1]] exactly, and T = 1e-20 is below
  // the rounding unit of 1, so K + T·I is exactly singular in floating point.
  am_arch one;
  am_arch_default(&one);
  const double xi1[2] = {1.0, 1.0}, y[2] = {1.0, -1.0};
  REQUIRE(am_theory_create(c.ctx, &th, &one, 2, 1, xi1, y, 1e-20) == AM_OK);
  std::vector<double> U1(1, 1.0);
  CHECK(am_theory_action(c.ctx, th, U1.data(), &a, nullptr, nullptr) == AM_ERR_SINGULAR);
  CHECK(c.msg().find("singular") != std::string::npos);
  am_theory_destroy(&th);
}

TEST_CASE("errors: a solver that does not converge reports NOT_CONVERGED with its last iterate") {
  ctx_holder c;
  toy_problem t;
  std::vector<double> xi(t.P * t.N0 * 4);
  REQUIRE(am_xi(c.ctx, &t.arch, t.heads, AM_READOUT_LAST, t.P, t.N0, t.S, t.X.data(), xi.data()) == AM_OK);
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(c.ctx, &th, &t.arch, t.P, t.N0, xi.data(), t.y.data(), 0.1) == AM_OK);
  am_solve_settings s;
  am_solve_default_settings(&s);
  s.max_iter = 2;
  std::vector<double> U(am_theory_u_size(th));
  am_solve_report rep{sizeof(am_solve_report)};
  CHECK(am_theory_solve(c.ctx, th, &s, U.data(), &rep) == AM_ERR_NOT_CONVERGED);
  CHECK(rep.status == AM_ERR_NOT_CONVERGED);
  CHECK(rep.iterations == 2);
  CHECK(rep.grad_max > 1e-10);
  CHECK(c.msg().find("did not converge") != std::string::npos);
  // the last iterate is a valid PD point with a lower action than the GP start
  am_action a{sizeof(am_action)}, agp{sizeof(am_action)};
  REQUIRE(am_theory_action(c.ctx, th, U.data(), &a, nullptr, nullptr) == AM_OK);
  std::vector<double> Ugp(U.size());
  am_theory_gp_point(th, Ugp.data());
  REQUIRE(am_theory_action(c.ctx, th, Ugp.data(), &agp, nullptr, nullptr) == AM_OK);
  CHECK(a.S_code < agp.S_code);
  CHECK(am_theory_solve(c.ctx, nullptr, &s, U.data(), &rep) == AM_ERR_INVALID_ARGUMENT);
  am_theory_destroy(&th);
}
