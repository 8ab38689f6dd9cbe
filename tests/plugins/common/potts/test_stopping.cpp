// The stopping rule of the factored fit on weakly coupled sequences (issue 39.5: bench_potts's protein case went from
// 19 iterations and a coupling correlation of 0.806 to 78 iterations and 0.624). The cause is the window rules'
// progress guard (PLOptions::stop_progress, 0.01, added with the alignment fit): the window rule (the loss fell by at
// most tol = stop_tol·n_params/(2ML) over the last 10 iterations) fires only once that fall is also at most 1 % of the
// fall since the start. On weak couplings the whole fall available — from log C at the start down to the truth's own
// loss ε* on the sample — is below tol/1 %, so the guard is the stricter test and the fit goes on into the sample's
// noise. The stops are derived here from the loss after each iteration, with and without the guard. Also here: the
// default rule (stop_tol 1 since 3.8, issue 41.5) against the long fit on a small strongly coupled case — where it
// stops on the loss trajectory, how far the loss is from its plateau there, and the reconstruction at the stop.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "factored.h"
#include "lbfgs.h"
#include "potts_estimators.h"
#include "potts_model.h"
#include "test_host.hpp"

using namespace am::potts;

namespace {

// One factored fit as the estimator starts it (W = 0, V ~ N(0, 1e-4) from stream `seed`), the loss before it and
// after every iteration in hist.
struct EstimatorFit {
  FactoredModel fm;
  std::vector<double> theta, hist;
  LbfgsResult res;
  EstimatorFit(int L, int C) : fm(L, C, 1) {}
  void run(const PLOptions &o, const std::vector<int32_t> &tok, size_t M, uint64_t seed) {
    const int C = fm.C();
    theta.assign(fm.n_params(), 0.0);
    am_rng r;
    am_rng_init(&r, seed, 0);
    am_rng_fill_normal(&r, fm.V(theta.data(), 0), (size_t)C * C);
    for (int k = 0; k < C * C; ++k) fm.V(theta.data(), 0)[k] *= 1e-2;
    fm.set_parallel(o.parallel);
    hist = {fm.loss(theta.data(), tok.data(), M, nullptr)};
    res = fit_factored(fm, theta, tok.data(), M, o, [&](int, double fx, double, const double *, double) {
      hist.push_back(fx);
      return true;
    });
  }
};

// Zero-sum gauged C×C blocks (row and column means removed) of every pair i < j.
void zero_sum(std::vector<double> &e, int L, int C) {
  const size_t P = (size_t)L * (L - 1) / 2, CC = (size_t)C * C;
  for (size_t p = 0; p < P; ++p) {
    double *b = e.data() + p * CC, all = 0;
    std::vector<double> rm(C, 0.0), cm(C, 0.0);
    for (int a = 0; a < C; ++a)
      for (int c = 0; c < C; ++c) rm[a] += b[a * C + c], cm[c] += b[a * C + c], all += b[a * C + c];
    for (int a = 0; a < C; ++a)
      for (int c = 0; c < C; ++c) b[a * C + c] += -rm[a] / C - cm[c] / C + all / ((double)C * C);
  }
}

double pearson(const std::vector<double> &x, const std::vector<double> &y) {
  double mx = 0, my = 0;
  for (size_t k = 0; k < x.size(); ++k) mx += x[k], my += y[k];
  mx /= double(x.size());
  my /= double(y.size());
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t k = 0; k < x.size(); ++k)
    sxy += (x[k] - mx) * (y[k] - my), sxx += (x[k] - mx) * (x[k] - mx), syy += (y[k] - my) * (y[k] - my);
  return sxy / std::sqrt(sxx * syy);
}

// bench_potts's "couplings" figure: the fit's symmetrised ½(A_ij V_ab + A_ji V_ba) against the truth β J_ij U_ab, both
// zero-sum gauged, Pearson over every entry of every pair i < j.
double coupling_corr(const Model &m, const FactoredModel &fm, const double *th) {
  const int L = m.L, C = m.C;
  const size_t P = (size_t)L * (L - 1) / 2;
  std::vector<double> e(P * C * C), t(P * C * C), A((size_t)L * L);
  attention_from_W(fm.W(th, 0), L, A.data());
  const double *V = fm.V(th, 0);
  size_t p = 0;
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j < L; ++j, ++p)
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b) {
          const size_t k = (p * C + a) * C + b;
          e[k] = 0.5 * (A[i + (size_t)L * j] * V[a + (size_t)C * b] + A[j + (size_t)L * i] * V[b + (size_t)C * a]);
          t[k] = m.beta * m.J[i + (size_t)L * j] * m.U[a + (size_t)C * b];
        }
  zero_sum(e, L, C);
  zero_sum(t, L, C);
  return pearson(e, t);
}

