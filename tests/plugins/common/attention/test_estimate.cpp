// The theory estimator of attention datasets (plugins/common/attention/estimate.cpp): the Options' defaults and
// their use, the §8.0 toy record, the temperature scan with its validation selection, gp_subsets, the run's
// inputs (widths, start; the same numbers with the path inputs computed once), and the memory check before
// the theory is built.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "estimate.hpp"
#include "../../../toy.hpp"
#include "../../../memory_limit.hpp"
#include "../../../handles.hpp"  // am_test::Ctx

namespace {

using am_test::Ctx;
using am_test::Limit;
using am_test::peak_mb;

// An empty record: the inputs of a run that sets neither widths nor a start (a static root, never freed).
const am_record *no_inputs() {
  static am_record *r = [] {
    am_record *p = nullptr;
    am_record_create(&p);
    return p;
  }();
  return r;
}

double number_at(const am_record *r, const char *obj, const char *key) {
  return am_record_number(am_record_get(obj ? am_record_get(r, obj) : r, key));
}

}  // namespace

TEST_CASE("attention estimate: Options defaults are the theory estimator's") {
  const am::attention::Options o;
  am_solve_settings s;
  am_solve_default_settings(&s);
  CHECK(o.alignment_k == 30);
  CHECK_FALSE(o.store_kernels);
  CHECK(o.temperatures.empty());
  CHECK(o.solve.max_iter == s.max_iter);
  CHECK(o.solve.grad_tol == s.grad_tol);
  CHECK(o.solve.decrement_tol == s.decrement_tol);
  CHECK(o.solve.warm_start == 0);
}

TEST_CASE("attention estimate: alignment_k and store_kernels are used; a solve out of iterations is not converged") {
  Ctx c;
  toy_problem t;
  am_record *ds = toy_dataset(t), *run = nullptr;
  am::attention::Options o;
  o.alignment_k = 3;  // default 30
  REQUIRE(am_record_create(&run) == AM_OK);
  REQUIRE_MESSAGE(am::attention::estimate(c.c, ds, no_inputs(), o, run) == AM_OK, c.err());
  size_t n = 0;
  REQUIRE(am_record_get_vector(am_record_get(run, "alignment"), "rn", nullptr, 0, &n) == AM_OK);
  CHECK(n == 3);
  CHECK(am_record_get(run, "kernels") == nullptr);  // store_kernels defaults to false
  am_record_destroy(&run);

  o.solve.max_iter = 0;
  o.store_kernels = true;
  REQUIRE(am_record_create(&run) == AM_OK);
  CHECK(am::attention::estimate(c.c, ds, no_inputs(), o, run) == AM_ERR_NOT_CONVERGED);
  CHECK(number_at(run, "solver", "iterations") == 0);
  CHECK(am_record_get(run, "kernels") != nullptr);
  am_record_destroy(&run);
  am_record_destroy(&ds);
}

