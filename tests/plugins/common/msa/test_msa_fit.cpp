// The alignment fit of the estimator "pseudolikelihood" (msa_fit.h) through records: a planted contact ranks first
// with both parametrisations, the run keys (docs/msa.md), gaps as missing or as a state, weights as repeated
// sequences, clear refusals of bad datasets; and the L-BFGS window rules' guard. (Which datasets reach this fit:
// tests/plugins/estimator-pseudolikelihood.)
#include <doctest/doctest.h>

#include <attnmech/array.h>
#include <attnmech/record.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../../handles.hpp"  // Rec, num, shape_of, vec
#include "lbfgs.h"
#include "msa_fit.h"
#include "msa_scores.h"
#include "potts_estimators.h"

using namespace am::potts;
using namespace am::msa;

using am_test::Rec;
using am_test::num;
using am_test::shape_of;
using am_test::vec;

namespace {

void set_tokens(am_record *ds, const char *key, const std::vector<int32_t> &t, size_t M, size_t L) {
  const size_t sh[2] = {M, L};
  const am_array_view v = am_array_view_make(AM_I32, 2, sh, 0, t.data());
  am_record_set_array(ds, key, &v);
}

// M sequences over "-ACG" (gap = 0), L = 6: site 4 copies site 1 with probability 0.9, other letters uniform over
// A, C, G, about 5 % gaps.
std::vector<int32_t> planted(std::mt19937_64 &g, size_t M) {
  std::uniform_int_distribution<int> letter(1, 3);
  std::bernoulli_distribution copy(0.9), gap(0.05);
  std::vector<int32_t> t(M * 6);
  for (size_t mu = 0; mu < M; ++mu) {
    for (int i = 0; i < 6; ++i) t[mu * 6 + i] = letter(g);
    if (copy(g)) t[mu * 6 + 4] = t[mu * 6 + 1];
    for (int i = 0; i < 6; ++i)
      if (gap(g)) t[mu * 6 + i] = 0;
  }
  return t;
}

// An alignment dataset as the task msa writes it (weights 1 unless given).
void alignment_dataset(am_record *ds, const std::vector<int32_t> &t, size_t M, std::vector<double> w = {}) {
  am_record_set_string(ds, "kind", "sequence");
  am_record_set_bool(ds, "alignment", 1);
  am_record_set_number(ds, "C", 4);
  am_record_set_number(ds, "L", 6);
  set_tokens(ds, "tokens", t, M, 6);
  if (w.empty()) w.assign(M, 1.0);
  am_record_set_vector(ds, "weights", w.data(), M);
  am_record_set_string(ds, "alphabet", "-ACG");
  am_record_set_number(ds, "gap_state", 0);
  const double sites[6] = {10, 11, 12, 14, 15, 16};
  am_record_set_vector(ds, "site_numbers", sites, 6);
  am_record_set_string(ds, "focus_sequence", "MKVLAG");
}

}  // namespace

TEST_CASE("alignment fit: the planted contact ranks first, with the documented run keys (factored and potts)") {
  std::mt19937_64 g(31);
  const size_t M = 400;
  const auto t = planted(g, M);
  for (const char *model : {"factored", "potts"}) {
    Rec ds, run;
    alignment_dataset(ds.r, t, M);
    PLOptions o;
    FitOptions f;
    f.model = model;
    am_rng rng;
    am_rng_init(&rng, 3, 0);
    REQUIRE(run_msa_fit(nullptr, o, f, ds.r, rng, run.r) == AM_OK);
    CHECK(is_alignment_fit(run.r));  // the run key describe reads
    CHECK(num(run.r, "C") == 3);  // gaps auto = missing: the gap colour dropped
    CHECK(std::string(am_record_string(am_record_get(run.r, "alphabet"))) == "ACG");
    CHECK(std::string(am_record_string(am_record_get(run.r, "gaps"))) == "missing");
    CHECK(num(run.r, "neff") == 400);
    CHECK(num(run.r, "train_loss") < std::log(3.0) - 0.05);  // the copy is worth 0.9·log 3 nats at two sites of six
    CHECK(num(run.r, "iterations") >= 1);
    CHECK(std::string(am_record_string(am_record_get(run.r, "stop_reason"))).size() > 0);
    CHECK(vec(run.r, "site_numbers") == std::vector<double>{10, 11, 12, 14, 15, 16});
    CHECK(shape_of(run.r, "scores") == std::vector<size_t>{6, 6});
    CHECK(shape_of(run.r, "fn") == std::vector<size_t>{6, 6});
    const am_record *p = am_record_get(run.r, "params");
    REQUIRE(p != nullptr);
    CHECK(shape_of(p, "J") == std::vector<size_t>{6, 6, 3, 3});
    CHECK(shape_of(p, "h") == std::vector<size_t>{6, 3});
    CHECK((am_record_get(p, "A") != nullptr) == (std::string(model) == "factored"));
    const am_record *c = am_record_get(run.r, "contacts");
    REQUIRE(c != nullptr);
    const auto ci = vec(c, "i"), cj = vec(c, "j"), sc = vec(c, "score"), ri = vec(c, "res_i"), sep = vec(c, "separation");
    REQUIRE(ci.size() == 15);
    CHECK(ci[0] == 11);  // sites 1 and 4 → site numbers 11 and 15, focus letters K and A
    CHECK(cj[0] == 15);
    CHECK(ri[0] == 'K');
    CHECK(vec(c, "res_j")[0] == 'A');
    CHECK(sep[0] == 4);
    for (size_t k = 1; k < sc.size(); ++k) CHECK(sc[k] <= sc[k - 1]);
  }
}

