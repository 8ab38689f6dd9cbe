// attnmech — damped Newton minimiser over an objective interface (see solver.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "attnmech/solver.h"
#include "abi.hpp"
#include "internal.hpp"
#include "linalg.hpp"

using am::la::vec;

extern "C" AM_API void am_newton_settings_init(am_newton_settings *s, size_t size) {
  am_newton_settings d;
  std::memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.max_iter = 100;
  d.grad_tol = 1e-10;
  d.decrement_tol = 1e-20;
  d.armijo = 1e-4;
  d.max_backtracks = 60;
  am::init_struct(s, size, d);
}

namespace {

double max_abs(const double *g, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(g[i]));
  return m;
}

// Solve (H + λI) δ = −g by Cholesky. On success returns true and fills δ.
bool damped_solve(const vec &H, size_t n, double lambda, const vec &g, vec &delta, vec &work) {
  work = H;
  for (size_t i = 0; i < n; ++i) work[i + i * n] += lambda;
  if (!am::la::chol(work.data(), n, n)) return false;
  for (size_t i = 0; i < n; ++i) delta[i] = -g[i];
  am::la::chol_solve(work.data(), n, n, delta.data(), 1, n);
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(delta[i])) return false;
  return true;
}

// The gradient and Hessian an objective returned: a non-finite entry would make every damped system fail.
am_status check_derivatives(am_context *ctx, const vec &g, const vec &H, uint32_t it) {
  if (am::all_finite(g.data(), g.size()) && am::all_finite(H.data(), H.size())) return AM_OK;
  return am::fail(ctx, AM_ERR_NONFINITE, "Newton: the objective's %s has non-finite entries at iteration %u",
                  am::all_finite(g.data(), g.size()) ? "Hessian" : "gradient", it);
}

// The checked copies of the caller's objective and settings (growable structs) and the report's size.
am_status accept_inputs(am_context *ctx, const am_objective *obj_in, const am_newton_settings *s_in,
                        const am_newton_report *rep, am_objective &objective, am_newton_settings &s) {
  std::memset(&objective, 0, sizeof objective);
  objective.struct_size = sizeof objective;
  if (am_status st = am::accept_struct(ctx, obj_in, objective, am::kMinObjective, "am_objective")) return st;
  if (!objective.eval) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "the objective has no eval function");
  am_newton_default_settings(&s);
  if (s_in)
    if (am_status st = am::accept_struct(ctx, s_in, s, am::kMinNewtonSettings, "am_newton_settings")) return st;
  if (rep && rep->struct_size < am::kSizeFieldEnd)
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_newton_report.struct_size is %u: the caller sets it to "
                    "sizeof(am_newton_report)", rep->struct_size);
  if (!(s.grad_tol >= 0) || !(s.decrement_tol >= 0) || !(s.armijo > 0 && s.armijo < 1) || s.max_backtracks == 0)
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "invalid Newton settings: grad_tol = %g and decrement_tol = %g must be "
                    ">= 0, armijo = %g in (0, 1), max_backtracks = %u > 0", s.grad_tol, s.decrement_tol, s.armijo,
                    s.max_backtracks);
  return AM_OK;
}

// The iterate and everything the solver keeps about it; the solver sees the problem only through `obj`.
struct newton_state {
  am_context *ctx;
  const am_objective *obj;
  const am_newton_settings &s;
  am_newton_report *rep;
  size_t n;
  double *x;
  double f = 0;
  vec g, H, delta, work, xn;
  am_newton_report r;
  // Round-off stall detection (see stalled()).
  double prev_dec = INFINITY;
  int stalls = 0;

  newton_state(am_context *c, const am_objective *o, const am_newton_settings &st, am_newton_report *rp, double *xx)
      : ctx(c), obj(o), s(st), rep(rp), n(o->n), x(xx), g(n), H(n * n), delta(n), xn(n) {
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.status = AM_ERR_NOT_CONVERGED;
  }
  double measure(const double *xx, const double *gg) const {
    return obj->grad_measure ? obj->grad_measure(obj->user, xx, gg) : max_abs(gg, n);
  }
  // Fill the report at the current iterate and hand back `status`.
  am_status finish(am_status status) {
    r.f = f;
    r.grad_measure = measure(x, g.data());
    r.grad_norm = cblas_dnrm2((int)n, g.data(), 1);
    r.hessian_min_eig = am::la::min_eig(H.data(), n, n);
    r.status = status;
    if (rep) am::emit_struct(ctx, rep, r, "am_newton_report");
    return status;
  }
};