TEST_CASE("attention estimate: the §8.0 toy record") {
  toy_problem t;
  am_record *ds = toy_dataset(t), *run = nullptr;
  REQUIRE(am_record_create(&run) == AM_OK);
  REQUIRE(am::attention::estimate(nullptr, ds, no_inputs(), am::attention::Options(), run) == AM_OK);
  double S = 0, Ua = 0, acc = 0;
  REQUIRE(am_record_get_number(run, "action", &S) == AM_OK);
  REQUIRE(am_record_get_number(run, "U_a", &Ua) == AM_OK);
  // the action against the spec's 10 digits: second order in the solve's distance to the optimum
  CHECK(S == doctest::Approx(18.0688248255).epsilon(1e-8));
  double mean[2];
  size_t n = 0;
  REQUIRE(am_record_get_vector(am_record_get(run, "test"), "mean", mean, 2, &n) == AM_OK);
  REQUIRE(am_record_get_number(am_record_get(run, "test"), "accuracy", &acc) == AM_OK);
  CHECK(acc == doctest::Approx(0.5));  // both predictions positive; labels +1, −1
  const char *status = nullptr;
  REQUIRE(am_record_get_string(am_record_get(run, "solver"), "status", &status) == AM_OK);
  CHECK(std::string(status).rfind("converged", 0) == 0);
  // the renormalised U_1 comes back as a list of matrices; U_1[0][1] = −0.2725306110 (spec)
  const am_record *U = am_record_get(run, "U");
  REQUIRE(U != nullptr);
  REQUIRE(am_record_size(U) == 2);
  am_array_view v;
  REQUIRE(am_record_array(am_record_at(U, 0), &v) == AM_OK);
  std::vector<double> u(16 + 4);
  REQUIRE(am_array_to_f64_c(nullptr, &v, u.data(), 16) == AM_OK);
  REQUIRE(am_record_array(am_record_at(U, 1), &v) == AM_OK);
  REQUIRE(am_array_to_f64_c(nullptr, &v, u.data() + 16, 4) == AM_OK);
  // First order in the distance, so within the spec's digits plus that distance, which the run's own report
  // bounds wherever a float path made the solve stop: |v − v*|₂ ≤ |g|₂/μ, μ ≥ λ_min(H)/2 near the minimum.
  const double dist = 2 * number_at(run, "solver", "grad_vech_norm") / number_at(run, "solver", "hessian_min_eig");
  CHECK(std::fabs(u[1] - -0.2725306110) <= 1e-8 * 0.2725306110 + dist);
  // U_a and the means are the theory's at that U (the same calls on the same inputs: the same bits); test_theory
  // checks those against the spec
  std::vector<double> xi(t.P * t.N0 * 4), xit(t.Pt * t.N0 * 4);
  REQUIRE(am_xi(nullptr, &t.arch, t.heads, AM_READOUT_LAST, t.P, t.N0, t.S, t.X.data(), xi.data()) == AM_OK);
  REQUIRE(am_xi(nullptr, &t.arch, t.heads, AM_READOUT_LAST, t.Pt, t.N0, t.S, t.Xt.data(), xit.data()) == AM_OK);
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(nullptr, &th, &t.arch, t.P, t.N0, xi.data(), t.y.data(), t.T) == AM_OK);
  am_action a{sizeof a};
  REQUIRE(am_theory_action(nullptr, th, u.data(), &a, nullptr, nullptr) == AM_OK);
  CHECK(a.U_a == Ua);
  double m[2], var[2];
  REQUIRE(am_theory_predict(nullptr, th, u.data(), 2, xit.data(), m, var) == AM_OK);
  CHECK(m[0] == mean[0]);
  CHECK(m[1] == mean[1]);
  am_theory_destroy(&th);
  am_record_destroy(&run);
  am_record_destroy(&ds);
}