TEST_CASE("alignment fit: gaps=state keeps the gap colour; fields=0 fits couplings only") {
  std::mt19937_64 g(32);
  const auto t = planted(g, 200);
  Rec ds, run;
  alignment_dataset(ds.r, t, 200);
  PLOptions o;
  FitOptions f;
  f.gaps = "state";
  f.fields = "0";
  o.max_iter = 30;
  am_rng rng;
  am_rng_init(&rng, 3, 0);
  REQUIRE(run_msa_fit(nullptr, o, f, ds.r, rng, run.r) == AM_OK);
  CHECK(num(run.r, "C") == 4);
  CHECK(std::string(am_record_string(am_record_get(run.r, "alphabet"))) == "-ACG");
  CHECK(am_record_bool(am_record_get(run.r, "fields")) == 0);
  CHECK(shape_of(am_record_get(run.r, "params"), "J") == std::vector<size_t>{6, 6, 4, 4});
  // the pair scores count the gap colour (plmc's couplings file norms every state); score_gap=exclude leaves it out
  const std::vector<double> J = vec(am_record_get(run.r, "params"), "J");
  CHECK(std::string(am_record_string(am_record_get(run.r, "score_gap"))) == "include");
  CHECK(vec(run.r, "fn") == frobenius_scores(J.data(), 6, 4, -1));
  CHECK(vec(run.r, "scores") == apc_scores(frobenius_scores(J.data(), 6, 4, -1), 6));
  Rec run2;
  f.score_gap = "exclude";
  REQUIRE(run_msa_fit(nullptr, o, f, ds.r, rng, run2.r) == AM_OK);
  CHECK(vec(am_record_get(run2.r, "params"), "J") == J);  // the same fit, only the scores differ
  CHECK(vec(run2.r, "fn") == frobenius_scores(J.data(), 6, 4, 0));
  CHECK(vec(run2.r, "fn") != vec(run.r, "fn"));
}

TEST_CASE("alignment fit: a weight of 2 is the sequence twice (potts model, strictly convex: one optimum)") {
  std::mt19937_64 g(33);
  const auto t = planted(g, 60);
  std::vector<int32_t> rep(t);
  rep.insert(rep.end(), t.begin(), t.begin() + 6 * 20);  // the first 20 sequences again
  std::vector<double> w(60, 1.0);
  for (int k = 0; k < 20; ++k) w[k] = 2.0;
  Rec a, b, ra, rb;
  alignment_dataset(a.r, t, 60, w);
  alignment_dataset(b.r, rep, 80);
  PLOptions o;
  FitOptions f;
  f.model = "potts";
  f.rtol = 0.0;  // run to the gradient rule: both fits reach the unique optimum
  o.gtol = 1e-10;
  am_rng rng;
  am_rng_init(&rng, 3, 0);
  REQUIRE(run_msa_fit(nullptr, o, f, a.r, rng, ra.r) == AM_OK);
  REQUIRE(run_msa_fit(nullptr, o, f, b.r, rng, rb.r) == AM_OK);
  CHECK(num(ra.r, "neff") == 80);
  CHECK(num(ra.r, "neff") == num(rb.r, "neff"));
  // same objective function up to round-off, minimised to ‖g‖ < 1e-10: optimum values agree to ~1e-12 (quadratic
  // in the distance to the optimum); the scores to the distance itself, ≲ 1e-8 at this conditioning
  CHECK(num(ra.r, "objective") == doctest::Approx(num(rb.r, "objective")).epsilon(1e-11));
  const auto sa = vec(am_record_get(ra.r, "contacts"), "score"), sb = vec(am_record_get(rb.r, "contacts"), "score");
  REQUIRE(sa.size() == sb.size());
  for (size_t k = 0; k < sa.size(); ++k) CHECK(sa[k] == doctest::Approx(sb[k]).epsilon(1e-6));
}