// Newton direction δ = −(H + λI)⁻¹g with a positive-definite guard: λ = 0 when H is positive definite, else from
// H's smallest eigenvalue, raised tenfold until the Cholesky factorisation succeeds.
am_status newton_direction(newton_state &ns, uint32_t it, double hmax, double &lambda) {
  lambda = 0.0;
  if (damped_solve(ns.H, ns.n, 0.0, ns.g, ns.delta, ns.work)) return AM_OK;
  const double lmin = am::la::min_eig(ns.H.data(), ns.n, ns.n);
  lambda = -std::min(lmin, 0.0) + 1e-3 * std::max(hmax, 1e-300);
  // H + λI is positive definite once λ exceeds −λ_min(H); the loop ends well before λ overflows unless the
  // Hessian's scale itself is at the edge of float64 (λ_min NaN, or hmax·10^k overflowing).
  while (!damped_solve(ns.H, ns.n, lambda, ns.g, ns.delta, ns.work)) {
    lambda *= 10;
    if (!std::isfinite(lambda))
      return am::fail(ns.ctx, AM_ERR_NONFINITE, "Newton: no damping makes the Hessian positive definite at iteration "
                      "%u (largest |H| entry %.3e): the objective's scale exceeds float64", it, hmax);
  }
  return AM_OK;
}

// Stopping test on Newton's decrement (undamped steps only): below decrement_tol, or stalled in round-off.
// Near a minimum the decrement squares from one iteration to the next (quadratic convergence). Once it is tiny
// (≤ 1e-10·max(1,|f|)) and two successive iterations fail to shrink it 100-fold, the iterates are moving in
// round-off noise: stop with AM_CONVERGED_ROUNDOFF.
bool decrement_converged(newton_state &ns, double dec, double lambda, double scale) {
  if (lambda == 0.0 && dec <= ns.s.decrement_tol * scale) return true;
  if (lambda == 0.0 && dec <= 1e-10 * scale && dec > 1e-2 * ns.prev_dec) {
    if (++ns.stalls >= 2) return true;
  } else {
    ns.stalls = 0;
  }
  ns.prev_dec = lambda == 0.0 ? dec : INFINITY;
  return false;
}

// Backtracking (Armijo) line search along δ into xn; on failure, damp harder (λ tenfold) and retry, 8 times at
// most. A trial point outside the objective's domain halves the step.
am_status line_search(newton_state &ns, double lambda, double hmax, bool &accepted) {
  const size_t n = ns.n;
  accepted = false;
  for (int damp = 0; damp < 8 && !accepted; ++damp) {
    const double slope = cblas_ddot((int)n, ns.g.data(), 1, ns.delta.data(), 1);  // < 0
    double t = 1.0;
    for (uint32_t bt = 0; bt < ns.s.max_backtracks; ++bt, t *= 0.5) {
      for (size_t i = 0; i < n; ++i) ns.xn[i] = ns.x[i] + t * ns.delta[i];
      double fn = 0;
      const am_status st = ns.obj->eval(ns.obj->user, ns.xn.data(), &fn, nullptr, nullptr);
      if (st == AM_ERR_DOMAIN) continue;
      if (st) return st;
      if (std::isfinite(fn) && fn <= ns.f + ns.s.armijo * t * slope) {
        accepted = true;
        break;
      }
    }
    if (!accepted) {
      lambda = lambda > 0 ? lambda * 10 : 1e-3 * std::max(hmax, 1e-300);
      if (!damped_solve(ns.H, n, lambda, ns.g, ns.delta, ns.work)) continue;
    }
  }
  return AM_OK;
}