TEST_CASE("attention estimate: temperature scan with validation selection, and gp_subsets, on the toy record") {
  toy_problem t;
  am_record *ds = toy_dataset(t), *run = nullptr, *ref = nullptr;
  // validation split = the test examples; a temperature grid around the toy's T
  am_array_view v = test_view(t.Xt.data(), {t.Pt, t.S, t.N0}, 0);
  am_record_set_array(ds, "X_val", &v);
  const double yv[2] = {1, -1}, temps[3] = {0.05, 0.1, 0.3};
  am_record_set_vector(ds, "y_val", yv, 2);
  am_record_set_vector(ds, "temperatures_scan", temps, 3);
  // subsets: all four paths (the network itself) and paths {0, 3}
  am_record *subs = am_record_list(ds, "path_subsets");
  const std::vector<std::vector<double>> sets{{0, 1, 2, 3}, {0, 3}};
  for (size_t k = 0; k < 2; ++k) {
    am_record *e = am_record_append_object(subs);
    am_record_set_string(e, "name", k ? "two" : "all");
    am_record *pl = am_record_list(e, "paths");
    for (double p : sets[k]) am_record_append_number(pl, p);
  }
  REQUIRE(am_record_create(&run) == AM_OK);
  REQUIRE(am::attention::estimate(nullptr, ds, no_inputs(), am::attention::Options(), run) == AM_OK);
  const am_record *ts = am_record_get(run, "temperature_scan");
  REQUIRE(ts);
  std::vector<double> accv(3), llv(3), act(3);
  REQUIRE(am_record_get_vector(ts, "accuracy_val", accv.data(), 3, nullptr) == AM_OK);
  REQUIRE(am_record_get_vector(ts, "log_likelihood_val", llv.data(), 3, nullptr) == AM_OK);
  REQUIRE(am_record_get_vector(ts, "action", act.data(), 3, nullptr) == AM_OK);
  // the validation rule (am_select_validation), written out: the best accuracy, then the best log-likelihood
  size_t best = 0;
  for (size_t i = 1; i < 3; ++i)
    if (accv[i] > accv[best] || (accv[i] == accv[best] && llv[i] > llv[best])) best = i;
  double T = 0, S = 0;
  REQUIRE(am_record_get_number(run, "temperature", &T) == AM_OK);
  REQUIRE(am_record_get_number(run, "action", &S) == AM_OK);
  CHECK(T == temps[best]);
  CHECK(number_at(am_record_get(ts, "by_validation"), nullptr, "temperature") == temps[best]);
  const char *by = nullptr;
  REQUIRE(am_record_get_string(ts, "selected_by", &by) == AM_OK);
  CHECK(std::string(by) == "validation");
  // every grid point equals a cold single-T run at that T (warm starts change the path, not the minimum);
  // tolerance: the solves stop at max|dS/dU| <= 1e-10·max(1, |S|), the action is stationary there
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(temps[i]);
    am::attention::Options o;
    o.temperatures = {temps[i]};
    REQUIRE(am_record_create(&ref) == AM_OK);
    REQUIRE(am::attention::estimate(nullptr, ds, no_inputs(), o, ref) == AM_OK);
    double Sr = 0;
    REQUIRE(am_record_get_number(ref, "action", &Sr) == AM_OK);
    CHECK(act[i] == doctest::Approx(Sr).epsilon(1e-12));
    CHECK(am_record_get(ref, "temperature_scan") == nullptr);
    am_record_destroy(&ref);
  }
  // gp_subsets: all paths = the run's own GP predictor (same kernel, ξ rescaled by 1); {0, 3} = a one-layer theory
  // on those two ξ columns rescaled by √(4/2), with s_1 = s_1 s_2 (the same GP kernel)
  const am_record *gs = am_record_get(run, "gp_subsets");
  REQUIRE(am_record_size(gs) == 2);
  double m_all[2], m_gp[2], m_two[2];
  size_t n = 0;
  REQUIRE(am_record_get_vector(am_record_get(am_record_at(gs, 0), "test"), "mean", m_all, 2, &n) == AM_OK);
  REQUIRE(am_record_get_vector(am_record_get(am_record_get(run, "gp"), "test"), "mean", m_gp, 2, &n) == AM_OK);
  REQUIRE(am_record_get_vector(am_record_get(am_record_at(gs, 1), "test"), "mean", m_two, 2, &n) == AM_OK);
  double *xi = nullptr, *xit = nullptr, *y = nullptr;
  size_t P = 0, Pt = 0, N0 = 0;
  REQUIRE(am_dataset_xi(nullptr, ds, "train", &xi, &P, &N0, &y) == AM_OK);
  REQUIRE(am_dataset_xi(nullptr, ds, "test", &xit, &Pt, &N0, nullptr) == AM_OK);
  {
    // The two GP means solve Γ = K_GP + T·I by backward-stable factorisations whose operations differ in order
    // (BLAS kernels, SIMD width): they agree to 4·P·κ(Γ)·ε of the summed terms |k|ᵀ|Γ⁻¹y|, with κ(Γ) ≤ 1 + tr K/T
    // (K ⪰ 0) and |k|ᵀ|Γ⁻¹y| ≤ √(tr K · k_**)·|y|/T (Cauchy–Schwarz: k_a² ≤ K_aa k_**)
    std::vector<double> K(P * P), Kt(Pt * Pt);
    REQUIRE(am_kernel_gp(nullptr, &t.arch, N0, P, xi, K.data(), P) == AM_OK);
    REQUIRE(am_kernel_gp(nullptr, &t.arch, N0, Pt, xit, Kt.data(), Pt) == AM_OK);
    double tr = 0, yy = 0;
    for (size_t a = 0; a < P; ++a) tr += K[a + P * a], yy += y[a] * y[a];
    const double kappa = 1 + tr / T, eps = 2.220446049250313e-16;
    for (size_t b = 0; b < 2; ++b)
      CHECK(std::fabs(m_all[b] - m_gp[b]) <= 4 * P * kappa * eps * std::sqrt(tr * Kt[b + Pt * b] * yy) / T);
  }
  // closed form: K_GP = (s1 s2 sa / 2) Σ_{π∈{0,3}} C^ππ with ξ of the full network (normalised by 1/√4)
  const double c = 0.8 * 1.2 * 1.5 * 4.0 / 2.0;
  std::vector<double> G(P * P), k(P * Pt);
  for (size_t a = 0; a < P; ++a)
    for (size_t b = 0; b < P; ++b) {
      double s = 0;
      for (size_t p : {0u, 3u})
        for (size_t i = 0; i < N0; ++i) s += xi[a + P * (i + N0 * p)] * xi[b + P * (i + N0 * p)];
      G[a + P * b] = c * s + (a == b ? T : 0.0);
    }
  for (size_t a = 0; a < P; ++a)
    for (size_t b = 0; b < Pt; ++b) {
      double s = 0;
      for (size_t p : {0u, 3u})
        for (size_t i = 0; i < N0; ++i) s += xi[a + P * (i + N0 * p)] * xit[b + Pt * (i + N0 * p)];
      k[a + P * b] = c * s;
    }
  // mean = kᵀ G⁻¹ y by Gaussian elimination (P = 8, well conditioned with T added)
  std::vector<double> A(G), rhs(y, y + P);
  for (size_t col = 0; col < P; ++col)
    for (size_t r = col + 1; r < P; ++r) {
      const double f = A[r + P * col] / A[col + P * col];
      for (size_t j = col; j < P; ++j) A[r + P * j] -= f * A[col + P * j];
      rhs[r] -= f * rhs[col];
    }
  for (size_t r = P; r-- > 0;) {
    for (size_t j = r + 1; j < P; ++j) rhs[r] -= A[r + P * j] * rhs[j];
    rhs[r] /= A[r + P * r];
  }
  for (size_t b = 0; b < Pt; ++b) {
    double m = 0;
    for (size_t a = 0; a < P; ++a) m += k[a + P * b] * rhs[a];
    CHECK(m_two[b] == doctest::Approx(m).epsilon(1e-10));
  }
  am_free(xi);
  am_free(xit);
  am_free(y);
  am_record_destroy(&run);
  am_record_destroy(&ds);
}