TEST_CASE("alignment fit: clear refusals of bad datasets and options") {
  std::mt19937_64 g(35);
  const auto t = planted(g, 20);
  am_context *ctx = nullptr;
  REQUIRE(am_context_create(&ctx, nullptr) == AM_OK);
  am_rng rng;
  am_rng_init(&rng, 3, 0);
  auto run_with = [&](void (*spoil)(am_record *), PLOptions o, FitOptions f, const char *needle) {
    Rec ds, run;
    alignment_dataset(ds.r, t, 20);
    if (spoil) spoil(ds.r);
    const am_status st = run_msa_fit(ctx, o, f, ds.r, rng, run.r);
    CHECK(st != AM_OK);
    const char *msg = am_context_last_error(ctx);
    INFO(msg);
    CHECK((msg && std::string(msg).find(needle) != std::string::npos));
  };
  PLOptions o;
  FitOptions f;
  run_with([](am_record *d) { am_record_set_string(d, "alphabet", "-AC"); }, o, f, "alphabet");
  run_with([](am_record *d) { const double w[3] = {1, 1, 1}; am_record_set_vector(d, "weights", w, 3); }, o, f,
           "weights");
  run_with([](am_record *d) {
    std::vector<double> w(20, 1.0);
    w[4] = -1;
    am_record_set_vector(d, "weights", w.data(), 20);
  }, o, f, "weights");
  run_with([](am_record *d) { am_record_set_number(d, "gap_state", 7); }, o, f, "gap_state");
  run_with([](am_record *d) { am_record_set_string(d, "focus_sequence", "MK"); }, o, f, "focus_sequence");
  run_with([](am_record *d) { const double s[2] = {1, 2}; am_record_set_vector(d, "site_numbers", s, 2); }, o, f,
           "site_numbers");
  run_with([](am_record *d) {
    am_record_set_string(d, "alphabet", "XACG");
    am_record_set_number(d, "gap_state", -1);
  }, o, [] { FitOptions p; p.gaps = "missing"; return p; }(), "gap");
  run_with([](am_record *d) { set_tokens(d, "tokens", std::vector<int32_t>(20 * 6, 0), 20, 6); }, o, f,
           "no training token");
  run_with(nullptr, [] { PLOptions p; p.optimizer = "adam"; return p; }(), f, "optimizer=lbfgs");
  am_context_destroy(&ctx);
}

TEST_CASE("L-BFGS window rules: the progress guard keeps a rule from firing near the start, and says why it stopped") {
  // Rosenbrock + 1 from (−1.2, 1): f falls from 25.2 to its minimum 1 in ~35 iterations. A window tolerance of 1e3
  // is met by every window, so without the guard the rule fires as soon as there is a window (iteration 5), while
  // the descent of that window is still more than 1 % of the descent so far; with the guard it fires only once the
  // window's decrease is ≤ 1 % of the decrease since the start.
  const Objective rosen = [](const double *x, double *g) {
    const double a = 1 - x[0], b = x[1] - x[0] * x[0];
    g[0] = -2 * a - 400 * x[0] * b;
    g[1] = 200 * b;
    return 1 + a * a + 100 * b * b;
  };
  LbfgsOptions lo;
  lo.window = 5;
  lo.window_tol = 1e3;
  double x[2] = {-1.2, 1.0};
  LbfgsResult r = lbfgs_minimize(2, x, rosen, lo);
  CHECK(r.status == LBFGS_WINDOW);
  CHECK(r.iterations == 5);
  CHECK(r.window_decrease > 0.01 * r.total_decrease);
  lo.window_progress = 0.01;
  double y[2] = {-1.2, 1.0};
  r = lbfgs_minimize(2, y, rosen, lo);
  CHECK(r.status == LBFGS_WINDOW);
  CHECK(r.iterations > 5);
  CHECK(r.window_decrease <= 0.01 * r.total_decrease);
  CHECK(r.total_decrease == doctest::Approx(25.2 - r.f).epsilon(1e-12));
  CHECK(r.reason.rfind("window rule (", 0) == 0);
  // the relative rule: decrease ≤ rtol·|f| over the window, same guard
  lo.window_tol = 0.0;
  lo.window_rtol = 1e-4;
  double z[2] = {-1.2, 1.0};
  r = lbfgs_minimize(2, z, rosen, lo);
  CHECK(r.status == LBFGS_WINDOW);
  CHECK(r.window_decrease <= 1e-4 * std::fabs(r.f));
  CHECK(r.f < 1 + 1e-4);
  CHECK(r.reason.find("rtol") != std::string::npos);
  // the other reasons
  LbfgsOptions few;
  few.max_iter = 3;
  double u[2] = {-1.2, 1.0};
  CHECK(lbfgs_minimize(2, u, rosen, few).reason == "max_iter");
  double v[2] = {1.0, 1.0};
  CHECK(lbfgs_minimize(2, v, rosen, few).reason.rfind("gradient (", 0) == 0);
  double w[2] = {-1.2, 1.0};
  CHECK(lbfgs_minimize(2, w, rosen, few, [](int, double, double, const double *, double) { return false; }).reason ==
        "cancelled");
}