// The first iteration k ≥ window whose window fall hist[k − window] − hist[k] is ≤ tol and, with the guard (p > 0),
// also ≤ p·(hist[0] − hist[k]); −1 if none. hist[0] is the loss at the start, hist[k] after iteration k.
int first_stop(const std::vector<double> &hist, int window, double tol, double p) {
  for (size_t k = window; k < hist.size(); ++k) {
    const double fall = hist[k - window] - hist[k], total = hist[0] - hist[k];
    if (fall <= tol && (p <= 0 || fall <= p * total)) return static_cast<int>(k);
  }
  return -1;
}

}  // namespace

TEST_CASE("stopping rule on weak couplings: the progress guard, not the window rule, decides the stop (issue 39.5)") {
  // bench_potts's protein case in small: β = 0.5 on L = 30, C = 6 (the bench: β = 1 on L = 200, C = 21), M = 1000
  const int L = 30, C = 6;
  const size_t M = 1000;
  const Model m = potts_test::sinkhorn_model(L, C, 0.5, 51);
  const std::vector<int32_t> tok = potts_test::draw(m, M, 52, 200);
  const double eps = epsilon_star(m, tok.data(), M);  // the truth's own loss on the sample
  using Fit = EstimatorFit;
  const auto fit = [&](const PLOptions &o, Fit &f) { f.run(o, tok, M, 53); };
  // the rule as the diagnosis measured it (stop_tol 0.1, the default before 3.8) with its guard (stop_progress 0.01),
  // and the rule alone as before the guard; the 3.8 default (stop_tol 1) is checked on the same trajectory below
  PLOptions guarded, plain;
  guarded.stop_tol = plain.stop_tol = 0.1;
  guarded.parallel = plain.parallel = potts_test::host_threads(2);
  plain.stop_progress = 0.0;
  Fit g(L, C), p(L, C);
  fit(guarded, g);
  fit(plain, p);
  const double tol = guarded.stop_tol * double(g.fm.n_params()) / (2.0 * double(M) * L), guard = guarded.stop_progress;
  const int window = guarded.stop_window;
  // each fit stops where its rule first holds on the loss trajectory — the same trajectory (L-BFGS is deterministic)
  const int k_rule = first_stop(g.hist, window, tol, 0.0), k_guard = first_stop(g.hist, window, tol, guard);
  CAPTURE(k_rule);
  CAPTURE(k_guard);
  CHECK(g.res.status == LBFGS_WINDOW);
  CHECK(p.res.status == LBFGS_WINDOW);
  CHECK(g.res.iterations == k_guard);
  CHECK(p.res.iterations == k_rule);
  CHECK(p.res.f == g.hist[k_rule]);  // the plain fit is the guarded one's first k_rule iterations, bit for bit
  CHECK(g.res.reason.rfind("window rule (decrease ", 0) == 0);
  // the regime: the fall available down to the truth's own loss is below tol/guard (here 0.016 against 0.156; the
  // bench's 0.033 against 0.202), so while the fit is above ε* the guard asks for a window fall under guard·(f0 − ε*)
  // < tol: the stricter test. At k_rule the rule held and the guard did not.
  CHECK(g.hist[0] - eps < tol / guard);
  const double fall = g.hist[k_rule - window] - g.hist[k_rule];
  CHECK(fall <= tol);
  CHECK(fall > guard * (g.hist[0] - g.hist[k_rule]));
  CHECK(k_guard > k_rule);
  // stop_tol 1 (3.8): here too the guard decides, at the same iteration (L-BFGS is deterministic: a fit with the
  // default options follows this trajectory until its rule first holds on it)
  const double tol_38 = PLOptions{}.stop_tol * double(g.fm.n_params()) / (2.0 * double(M) * L);
  CHECK(PLOptions{}.stop_tol == 1.0);
  CHECK(first_stop(g.hist, window, tol_38, PLOptions{}.stop_progress) == k_guard);
  // what the extra iterations buy: the sample's noise. The rule alone stops within its tolerance of the truth's own
  // loss on the sample (measured 0.00056 below it, tol 0.00156; the bench: 0.0008 above, tol 0.0020); the guarded fit
  // goes on below that band (measured 0.0099 below ε*; the bench 0.0124), and its couplings are further from the
  // truth (measured 16 iterations, correlation 0.808, against 55 and 0.602 — the bench: 19 and 0.806, 78 and 0.624)
  CHECK(std::fabs(p.res.f - eps) < tol);
  CHECK(eps - g.res.f > std::fabs(p.res.f - eps) + tol);
  const double corr_rule = coupling_corr(m, p.fm, p.theta.data()), corr_guard = coupling_corr(m, g.fm, g.theta.data());
  MESSAGE("window rule alone: " << k_rule << " iterations, couplings " << corr_rule << "; with the guard: " << k_guard
                                << " iterations, couplings " << corr_guard);
  CHECK(corr_rule > corr_guard);
}