TEST_CASE("attention estimate: the run's inputs — widths replace the dataset's, start warm-starts, ξ once") {
  Ctx c;
  toy_problem t;
  am_record *ds = toy_dataset(t), *wide = toy_dataset(t), *inputs = nullptr, *a = nullptr, *b = nullptr;
  const double w[3] = {30, 40, 50};
  am_record_remove(wide, "widths");
  am_record_set_vector(wide, "widths", w, 3);
  REQUIRE(am_record_create(&inputs) == AM_OK);
  am_record_set_vector(inputs, "widths", w, 3);
  const am::attention::Options o;
  // widths from the inputs = the same widths in the dataset; ξ computed once gives the same bits
  am::attention::PathInputs xi;
  REQUIRE(am::attention::load_path_inputs(c.c, ds, &xi) == AM_OK);
  REQUIRE(am_record_create(&a) == AM_OK);
  REQUIRE(am_record_create(&b) == AM_OK);
  REQUIRE_MESSAGE(am::attention::estimate(c.c, ds, inputs, xi, o, a) == AM_OK, c.err());
  REQUIRE_MESSAGE(am::attention::estimate(c.c, wide, no_inputs(), o, b) == AM_OK, c.err());
  CHECK(number_at(a, nullptr, "action") == number_at(b, nullptr, "action"));
  CHECK(number_at(a, "test", "accuracy") == number_at(b, "test", "accuracy"));
  std::vector<double> wa(3);
  REQUIRE(am_record_get_vector(a, "widths", wa.data(), 3, nullptr) == AM_OK);
  CHECK(wa[2] == 50);
  // the dataset's own widths are left as they were
  std::vector<double> wd(3);
  REQUIRE(am_record_get_vector(ds, "widths", wd.data(), 3, nullptr) == AM_OK);
  CHECK(wd[2] == 5);
  // start = the solution: the warm-started solve lands on the same minimum in no more iterations
  am_record *start = am_record_object(inputs, "start");
  REQUIRE(start);
  REQUIRE(am_record_set_copy(start, "U", am_record_get(a, "U")) == AM_OK);
  am_record_destroy(&b);
  REQUIRE(am_record_create(&b) == AM_OK);
  REQUIRE_MESSAGE(am::attention::estimate(c.c, ds, inputs, xi, o, b) == AM_OK, c.err());
  CHECK(number_at(b, nullptr, "action") == doctest::Approx(number_at(a, nullptr, "action")).epsilon(1e-12));
  CHECK(number_at(b, "solver", "iterations") <= number_at(a, "solver", "iterations"));
  CHECK(am::attention::estimate(c.c, ds, nullptr, xi, o, b) == AM_ERR_INVALID_ARGUMENT);
  am_record_destroy(&a);
  am_record_destroy(&b);
  am_record_destroy(&inputs);
  am_record_destroy(&wide);
  am_record_destroy(&ds);
}

