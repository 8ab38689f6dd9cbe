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

}  // namespace

extern "C" AM_API am_status am_newton_minimize(am_context *ctx, const am_objective *obj_in,
                                               const am_newton_settings *s_in, double *x, am_newton_report *rep) {
  return am::guarded(ctx, [&]() -> am_status {
    if (!obj_in || !x) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "objective or x is NULL");
    am_objective objective;
    std::memset(&objective, 0, sizeof objective);
    objective.struct_size = sizeof objective;
    if (am_status st = am::accept_struct(ctx, obj_in, objective, am::kMinObjective, "am_objective")) return st;
    const am_objective *obj = &objective;
    if (!obj->eval) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "the objective has no eval function");
    am_newton_settings s;
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
    const size_t n = obj->n;
    am_newton_report r;
    std::memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.status = AM_ERR_NOT_CONVERGED;
    vec g(n), H(n * n), delta(n), work, xn(n);
    double f = 0;
    am_status st = obj->eval(obj->user, x, &f, g.data(), H.data());
    if (st == AM_ERR_DOMAIN) return am::fail(ctx, AM_ERR_DOMAIN, "the starting point is outside the objective's domain");
    if (st) return st;
    if ((st = check_derivatives(ctx, g, H, 0))) return st;
    auto measure = [&](const double *xx, const double *gg) {
      return obj->grad_measure ? obj->grad_measure(obj->user, xx, gg) : max_abs(gg, n);
    };
    auto finish = [&](am_status status) {
      r.f = f;
      r.grad_measure = measure(x, g.data());
      r.grad_norm = cblas_dnrm2((int)n, g.data(), 1);
      r.hessian_min_eig = am::la::min_eig(H.data(), n, n);
      r.status = status;
      if (rep) am::emit_struct(ctx, rep, r, "am_newton_report");
      return status;
    };
    // Round-off stall detection: near a minimum Newton's decrement squares from one iteration to the next
    // (quadratic convergence). Once it is tiny (≤ 1e-10·max(1,|f|)) and two successive iterations fail to
    // shrink it 100-fold, the iterates are moving in round-off noise: stop with AM_CONVERGED_ROUNDOFF.
    double prev_dec = INFINITY;
    int stalls = 0;
    for (uint32_t it = 0;; ++it) {
      r.iterations = it;
      const double scale = std::max(1.0, std::fabs(f));
      if (!std::isfinite(f)) return am::fail(ctx, AM_ERR_NONFINITE, "objective is not finite at iteration %u", it);
      if (measure(x, g.data()) <= s.grad_tol * scale) {
        // decrement at the accepted point, for the report
        if (damped_solve(H, n, 0.0, g, delta, work)) r.decrement = -cblas_ddot((int)n, g.data(), 1, delta.data(), 1);
        return finish(AM_OK);
      }
      if (it >= s.max_iter) {
        finish(AM_ERR_NOT_CONVERGED);
        return am::fail(ctx, AM_ERR_NOT_CONVERGED,
                        "Newton did not converge in %u iterations: max|G| = %.3e (tolerance %.1e), |g| = %.3e", it,
                        r.grad_measure, s.grad_tol * scale, r.grad_norm);
      }
      // Newton direction with a positive-definite guard.
      double lambda = 0.0;
      const double hmax = max_abs(H.data(), n * n);
      if (!damped_solve(H, n, 0.0, g, delta, work)) {
        const double lmin = am::la::min_eig(H.data(), n, n);
        lambda = -std::min(lmin, 0.0) + 1e-3 * std::max(hmax, 1e-300);
        // H + λI is positive definite once λ exceeds −λ_min(H); the loop ends well before λ overflows unless the
        // Hessian's scale itself is at the edge of float64 (λ_min NaN, or hmax·10^k overflowing).
        while (!damped_solve(H, n, lambda, g, delta, work)) {
          lambda *= 10;
          if (!std::isfinite(lambda))
            return am::fail(ctx, AM_ERR_NONFINITE, "Newton: no damping makes the Hessian positive definite at iteration "
                            "%u (largest |H| entry %.3e): the objective's scale exceeds float64", it, hmax);
        }
      }
      double dec = -cblas_ddot((int)n, g.data(), 1, delta.data(), 1);
      r.decrement = dec;
      if (lambda == 0.0 && dec <= s.decrement_tol * scale) return finish(AM_CONVERGED_ROUNDOFF);
      if (lambda == 0.0 && dec <= 1e-10 * scale && dec > 1e-2 * prev_dec) {
        if (++stalls >= 2) return finish(AM_CONVERGED_ROUNDOFF);
      } else {
        stalls = 0;
      }
      prev_dec = lambda == 0.0 ? dec : INFINITY;
      // Backtracking line search; on failure, damp harder and retry.
      bool accepted = false;
      for (int damp = 0; damp < 8 && !accepted; ++damp) {
        const double slope = cblas_ddot((int)n, g.data(), 1, delta.data(), 1);  // < 0
        double t = 1.0;
        for (uint32_t bt = 0; bt < s.max_backtracks; ++bt, t *= 0.5) {
          for (size_t i = 0; i < n; ++i) xn[i] = x[i] + t * delta[i];
          double fn = 0;
          st = obj->eval(obj->user, xn.data(), &fn, nullptr, nullptr);
          if (st == AM_ERR_DOMAIN) continue;
          if (st) return st;
          if (std::isfinite(fn) && fn <= f + s.armijo * t * slope) {
            accepted = true;
            break;
          }
        }
        if (!accepted) {
          lambda = lambda > 0 ? lambda * 10 : 1e-3 * std::max(hmax, 1e-300);
          if (!damped_solve(H, n, lambda, g, delta, work)) continue;
        }
      }
      if (!accepted) {
        if (dec <= s.decrement_tol * scale * 1e6) return finish(AM_CONVERGED_ROUNDOFF);
        finish(AM_ERR_NOT_CONVERGED);
        return am::fail(ctx, AM_ERR_NOT_CONVERGED,
                        "Newton line search failed at iteration %u: max|G| = %.3e, decrement %.3e", it, r.grad_measure,
                        dec);
      }
      std::memcpy(x, xn.data(), n * sizeof(double));
      st = obj->eval(obj->user, x, &f, g.data(), H.data());
      if (st) {
        const std::string why = am_context_last_error(ctx);
        return am::fail(ctx, st, "objective failed at an accepted point (iteration %u)%s%s", it + 1, why.empty() ? "" : ": ",
                        why.c_str());
      }
      if ((st = check_derivatives(ctx, g, H, it + 1))) return st;
      if (am_context_progress(ctx, it + 1, s.max_iter, "newton")) {
        finish(AM_CANCELLED);
        return AM_CANCELLED;
      }
    }
  });
}