TEST_CASE("stopping rule (3.8 default): stops where the reconstruction stops improving, not at the loss's plateau") {
  // the default task's regime in small (β = 2, strong couplings): L = 10, C = 6, M = 1500
  const int L = 10, C = 6;
  const size_t M = 1500;
  const Model m = potts_test::sinkhorn_model(L, C, 2.0, 36);
  const std::vector<int32_t> tok = potts_test::draw(m, M, 37, 100);
  using Fit = EstimatorFit;
  const auto fit = [&](const PLOptions &o, Fit &f) { f.run(o, tok, M, 38); };
  PLOptions def, old, longfit;  // the 3.8 default (stop_tol 1), the rule before 3.8 (0.1), the rule off
  def.parallel = old.parallel = longfit.parallel = potts_test::host_threads(2);
  old.stop_tol = 0.1;
  longfit.stop_tol = 0.0;  // ftol 1e-10 / gtol 1e-9 / 5000 iterations
  Fit d(L, C), o(L, C), l(L, C);
  fit(def, d);
  fit(old, o);
  fit(longfit, l);
  const double scale = double(d.fm.n_params()) / (2.0 * double(M) * L);  // n_params/(2ML) = 4.5e-3
  // where it stops: the first iteration whose last 10 iterations fell by at most the scale and by at most 1 % of the
  // fall since the start, on the long fit's own trajectory (the same iterates: L-BFGS is deterministic)
  const int k_def = first_stop(l.hist, def.stop_window, def.stop_tol * scale, def.stop_progress);
  const int k_old = first_stop(l.hist, old.stop_window, old.stop_tol * scale, old.stop_progress);
  CAPTURE(k_def);
  CAPTURE(k_old);
  CHECK(d.res.status == LBFGS_WINDOW);
  CHECK(d.res.iterations == k_def);
  CHECK(d.res.f == l.hist[k_def]);
  CHECK(o.res.iterations == k_old);
  CHECK(l.res.status != LBFGS_WINDOW);
  // measured: 3.8 default 25 iterations, before 3.8 41, the long fit 418–464 (by SIMD path: round-off decides where
  // ftol fires; the stops above are the same on every path)
  CHECK(k_def < k_old);
  CHECK(l.res.iterations > 10 * k_def);
  // the loss is not at its plateau: it is above the long fit's by a fraction of the scale (measured 0.27 of it; the
  // 0.1 rule 0.054). The rule only says the last 10 iterations fell by ≤ scale; as the fall slows geometrically what
  // remains is of the same order, so the bound asserted is the scale itself.
  const double above = (d.res.f - l.res.f) / scale;
  CAPTURE(above);
  CHECK(above > 0.05);
  CHECK(above < 1.0);
  // the reconstruction at the stop (the bench's coupling correlation, zero-sum gauge) is within 0.01 of the long fit's
  // and of the old rule's — the tolerance the rule was chosen for (docs/potts.md, "Where the fit stops"). Measured:
  // 0.959 against 0.929 (the long fit goes on over-fitting) and 0.961 (0.1 rule), on every SIMD path.
  const double c_def = coupling_corr(m, d.fm, d.theta.data()), c_old = coupling_corr(m, o.fm, o.theta.data()),
               c_long = coupling_corr(m, l.fm, l.theta.data());
  MESSAGE("stop_tol 1: " << k_def << " iterations, loss " << above << " scale above the long fit's, couplings "
                         << c_def << "; stop_tol 0.1: " << k_old << ", " << c_old << "; long fit: "
                         << l.res.iterations << ", " << c_long);
  CHECK(c_def > c_long - 0.01);
  CHECK(c_def > c_old - 0.01);
}
