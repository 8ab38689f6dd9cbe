// potts_core — L-BFGS with a strong-Wolfe line search (see lbfgs.h).
#include "lbfgs.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace potts {

const char *lbfgs_status_string(LbfgsStatus s) {
  switch (s) {
    case LBFGS_CONVERGED: return "converged (gradient norm below tolerance)";
    case LBFGS_FTOL: return "converged (objective stalled)";
    case LBFGS_MAX_ITER: return "iteration limit reached";
    case LBFGS_ROUNDOFF: return "converged to round-off (line search cannot decrease the objective)";
    case LBFGS_CANCELLED: return "cancelled";
    case LBFGS_NONFINITE: return "non-finite objective";
  }
  return "?";
}

namespace {

double dot(const double *a, const double *b, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Minimiser of the cubic interpolating (a, fa, da), (b, fb, db), safeguarded into [lo, hi].
double cubic_min(double a, double fa, double da, double b, double fb, double db, double lo, double hi) {
  const double d1 = da + db - 3.0 * (fa - fb) / (a - b);
  const double disc = d1 * d1 - da * db;
  double t;
  if (disc >= 0.0 && std::isfinite(disc)) {
    const double d2 = std::copysign(std::sqrt(disc), b - a);
    t = b - (b - a) * (db + d2 - d1) / (db - da + 2.0 * d2);
  } else {
    t = 0.5 * (a + b);
  }
  if (!std::isfinite(t)) t = 0.5 * (lo + hi);
  const double span = hi - lo;
  return std::min(std::max(t, lo + 0.1 * span), hi - 0.1 * span);
}

struct LineSearch {
  size_t n;
  const Objective &f;
  const double *x0, *d;
  double f0, g0;  // f and directional derivative at 0
  std::vector<double> &x, &g;
  int evals = 0;
  double phi(double t, double *dphi) {
    for (size_t i = 0; i < n; ++i) x[i] = x0[i] + t * d[i];
    const double v = f(x.data(), g.data());
    ++evals;
    *dphi = dot(g.data(), d, n);
    return v;
  }
};

}  // namespace

LbfgsResult lbfgs_minimize(size_t n, double *x, const Objective &f, const LbfgsOptions &o,
                           const IterationCallback &cb) {
  LbfgsResult res;
  const int m = std::max(1, o.m);
  std::vector<double> g(n), d(n), xn(n), gn(n), alpha(m), rho(m);
  std::vector<std::vector<double>> S(m, std::vector<double>(n)), Y(m, std::vector<double>(n));
  int stored = 0, head = 0;  // ring buffer
  double fx = f(x, g.data());
  res.evaluations = 1;
  if (!std::isfinite(fx)) {
    res.status = LBFGS_NONFINITE;
    res.f = fx;
    return res;
  }
  double gnorm = std::sqrt(dot(g.data(), g.data(), n));
  int stall = 0;
  for (int it = 0; it < o.max_iter; ++it) {
    res.f = fx;
    res.gnorm = gnorm;
    res.iterations = it;
    if (gnorm < o.gtol) {
      res.status = LBFGS_CONVERGED;
      return res;
    }
    // two-loop recursion: d = −H g
    for (size_t i = 0; i < n; ++i) d[i] = -g[i];
    for (int k = 0; k < stored; ++k) {
      const int idx = (head - 1 - k + m) % m;
      alpha[idx] = rho[idx] * dot(S[idx].data(), d.data(), n);
      for (size_t i = 0; i < n; ++i) d[i] -= alpha[idx] * Y[idx][i];
    }
    double gamma = 1.0;
    if (stored > 0) {
      const int last = (head - 1 + m) % m;
      gamma = dot(S[last].data(), Y[last].data(), n) / dot(Y[last].data(), Y[last].data(), n);
    }
    for (size_t i = 0; i < n; ++i) d[i] *= gamma;
    for (int k = stored - 1; k >= 0; --k) {
      const int idx = (head - 1 - k + m) % m;
      const double b = rho[idx] * dot(Y[idx].data(), d.data(), n);
      for (size_t i = 0; i < n; ++i) d[i] += S[idx][i] * (alpha[idx] - b);
    }
    double dg = dot(d.data(), g.data(), n);
    if (!(dg < 0.0)) {  // not a descent direction: restart with steepest descent
      stored = 0;
      for (size_t i = 0; i < n; ++i) d[i] = -g[i];
      dg = -gnorm * gnorm;
    }
    // strong-Wolfe line search
    LineSearch ls{n, f, x, d.data(), fx, dg, xn, gn};
    double t = (stored == 0) ? std::min(1.0, 1.0 / gnorm) : 1.0;
    double t_prev = 0.0, f_prev = fx, dphi_prev = dg;
    double t_acc = -1.0, f_acc = 0.0;
    double lo = 0, hi = 0, flo = 0, fhi = 0, dlo = 0, dhi = 0;
    bool zoom = false;
    for (int k = 0; k < o.max_ls; ++k) {
      double dphi;
      const double ft = ls.phi(t, &dphi);
      if (!std::isfinite(ft) || ft > fx + o.c1 * t * dg || (k > 0 && ft >= f_prev)) {
        lo = t_prev; flo = f_prev; dlo = dphi_prev;
        hi = t; fhi = std::isfinite(ft) ? ft : 1e300; dhi = std::isfinite(dphi) ? dphi : 0.0;
        zoom = true;
        break;
      }
      if (std::fabs(dphi) <= -o.c2 * dg) {
        t_acc = t; f_acc = ft;
        break;
      }
      if (dphi >= 0.0) {
        lo = t; flo = ft; dlo = dphi;
        hi = t_prev; fhi = f_prev; dhi = dphi_prev;
        zoom = true;
        break;
      }
      t_prev = t; f_prev = ft; dphi_prev = dphi;
      t *= 4.0;
    }
    if (zoom) {
      for (int k = 0; k < o.max_ls; ++k) {
        const double a = std::min(lo, hi), b = std::max(lo, hi);
        if (b - a < 1e-16 * std::max(1.0, b)) break;
        const double tt = (fhi >= 1e300) ? 0.5 * (lo + hi) : cubic_min(lo, flo, dlo, hi, fhi, dhi, a, b);
        double dphi;
        const double ft = ls.phi(tt, &dphi);
        if (!std::isfinite(ft) || ft > fx + o.c1 * tt * dg || ft >= flo) {
          hi = tt; fhi = std::isfinite(ft) ? ft : 1e300; dhi = std::isfinite(dphi) ? dphi : 0.0;
        } else {
          if (std::fabs(dphi) <= -o.c2 * dg) {
            t_acc = tt; f_acc = ft;
            break;
          }
          if (dphi * (hi - lo) >= 0.0) {
            hi = lo; fhi = flo; dhi = dlo;
          }
          lo = tt; flo = ft; dlo = dphi;
        }
      }
      if (t_acc < 0.0 && lo > 0.0 && flo < fx) {  // accept the best sufficient-decrease point
        double dphi;
        f_acc = ls.phi(lo, &dphi);
        t_acc = lo;
      }
    }
    res.evaluations += ls.evals;
    if (t_acc < 0.0) {
      res.status = stored == 0 ? LBFGS_ROUNDOFF : LBFGS_ROUNDOFF;
      if (stored > 0) {  // retry once from steepest descent before giving up
        stored = 0;
        head = 0;
        // restore gradient at x (xn/gn hold the last trial point)
        fx = f(x, g.data());
        ++res.evaluations;
        continue;
      }
      return res;
    }
    // update memory: s = xn − x, y = gn − g (xn/gn hold the accepted point)
    {
      double *s = S[head].data(), *y = Y[head].data();
      for (size_t i = 0; i < n; ++i) {
        s[i] = xn[i] - x[i];
        y[i] = gn[i] - g[i];
      }
      const double sy = dot(s, y, n);
      if (sy > 1e-300) {
        rho[head] = 1.0 / sy;
        head = (head + 1) % m;
        stored = std::min(stored + 1, m);
      }
    }
    const double decrease = fx - f_acc;
    std::copy(xn.begin(), xn.end(), x);
    std::copy(gn.begin(), gn.end(), g.begin());
    fx = f_acc;
    gnorm = std::sqrt(dot(g.data(), g.data(), n));
    res.f = fx;
    res.gnorm = gnorm;
    res.iterations = it + 1;
    if (cb && !cb(it + 1, fx, gnorm, x)) {
      res.status = LBFGS_CANCELLED;
      return res;
    }
    if (o.ftol > 0.0) {
      stall = (decrease <= o.ftol * std::max(1.0, std::fabs(fx))) ? stall + 1 : 0;
      if (stall >= 10) {
        res.status = LBFGS_FTOL;
        return res;
      }
    }
  }
  res.status = gnorm < o.gtol ? LBFGS_CONVERGED : LBFGS_MAX_ITER;
  return res;
}

}  // namespace potts
