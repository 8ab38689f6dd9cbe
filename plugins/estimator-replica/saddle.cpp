// Replica-symmetric saddle point (docs/replica.md "Saddle point"): damped fixed point on (V, m, q) and the
// equivalent 1-D equation for the effective regularisation kappa; optimal ridge; interpolation peak.
#include "replica.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

namespace am::replica {

// Brent–Dekker root finder: bisection safeguarding secant / inverse quadratic interpolation.
double brent_root(const std::function<double(double)> &f, double a, double b, double xtol, int max_iter) {
  double fa = f(a), fb = f(b);
  if (fa == 0) return a;
  if (fb == 0) return b;
  if ((fa > 0) == (fb > 0)) throw Error(AM_ERR_INTERNAL, "brent_root: the interval does not bracket a root");
  double c = a, fc = fa, d = b - a, e = d;
  for (int it = 0; it < max_iter; ++it) {
    if ((fb > 0) == (fc > 0)) {  // keep the root between b and c
      c = a;
      fc = fa;
      d = e = b - a;
    }
    if (std::fabs(fc) < std::fabs(fb)) {  // b is the best estimate
      a = b; b = c; c = a;
      fa = fb; fb = fc; fc = fa;
    }
    const double tol = 2.0 * DBL_EPSILON * std::fabs(b) + 0.5 * xtol;
    const double mid = 0.5 * (c - b);
    if (std::fabs(mid) <= tol || fb == 0) return b;
    if (std::fabs(e) >= tol && std::fabs(fa) > std::fabs(fb)) {
      double p, q, r;
      const double s = fb / fa;
      if (a == c) {  // secant
        p = 2.0 * mid * s;
        q = 1.0 - s;
      } else {       // inverse quadratic interpolation
        q = fa / fc;
        r = fb / fc;
        p = s * (2.0 * mid * q * (q - r) - (b - a) * (r - 1.0));
        q = (q - 1.0) * (r - 1.0) * (s - 1.0);
      }
      if (p > 0) q = -q; else p = -p;
      if (2.0 * p < std::min(3.0 * mid * q - std::fabs(tol * q), std::fabs(e * q))) {
        e = d;
        d = p / q;
      } else {
        d = mid;
        e = d;
      }
    } else {
      d = mid;
      e = d;
    }
    a = b;
    fa = fb;
    b += (std::fabs(d) > tol) ? d : (mid > 0 ? tol : -tol);
    fb = f(b);
  }
  return b;
}

// Brent's minimiser (golden section + parabolic interpolation) on [a, b].
double brent_min(const std::function<double(double)> &f, double a, double b, double xtol, int max_iter) {
  const double cgold = 0.3819660112501051;
  double x = a + cgold * (b - a), w = x, v = x;
  double fx = f(x), fw = fx, fv = fx;
  double d = 0, e = 0;
  for (int it = 0; it < max_iter; ++it) {
    const double m = 0.5 * (a + b);
    const double tol = std::sqrt(DBL_EPSILON) * std::fabs(x) + xtol / 3.0;
    if (std::fabs(x - m) <= 2.0 * tol - 0.5 * (b - a)) break;
    bool golden = true;
    if (std::fabs(e) > tol) {  // try a parabola through x, w, v
      double r = (x - w) * (fx - fv);
      double q = (x - v) * (fx - fw);
      double p = (x - v) * q - (x - w) * r;
      q = 2.0 * (q - r);
      if (q > 0) p = -p; else q = -q;
      if (std::fabs(p) < std::fabs(0.5 * q * e) && p > q * (a - x) && p < q * (b - x)) {
        e = d;
        d = p / q;
        const double u = x + d;
        if (u - a < 2.0 * tol || b - u < 2.0 * tol) d = (x < m) ? tol : -tol;
        golden = false;
      }
    }
    if (golden) {
      e = (x < m) ? b - x : a - x;
      d = cgold * e;
    }
    const double u = x + ((std::fabs(d) >= tol) ? d : (d > 0 ? tol : -tol));
    const double fu = f(u);
    if (fu <= fx) {
      if (u < x) b = x; else a = x;
      v = w; fv = fw;
      w = x; fw = fx;
      x = u; fx = fu;
    } else {
      if (u < x) a = u; else b = u;
      if (fu <= fw || w == x) {
        v = w; fv = fw;
        w = u; fw = fu;
      } else if (fu <= fv || v == x || v == w) {
        v = u; fv = fu;
      }
    }
  }
  return x;
}

double kappa0(const Spectrum &sp, double alpha) {
  if (!(alpha > 0 && alpha < 1)) throw Error(AM_ERR_DOMAIN, "kappa0 needs 0 < alpha < 1");
  // tau1(0) = 1 > alpha and tau1(k) <= mean_s / k, so tau1(mean_s/alpha) <= alpha.
  const double hi = sp.mean_s() / alpha;
  return brent_root([&](double k) { return sp.tau1(k) - alpha; }, 0.0, hi, 0.0);
}

namespace {

void check_inputs(double alpha, double lambda) {
  if (!(alpha > 0) || !std::isfinite(alpha)) throw Error(AM_ERR_DOMAIN, "replica: alpha must be > 0");
  if (!(lambda >= 0) || !std::isfinite(lambda)) throw Error(AM_ERR_DOMAIN, "replica: lambda must be >= 0");
}

}  // namespace

SaddleResult solve_fixed_point(const Spectrum &sp, double alpha, double lambda, const SaddleOptions &o) {
  check_inputs(alpha, lambda);
  const double s2 = sp.sigma2(), rho = sp.rho(), d = o.damping;
  double V = 1.0, m = 0.0, q = 0.0;
  SaddleResult r;
  for (int it = 1; it <= o.max_iter; ++it) {
    const double kappa = lambda * (1.0 + V);
    const SpectralValues sv = sp.eval(kappa);
    const double Vh = alpha / (1.0 + V);                                   // = m-hat
    const double qh = alpha * (s2 + rho - 2.0 * m + q) / ((1.0 + V) * (1.0 + V));
    const double Vn = sv.tau1 / Vh;
    const double mn = sv.T1;                                               // (m-hat / V-hat) = 1
    const double qn = sv.T2 + qh / (Vh * Vh) * sv.tau2;
    const double change = std::max({std::fabs(Vn - V) / (1.0 + std::fabs(Vn)), std::fabs(mn - m) / (1e-300 + std::fabs(mn) + rho),
                                    std::fabs(qn - q) / (1e-300 + std::fabs(qn) + rho)});
    V += d * (Vn - V);
    m += d * (mn - m);
    q += d * (qn - q);
    r.iterations = it;
    if (!std::isfinite(V) || !std::isfinite(q)) break;
    if (change < o.tol) {
      r.converged = true;
      break;
    }
  }
  r.V = V;
  r.m = m;
  r.q = q;
  r.kappa = lambda * (1.0 + V);
  r.eps = s2 + rho - 2.0 * m + q;
  r.used_root = false;
  return r;
}

SaddleResult solve_root(const Spectrum &sp, double alpha, double lambda, const SaddleOptions &o) {
  check_inputs(alpha, lambda);
  const double s2 = sp.sigma2(), rho = sp.rho();
  SaddleResult r;
  r.used_root = true;
  if (lambda == 0 && alpha == 1.0) {  // ridgeless interpolation threshold: eps diverges
    r.kappa = 0;
    r.V = r.q = r.eps = std::numeric_limits<double>::infinity();
    r.m = rho;
    r.converged = true;
    return r;
  }
  // lambda = kappa (1 - tau1(kappa)/alpha). The root lies in [lo, hi] with lo = max(lambda, kappa0)
  // (f(lo) <= 0) and hi = lambda + mean_s/alpha (f(hi) >= 0 because kappa tau1(kappa) <= mean_s).
  double lo = lambda;
  if (alpha < 1.0) lo = std::max(lo, kappa0(sp, alpha));
  const double hi = lambda + sp.mean_s() / alpha;
  int evals = 0;
  auto f = [&](double k) {
    ++evals;
    return k * (1.0 - sp.tau1(k) / alpha) - lambda;
  };
  double kappa;
  if (lambda == 0)
    kappa = (alpha < 1.0) ? lo : 0.0;
  else
    kappa = brent_root(f, lo, hi, 0.0);
  const SpectralValues sv = sp.eval(kappa);
  const double denom = 1.0 - sv.tau2 / alpha;
  r.kappa = kappa;
  r.eps = (s2 + kappa * kappa * sv.B) / denom;
  r.m = sv.T1;
  r.q = r.eps - s2 - rho + 2.0 * r.m;
  // V from kappa = lambda (1 + V); equivalently V = tau1 (1 + V)/alpha -> V = tau1/(alpha - tau1).
  r.V = (lambda > 0) ? kappa / lambda - 1.0 : sv.tau1 / (alpha - sv.tau1);
  if (lambda == 0 && alpha < 1.0) r.V = std::numeric_limits<double>::infinity();
  r.iterations = evals;
  r.converged = std::isfinite(r.eps) || (alpha == 1.0 && lambda == 0);
  (void)o;
  return r;
}

SaddleResult solve(const Spectrum &sp, double alpha, double lambda, const SaddleOptions &o) {
  switch (o.method) {
    case Method::FixedPoint: {
      SaddleResult r = solve_fixed_point(sp, alpha, lambda, o);
      if (!r.converged)
        throw Error(AM_ERR_NOT_CONVERGED, "replica: fixed point did not converge in " + std::to_string(o.max_iter) +
                                              " iterations at alpha = " + std::to_string(alpha) +
                                              ", lambda = " + std::to_string(lambda) + " (use method=root or auto)");
      return r;
    }
    case Method::Root: return solve_root(sp, alpha, lambda, o);
    case Method::Auto:
    default: {
      if (lambda == 0 || sp.expensive()) return solve_root(sp, alpha, lambda, o);
      SaddleResult r = solve_fixed_point(sp, alpha, lambda, o);
      if (r.converged) return r;
      const int spent = r.iterations;
      r = solve_root(sp, alpha, lambda, o);
      r.iterations += spent;
      return r;
    }
  }
}

Optimum optimal_lambda(const Spectrum &sp, double alpha, const SaddleOptions &o, double lo, double hi) {
  SaddleOptions ro = o;
  if (ro.method == Method::Auto) ro.method = Method::Root;  // many evaluations: the 1-D form is cheapest
  auto eps_of = [&](double u) { return solve(sp, alpha, std::exp(u), ro).eps; };
  const double ulo = std::log(lo), uhi = std::log(hi);
  const int n = static_cast<int>(std::ceil((uhi - ulo) / std::log(10.0) * 4.0));  // 4 points per decade
  int best = 0;
  double fbest = std::numeric_limits<double>::infinity();
  std::vector<double> us(n + 1);
  for (int k = 0; k <= n; ++k) {
    us[k] = ulo + (uhi - ulo) * k / n;
    const double f = eps_of(us[k]);
    if (f < fbest) {
      fbest = f;
      best = k;
    }
  }
  Optimum out;
  if (best == 0 || best == n) {
    out.lambda = std::exp(us[best]);
    out.eps = fbest;
    return out;
  }
  const double u = brent_min(eps_of, us[best - 1], us[best + 1], 1e-10);
  out.lambda = std::exp(u);
  out.eps = eps_of(u);
  return out;
}

Peak find_peak(const Spectrum &sp, double lambda, const SaddleOptions &o, double a_lo, double a_hi) {
  if (!(a_lo > 0) || !(a_hi > a_lo)) throw Error(AM_ERR_DOMAIN, "replica: peak range needs 0 < lo < hi");
  if (lambda == 0 && a_lo < 1.0 && a_hi > 1.0) {  // ridgeless: the peak is the divergence at alpha = 1
    Peak pk;
    pk.alpha = 1.0;
    pk.eps = std::numeric_limits<double>::infinity();
    pk.interior = true;
    return pk;
  }
  SaddleOptions ro = o;
  if (ro.method == Method::Auto) ro.method = Method::Root;
  auto neg_eps = [&](double u) {
    const double e = solve(sp, std::exp(u), lambda, ro).eps;
    return std::isfinite(e) ? -e : -std::numeric_limits<double>::max();
  };
  const double ulo = std::log(a_lo), uhi = std::log(a_hi);
  const int n = 240;
  int best = 0;
  double fbest = std::numeric_limits<double>::infinity();
  std::vector<double> us(n + 1);
  for (int k = 0; k <= n; ++k) {
    us[k] = ulo + (uhi - ulo) * k / n;
    const double f = neg_eps(us[k]);
    if (f < fbest) {
      fbest = f;
      best = k;
    }
  }
  Peak pk;
  if (best == 0 || best == n) {
    pk.alpha = std::exp(us[best]);
    pk.eps = -fbest;
    pk.interior = false;
    return pk;
  }
  const double u = brent_min(neg_eps, us[best - 1], us[best + 1], 1e-12);
  pk.alpha = std::exp(u);
  pk.eps = -neg_eps(u);
  pk.interior = true;
  return pk;
}

}  // namespace am::replica
