// potts_core — L-BFGS with a strong-Wolfe line search (see lbfgs.h).
#include "lbfgs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace am::potts {

const char *lbfgs_status_string(LbfgsStatus s) {
  switch (s) {
    case LBFGS_CONVERGED: return "converged (gradient norm below tolerance)";
    case LBFGS_FTOL: return "converged (objective stalled)";
    case LBFGS_MAX_ITER: return "iteration limit reached";
    case LBFGS_ROUNDOFF: return "converged to round-off (line search cannot decrease the objective)";
    case LBFGS_CANCELLED: return "cancelled";
    case LBFGS_NONFINITE: return "non-finite objective";
    case LBFGS_WINDOW: return "stopped improving (objective decrease over the window below tolerance)";
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

// An interval of steps that contains a strong-Wolfe point: (lo, flo, dlo) the best so far, (hi, fhi, dhi) the
// other end (fhi = 1e300 where the objective was not finite).
struct Bracket {
  double lo = 0, hi = 0, flo = 0, fhi = 0, dlo = 0, dhi = 0;
};

enum class Search { accepted, bracketed, failed };

// Phase 1 (N&W Alg. 3.5): steps t, 4t, 16t, ... until one satisfies the strong Wolfe conditions (accepted:
// *f_acc, point in ls.x/ls.g) or an interval containing one is found (bracketed: *br).
Search bracket(LineSearch &ls, const LbfgsOptions &o, double t, Bracket *br, double *f_acc) {
  const double fx = ls.f0, dg = ls.g0;
  double t_prev = 0.0, f_prev = fx, dphi_prev = dg;
  for (int k = 0; k < o.max_ls; ++k) {
    double dphi;
    const double ft = ls.phi(t, &dphi);
    if (!std::isfinite(ft) || ft > fx + o.c1 * t * dg || (k > 0 && ft >= f_prev)) {
      *br = {t_prev, t, f_prev, std::isfinite(ft) ? ft : 1e300, dphi_prev, std::isfinite(dphi) ? dphi : 0.0};
      return Search::bracketed;
    }
    if (std::fabs(dphi) <= -o.c2 * dg) {
      *f_acc = ft;
      return Search::accepted;
    }
    if (dphi >= 0.0) {
      *br = {t, t_prev, ft, f_prev, dphi, dphi_prev};
      return Search::bracketed;
    }
    t_prev = t;
    f_prev = ft;
    dphi_prev = dphi;
    t *= 4.0;
  }
  return Search::failed;
}

// Phase 2 (N&W Alg. 3.6): shrink the bracket by safeguarded cubic interpolation until a strong-Wolfe point
// is found; failing that, accept the best sufficient-decrease point. True with *f_acc and the point in
// ls.x/ls.g.
bool zoom(LineSearch &ls, const LbfgsOptions &o, Bracket br, double *f_acc) {
  const double fx = ls.f0, dg = ls.g0;
  double &lo = br.lo, &hi = br.hi, &flo = br.flo, &fhi = br.fhi, &dlo = br.dlo, &dhi = br.dhi;
  for (int k = 0; k < o.max_ls; ++k) {
    const double a = std::min(lo, hi), b = std::max(lo, hi);
    if (b - a < 1e-16 * std::max(1.0, b)) break;
    const double tt = (fhi >= 1e300) ? 0.5 * (lo + hi) : cubic_min(lo, flo, dlo, hi, fhi, dhi, a, b);
    double dphi;
    const double ft = ls.phi(tt, &dphi);
    if (!std::isfinite(ft) || ft > fx + o.c1 * tt * dg || ft >= flo) {
      hi = tt;
      fhi = std::isfinite(ft) ? ft : 1e300;
      dhi = std::isfinite(dphi) ? dphi : 0.0;
    } else {
      if (std::fabs(dphi) <= -o.c2 * dg) {
        *f_acc = ft;
        return true;
      }
      if (dphi * (hi - lo) >= 0.0) {
        hi = lo;
        fhi = flo;
        dhi = dlo;
      }
      lo = tt;
      flo = ft;
      dlo = dphi;
    }
  }
  if (lo > 0.0 && flo < fx) {  // accept the best sufficient-decrease point
    double dphi;
    *f_acc = ls.phi(lo, &dphi);
    return true;
  }
  return false;
}

// A strong-Wolfe step along ls.d starting from step t: true with *f_acc and the accepted point in ls.x/ls.g.
bool wolfe_step(LineSearch &ls, const LbfgsOptions &o, double t, double *f_acc) {
  Bracket br;
  switch (bracket(ls, o, t, &br, f_acc)) {
    case Search::accepted: return true;
    case Search::bracketed: return zoom(ls, o, br, f_acc);
    case Search::failed: break;
  }
  return false;
}

// The m most recent correction pairs s = x_{k+1} − x_k, y = g_{k+1} − g_k (a ring buffer) and the two-loop
// recursion (N&W Alg. 7.4) that applies the inverse-Hessian estimate.
struct Memory {
  int m, stored = 0, head = 0;
  size_t n;
  std::vector<std::vector<double>> S, Y;
  std::vector<double> rho, alpha;
  Memory(int m_, size_t n_) : m(m_), n(n_), S(m_, std::vector<double>(n_)), Y(m_, std::vector<double>(n_)), rho(m_),
                              alpha(m_) {}

  // d = −H g.
  void direction(const std::vector<double> &g, std::vector<double> &d) {
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
  }

  // Stores the pair of the step x → xn (gradients g → gn) when its curvature s·y is positive.
  void push(const double *x, const std::vector<double> &xn, const std::vector<double> &g,
            const std::vector<double> &gn) {
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
};

// The window rules on the history of f (hist[0] = f(x0), then f after each iteration): f decreased by at most
// window_tol, or by at most window_rtol·|f|, over the last `window` iterations — and, with the guard on, by at most
// window_progress times its decrease since the start (so a rule scaled for the end of a fit cannot fire at its
// start, where a slow window is only a slow start). Records both decreases in *res.
bool window_rule_fires(const std::vector<double> &hist, const LbfgsOptions &o, LbfgsResult *res) {
  if ((int)hist.size() <= o.window) return false;
  const double f = hist.back(), dec = hist[hist.size() - 1 - o.window] - f, total = hist.front() - f;
  res->window_decrease = dec;
  res->total_decrease = total;
  const bool small =
      (o.window_tol > 0.0 && dec <= o.window_tol) || (o.window_rtol > 0.0 && dec <= o.window_rtol * std::fabs(f));
  return small && (o.window_progress <= 0.0 || dec <= o.window_progress * total);
}

// How far the nearest stopping rule is from firing (lbfgs.h, IterationCallback): the smallest of each rule's measure
// over its threshold (≤ 1 fires), once every configured rule can tell (the window rule after `window` iterations,
// the ftol rule after 10: before, NaN, so the distance does not jump from one rule to another in its first
// iterations). hist as window_rule_fires; recent = the ratios decrease / (ftol·max(1,|f|)) of the last 10 iterations.
double stop_distance(double gnorm, const std::vector<double> &hist, const std::vector<double> &recent,
                     const LbfgsOptions &o) {
  const bool windowed = o.window > 0 && (o.window_tol > 0.0 || o.window_rtol > 0.0);
  if ((windowed && (int)hist.size() <= o.window) || (o.ftol > 0.0 && recent.size() < 10)) return NAN;
  double r = o.gtol > 0.0 ? gnorm / o.gtol : INFINITY;
  if (!recent.empty()) r = std::min(r, *std::max_element(recent.begin(), recent.end()));
  if (windowed) {
    const double f = hist.back(), dec = std::max(0.0, hist[hist.size() - 1 - o.window] - f), total = hist.front() - f;
    const double thr = std::max(o.window_tol > 0.0 ? o.window_tol : 0.0,
                                o.window_rtol > 0.0 ? o.window_rtol * std::fabs(f) : 0.0);
    double w = thr > 0.0 ? dec / thr : INFINITY;
    if (o.window_progress > 0.0) w = std::max(w, total > 0.0 ? dec / (o.window_progress * total) : INFINITY);
    r = std::min(r, w);
  }
  return std::isfinite(r) ? r : NAN;
}

// res.reason from its status and the rule that fired.
void explain_stop(const LbfgsOptions &o, LbfgsResult &res) {
  char b[200];
  switch (res.status) {
    case LBFGS_CONVERGED: std::snprintf(b, sizeof b, "gradient (norm %.3g < gtol %.3g)", res.gnorm, o.gtol); break;
    case LBFGS_FTOL:
      std::snprintf(b, sizeof b, "stalled (decrease below ftol*max(1,|f|) = %.3g in 10 successive iterations)",
                    o.ftol * std::max(1.0, std::fabs(res.f)));
      break;
    case LBFGS_WINDOW: {
      const bool abs_rule = o.window_tol > 0.0 && res.window_decrease <= o.window_tol;
      std::snprintf(b, sizeof b, "window rule (decrease %.3g over %d iterations <= %s %.3g; %.3g since the start)",
                    res.window_decrease, o.window, abs_rule ? "tol" : "rtol*|f| =",
                    abs_rule ? o.window_tol : o.window_rtol * std::fabs(res.f), res.total_decrease);
      break;
    }
    case LBFGS_MAX_ITER: std::snprintf(b, sizeof b, "max_iter"); break;
    case LBFGS_ROUNDOFF: std::snprintf(b, sizeof b, "line search"); break;
    case LBFGS_CANCELLED: std::snprintf(b, sizeof b, "cancelled"); break;
    case LBFGS_NONFINITE: std::snprintf(b, sizeof b, "non-finite"); break;
  }
  res.reason = b;
}

}  // namespace

namespace {

// Fills res as it goes (so a stop thrown from an evaluation leaves the iterations and f so far).
void minimize(size_t n, double *x, const Objective &f, const LbfgsOptions &o, const IterationCallback &cb,
              LbfgsResult &res) {
  Memory mem(std::max(1, o.m), n);
  std::vector<double> g(n), d(n), xn(n), gn(n);
  double fx = f(x, g.data());
  res.evaluations = 1;
  if (!std::isfinite(fx)) {
    res.status = LBFGS_NONFINITE;
    res.f = fx;
    return;
  }
  double gnorm = std::sqrt(dot(g.data(), g.data(), n));
  int stall = 0;
  std::vector<double> hist;  // f after each iteration (for the window rule), hist[0] = f(x0)
  if (o.window > 0 && (o.window_tol > 0.0 || o.window_rtol > 0.0)) hist.push_back(fx);
  std::vector<double> recent;  // the ftol rule's last (up to 10) ratios, for stop_distance
  for (int it = 0; it < o.max_iter; ++it) {
    res.f = fx;
    res.gnorm = gnorm;
    res.iterations = it;
    if (gnorm < o.gtol) {
      res.status = LBFGS_CONVERGED;
      return;
    }
    mem.direction(g, d);
    double dg = dot(d.data(), g.data(), n);
    if (!(dg < 0.0)) {  // not a descent direction: restart with steepest descent
      mem.stored = 0;
      for (size_t i = 0; i < n; ++i) d[i] = -g[i];
      dg = -gnorm * gnorm;
    }
    LineSearch ls{n, f, x, d.data(), fx, dg, xn, gn};
    double f_acc = 0.0;
    const bool accepted = wolfe_step(ls, o, mem.stored == 0 ? std::min(1.0, 1.0 / gnorm) : 1.0, &f_acc);
    res.evaluations += ls.evals;
    if (!accepted) {
      res.status = LBFGS_ROUNDOFF;
      if (mem.stored > 0) {  // retry once from steepest descent before giving up
        mem.stored = 0;
        mem.head = 0;
        fx = f(x, g.data());  // restore the gradient at x (xn/gn hold the last trial point)
        ++res.evaluations;
        continue;
      }
      return;
    }
    mem.push(x, xn, g, gn);  // xn/gn hold the accepted point
    const double decrease = fx - f_acc;
    std::copy(xn.begin(), xn.end(), x);
    std::copy(gn.begin(), gn.end(), g.begin());
    fx = f_acc;
    gnorm = std::sqrt(dot(g.data(), g.data(), n));
    res.f = fx;
    res.gnorm = gnorm;
    res.iterations = it + 1;
    if (!hist.empty()) hist.push_back(fx);
    if (o.ftol > 0.0) {
      if (recent.size() == 10) recent.erase(recent.begin());
      recent.push_back(decrease / (o.ftol * std::max(1.0, std::fabs(fx))));
    }
    if (cb && !cb(it + 1, fx, gnorm, x, stop_distance(gnorm, hist, recent, o))) {
      res.status = LBFGS_CANCELLED;
      return;
    }
    if (!hist.empty() && window_rule_fires(hist, o, &res)) {
      res.status = LBFGS_WINDOW;
      return;
    }
    if (o.ftol > 0.0) {
      stall = (decrease <= o.ftol * std::max(1.0, std::fabs(fx))) ? stall + 1 : 0;
      if (stall >= 10) {
        res.status = LBFGS_FTOL;
        return;
      }
    }
  }
  res.status = gnorm < o.gtol ? LBFGS_CONVERGED : LBFGS_MAX_ITER;
  return;
}

}  // namespace

LbfgsResult lbfgs_minimize(size_t n, double *x, const Objective &f, const LbfgsOptions &o,
                           const IterationCallback &cb) {
  struct Stopped {};
  LbfgsResult res;
  try {  // the stop check before each evaluation unwinds the search; x holds the last accepted iterate
    const Objective checked = [&](const double *p, double *g) {
      if (o.stop()) throw Stopped{};
      return f(p, g);
    };
    minimize(n, x, o.stop ? checked : f, o, cb, res);
  } catch (const Stopped &) {
    res.status = LBFGS_CANCELLED;
  }
  explain_stop(o, res);
  return res;
}

}  // namespace am::potts