// Move to the accepted point xn and evaluate value, gradient and Hessian there.
am_status accept_step(newton_state &ns, uint32_t it) {
  std::memcpy(ns.x, ns.xn.data(), ns.n * sizeof(double));
  const am_status st = ns.obj->eval(ns.obj->user, ns.x, &ns.f, ns.g.data(), ns.H.data());
  if (st) {
    const std::string why = am_context_last_error(ns.ctx);
    return am::fail(ns.ctx, st, "objective failed at an accepted point (iteration %u)%s%s", it + 1,
                    why.empty() ? "" : ": ", why.c_str());
  }
  return check_derivatives(ns.ctx, ns.g, ns.H, it + 1);
}

// One Newton iteration from the current point: false to go on (the iterate moved), true when the solve ends
// with status `out`.
bool newton_iteration(newton_state &ns, uint32_t it, am_status &out) {
  const size_t n = ns.n;
  const am_newton_settings &s = ns.s;
  ns.r.iterations = it;
  const double scale = std::max(1.0, std::fabs(ns.f));
  if (!std::isfinite(ns.f))
    return out = am::fail(ns.ctx, AM_ERR_NONFINITE, "objective is not finite at iteration %u", it), true;
  if (ns.measure(ns.x, ns.g.data()) <= s.grad_tol * scale) {
    // decrement at the accepted point, for the report
    if (damped_solve(ns.H, n, 0.0, ns.g, ns.delta, ns.work))
      ns.r.decrement = -cblas_ddot((int)n, ns.g.data(), 1, ns.delta.data(), 1);
    return out = ns.finish(AM_OK), true;
  }
  if (it >= s.max_iter) {
    ns.finish(AM_ERR_NOT_CONVERGED);
    out = am::fail(ns.ctx, AM_ERR_NOT_CONVERGED,
                   "Newton did not converge in %u iterations: max|G| = %.3e (tolerance %.1e), |g| = %.3e", it,
                   ns.r.grad_measure, s.grad_tol * scale, ns.r.grad_norm);
    return true;
  }
  double lambda;
  const double hmax = max_abs(ns.H.data(), n * n);
  if ((out = newton_direction(ns, it, hmax, lambda))) return true;
  const double dec = -cblas_ddot((int)n, ns.g.data(), 1, ns.delta.data(), 1);
  ns.r.decrement = dec;
  if (decrement_converged(ns, dec, lambda, scale)) return out = ns.finish(AM_CONVERGED_ROUNDOFF), true;
  bool accepted;
  if ((out = line_search(ns, lambda, hmax, accepted))) return true;
  if (!accepted) {
    if (dec <= s.decrement_tol * scale * 1e6) return out = ns.finish(AM_CONVERGED_ROUNDOFF), true;
    ns.finish(AM_ERR_NOT_CONVERGED);
    out = am::fail(ns.ctx, AM_ERR_NOT_CONVERGED, "Newton line search failed at iteration %u: max|G| = %.3e, "
                   "decrement %.3e", it, ns.r.grad_measure, dec);
    return true;
  }
  if ((out = accept_step(ns, it))) return true;
  // Open-ended: the gradient measure against its tolerance at the new point, never a share of max_iter (a cap).
  const double measure = ns.measure(ns.x, ns.g.data()), target = s.grad_tol * std::max(1.0, std::fabs(ns.f));
  if (am_context_convergence(ns.ctx, it + 1, measure, target, "newton")) {
    ns.finish(AM_CANCELLED);
    return out = AM_CANCELLED, true;
  }
  return false;
}

}  // namespace

extern "C" AM_API am_status am_newton_minimize(am_context *ctx, const am_objective *obj_in,
                                               const am_newton_settings *s_in, double *x, am_newton_report *rep) {
  return am::guarded(ctx, [&]() -> am_status {
    if (!obj_in || !x) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "objective or x is NULL");
    am_objective objective;
    am_newton_settings s;
    if (am_status st = accept_inputs(ctx, obj_in, s_in, rep, objective, s)) return st;
    newton_state ns(ctx, &objective, s, rep, x);
    am_status st = objective.eval(objective.user, x, &ns.f, ns.g.data(), ns.H.data());
    if (st == AM_ERR_DOMAIN) return am::fail(ctx, AM_ERR_DOMAIN, "the starting point is outside the objective's domain");
    if (st) return st;
    AM_TRY(check_derivatives(ctx, ns.g, ns.H, 0));
    for (uint32_t it = 0;; ++it)
      if (newton_iteration(ns, it, st)) return st;
  });
}