TEST_CASE("attention estimate: refused before the theory is built when the kernels cannot fit") {
  Ctx ctx;
  const Limit l("1M");
  am_record *ds = nullptr;
  REQUIRE(am_record_create(&ds) == AM_OK);
  std::vector<double> X(100000, 1.0), W{0.5}, Y(100000, 1.0), ones{1, 1, 1};
  am_array_view v = test_view(X.data(), {100000, 1, 1}, 0);
  am_record_set_string(ds, "kind", "attention");
  am_record_set_array(ds, "X_train", &v);
  am_record_set_vector(ds, "y_train", Y.data(), Y.size());
  am_record_set_vector(ds, "heads", ones.data(), 1);
  am_record_set_vector(ds, "widths", ones.data(), 2);
  am_record_set_vector(ds, "variances", ones.data(), 3);
  am_record_set_number(ds, "temperature", 0.1);
  am_record_set_string(ds, "readout", "last");
  v = test_view(W.data(), {1, 1}, 0);
  am_record_set_array(am_record_object(ds, "attention"), "l1_h1", &v);
  {  // with room for ξ (1 MB) but not for the kernels (12.8 GB), the estimator refuses before building the theory
    const Limit room("64M");
    am_record *run = nullptr;
    REQUIRE(am_record_create(&run) == AM_OK);
    const double before = peak_mb();
    CHECK(am::attention::estimate(ctx.c, ds, no_inputs(), am::attention::Options(), run) == AM_ERR_NO_MEMORY);
    CHECK(ctx.err().find("the run (P = 100000, N0 = 1, 1 path, alignment) needs") != std::string::npos);
    CHECK(ctx.err().find("AM_MEMORY_LIMIT allows 0.1 GB") != std::string::npos);
    CHECK(peak_mb() - before < 50);
    am_record_destroy(&run);
  }
  am_record_destroy(&ds);
}
