// Regression tests of the defects the property harness found, each the smallest input that showed it.
// The harness cases that found them replay with AM_PROPERTY_SEED=23 AM_PROPERTY_CASE=<area>:<i> (named below).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "property.hpp"
#include "reference.hpp"

using namespace prop;

namespace {

// f(x) = x² with a NaN Hessian: no damping makes H + λI positive definite.
am_status nan_hessian(void *, const double *x, double *f, double *g, double *H) {
  *f = x[0] * x[0];
  if (g) g[0] = 2 * x[0];
  if (H) H[0] = NAN;
  return AM_OK;
}

am_theory *one_path(am_context *ctx, size_t P, const std::vector<double> &xi, const std::vector<double> &y, double T) {
  am_arch a;
  am_arch_default(&a);
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(ctx, &th, &a, P, xi.size() / P, xi.data(), y.data(), T) == AM_OK);
  return th;
}

}  // namespace

TEST_CASE("regression: Newton stops with a message on a non-finite Hessian (was: an endless damping loop)") {
  // Found as theory:3593 — heads [1], P = 2, N0 = 5, inputs ×3e64: the energy Hessian overflowed, and
  // `while (!damped_solve(...)) lambda *= 10` never ended.
  Context c;
  am_objective obj = AM_OBJECTIVE(1, nullptr, &nan_hessian, nullptr);
  double x = 1.0;
  CHECK(am_newton_minimize(c.ctx, &obj, nullptr, &x, nullptr) == AM_ERR_NONFINITE);
  CHECK(std::string(am_context_last_error(c.ctx)).find("Hessian has non-finite entries at iteration 0") != std::string::npos);
}

TEST_CASE("regression: the theory solve on inputs whose kernel overflows ends with a message") {
  Context c;
  const std::vector<double> xi{3e150, 1e150}, y{1.0, -1.0};  // K = ξξᵀ ~ 1e301: its Hessian terms overflow
  am_theory *th = one_path(c.ctx, 2, xi, y, 1.0);
  std::vector<double> U(am_theory_u_size(th));
  const am_status st = am_theory_solve(c.ctx, th, nullptr, U.data(), nullptr);
  CHECK(st < 0);  // Γ's Cholesky or the overflow check refuses it; either way with a message, and it returns
  CHECK(*am_context_last_error(c.ctx) != 0);
  am_theory_destroy(&th);
}

TEST_CASE("regression: kernels, predictions and ξ that overflow float64 are errors, not OK with Inf") {
  // Found as edges:708 (am_theory_kernel, ξ ×5.7e79) and edges:880 (am_xi, an input of 1e300).
  Context c;
  const std::vector<double> xi{1e200, 1.0}, y{1.0, -1.0}, xt{1e200};
  am_theory *th = one_path(c.ctx, 2, xi, y, 1.0);
  std::vector<double> U(1, 1.0), K(4), mean(1), var(1);
  CHECK(am_theory_kernel(c.ctx, th, U.data(), K.data()) == AM_ERR_NONFINITE);
  CHECK(std::string(am_context_last_error(c.ctx)) ==
        "the kernel K_U overflows float64 (non-finite entries from finite inputs): rescale the inputs");
  CHECK(am_theory_predict(c.ctx, th, U.data(), 1, xt.data(), mean.data(), var.data()) == AM_ERR_NONFINITE);
  am_theory_destroy(&th);
  am_arch a;
  am_arch_default(&a);
  std::vector<double> W{1.0}, X{1e300, 1e300}, out(2);  // logits x_sᵀWx_t = 1e600
  am_head h = AM_BILINEAR_HEAD(W.data());
  CHECK(am_xi(c.ctx, &a, &h, AM_READOUT_LAST, 1, 1, 2, X.data(), out.data()) == AM_ERR_NONFINITE);
  CHECK(std::string(am_context_last_error(c.ctx)).find("overflows float64") != std::string::npos);
}

TEST_CASE("regression: the action's gradient is checked: labels near the float64 limit give an error") {
  // Found as theory:2204 — y ~ 1e150, a near-singular U: the action was finite, its gradient Inf, status OK.
  Context c;
  const std::vector<double> xi{1.0, 0.5}, y{1.3e154, -1.3e154};
  am_theory *th = one_path(c.ctx, 2, xi, y, 1e-8);
  std::vector<double> U{1e-6}, G(1);
  am_action a{};
  a.struct_size = sizeof a;
  const am_status st = am_theory_action(c.ctx, th, U.data(), &a, G.data(), nullptr);
  if (st == AM_OK) CHECK(std::isfinite(G[0]));
  else CHECK(*am_context_last_error(c.ctx) != 0);
  am_theory_destroy(&th);
}

TEST_CASE("regression: alignment eigenvalues of a kernel of norm 1e-162 keep float64 accuracy") {
  // Found as theory:2308 — inputs ×2.8e-82: dsyevr's index range on a matrix it rescales itself returned
  // eigenvalues off by 2e-11 of the norm; syevr_top now scales by a power of two first (dsyevd as the reference).
  Context c;
  const size_t P = 12, k = 8;
  std::vector<double> X(P * 5), K(P * P, 0.0), y(P, 1.0), ov(k), ev(k), w(P);
  for (size_t i = 0; i < X.size(); ++i) X[i] = 1e-81 * std::sin(1.0 + 3.7 * (double)i);
  cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, (int)P, 5, 1.0, X.data(), (int)P, 0.0, K.data(), (int)P);
  for (size_t j = 0; j < P; ++j)
    for (size_t i = 0; i < j; ++i) K[i + j * P] = K[j + i * P];
  std::vector<double> A = K;
  REQUIRE(LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'N', 'L', (int)P, A.data(), (int)P, w.data()) == 0);
  REQUIRE(am_kernel_alignment(c.ctx, K.data(), P, P, y.data(), k, ov.data(), ev.data()) == AM_OK);
  for (size_t i = 0; i < k; ++i)  // both backward stable at this scale too: 64·P·ε of the norm
    CHECK(std::fabs(ev[i] - w[P - 1 - i]) <= 64.0 * (double)P * 2.2e-16 * w[P - 1]);
}