TEST_CASE("L-BFGS reports how far its nearest stopping rule is from firing (the progress ETA's measure)") {
  // Rosenbrock + 1 from (−1.2, 1). The callback's to_stop is the nearest rule's measure over its threshold: ≤ 1
  // exactly when that rule fires, > 1 before; never a share of max_iter.
  const Objective rosen = [](const double *x, double *g) {
    const double a = 1 - x[0], b = x[1] - x[0] * x[0];
    g[0] = -2 * a - 400 * x[0] * b;
    g[1] = 200 * b;
    return 1 + a * a + 100 * b * b;
  };
  std::vector<double> seen, gn;
  const IterationCallback record = [&](int, double, double g, const double *, double to_stop) {
    seen.push_back(to_stop);
    gn.push_back(g);
    return true;
  };
  LbfgsOptions lo;  // the gradient rule alone: to_stop = ‖g‖ / gtol
  lo.gtol = 1e-6;
  lo.ftol = 0.0;
  double x[2] = {-1.2, 1.0};
  LbfgsResult r = lbfgs_minimize(2, x, rosen, lo, record);
  CHECK(r.status == LBFGS_CONVERGED);
  REQUIRE(seen.size() == (size_t)r.iterations);
  for (size_t k = 0; k < seen.size(); ++k) CHECK(seen[k] == doctest::Approx(gn[k] / 1e-6).epsilon(1e-12));
  CHECK(seen.back() < 1.0);
  for (size_t k = 0; k + 1 < seen.size(); ++k) CHECK(seen[k] >= 1.0);  // it stopped at the first ≤ 1
  // The window rule with its guard, gtol and ftol off: NaN before the first full window (no rule can tell), then
  // > 1 until the report where the rule fired (≤ 1).
  seen.clear();
  gn.clear();
  lo.gtol = 0.0;
  lo.window = 5;
  lo.window_tol = 1e-3;
  lo.window_progress = 0.01;
  double y[2] = {-1.2, 1.0};
  r = lbfgs_minimize(2, y, rosen, lo, record);
  CHECK(r.status == LBFGS_WINDOW);
  REQUIRE(seen.size() == (size_t)r.iterations);
  for (size_t k = 0; k < 4; ++k) CHECK(std::isnan(seen[k]));
  CHECK(seen.back() <= 1.0);
  for (size_t k = 4; k + 1 < seen.size(); ++k) CHECK(seen[k] > 1.0);
}

TEST_CASE("L-BFGS stop check: asked before every evaluation, it ends the search at once at the last accepted point") {
  const Objective rosen = [](const double *x, double *g) {
    const double a = 1 - x[0], b = x[1] - x[0] * x[0];
    g[0] = -2 * a - 400 * x[0] * b;
    g[1] = 200 * b;
    return 1 + a * a + 100 * b * b;
  };
  int evals = 0;
  const Objective counted = [&](const double *x, double *g) {
    ++evals;
    return rosen(x, g);
  };
  LbfgsOptions lo;
  lo.stop = [&] { return evals >= 12; };  // a cancel arriving inside the run: at the 13th evaluation
  double x[2] = {-1.2, 1.0};
  const LbfgsResult r = lbfgs_minimize(2, x, counted, lo);
  CHECK(r.status == LBFGS_CANCELLED);
  CHECK(r.reason == "cancelled");
  CHECK(evals == 12);  // not one evaluation more
  CHECK(r.iterations > 0);
  double g[2];
  CHECK(rosen(x, g) == doctest::Approx(r.f).epsilon(1e-15));  // x is the accepted iterate the result describes
}
