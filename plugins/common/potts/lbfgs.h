// potts_core — a compact L-BFGS minimiser: two-loop recursion (Nocedal & Wright Alg. 7.4) with a
// strong-Wolfe line search (bracketing + zoom with cubic interpolation, N&W Alg. 3.5/3.6).
#ifndef ATTNMECH_POTTS_LBFGS_H
#define ATTNMECH_POTTS_LBFGS_H

#include <cstddef>
#include <functional>
#include <string>

namespace am::potts {

struct LbfgsOptions {
  int m = 10;              // stored correction pairs
  int max_iter = 5000;
  double gtol = 1e-9;      // stop when ‖g‖₂ < gtol
  double ftol = 0.0;       // stop when (f_prev − f) ≤ ftol·max(1,|f|) for 10 iterations in a row (0 = off)
  int window = 0;          // stop when f decreased by at most window_tol over the last `window` iterations
  double window_tol = 0.0; //   (absolute; 0 = off) — "the fit stopped improving" (status LBFGS_WINDOW)
  double window_rtol = 0.0;     // also LBFGS_WINDOW when f decreased by at most window_rtol·|f| over the window (0 = off)
  double window_progress = 0.0; // guard of both window rules: they fire only once the window's decrease is also at
                                //   most this fraction of the decrease since the start (0 = no guard)
  double c1 = 1e-4, c2 = 0.9;
  int max_ls = 40;         // function evaluations per line search
  // Asked before every evaluation of the objective (e.g. the context's cancel flag): true stops at once with
  // LBFGS_CANCELLED and x at the last accepted iterate — a stop waits for one evaluation, not a whole line search.
  std::function<bool()> stop;
};

enum LbfgsStatus {
  LBFGS_CONVERGED = 0,       // ‖g‖ < gtol
  LBFGS_FTOL = 1,            // f stalled (relative decrease below ftol)
  LBFGS_MAX_ITER = 2,
  LBFGS_ROUNDOFF = 3,        // line search cannot decrease f any more (round-off level)
  LBFGS_CANCELLED = 4,
  LBFGS_NONFINITE = 5,
  LBFGS_WINDOW = 6           // f decreased by at most window_tol over the last window iterations
};

struct LbfgsResult {
  int iterations = 0, evaluations = 0;
  double f = 0.0, gnorm = 0.0;
  LbfgsStatus status = LBFGS_MAX_ITER;
  double window_decrease = 0.0, total_decrease = 0.0;  // at the stop: f's decrease over the window, since the start
  std::string reason;  // why it stopped, for people: "gradient (…)", "stalled (…)", "window rule (…)", "max_iter",
                       // "line search", "cancelled", "non-finite"
};

// f(x, g) returns the objective and writes the gradient into g.
using Objective = std::function<double(const double *x, double *g)>;
// Called after every iteration with the new iterate and `to_stop`, how far the nearest stopping rule is from firing:
// its measure over its tolerance (the gradient norm over gtol, the window's decrease over its threshold, the largest
// of the last 10 decreases over ftol·max(1,|f|)), so the run stops once it is ≤ 1; NaN while no rule can say (for a
// progress report: the loop is open-ended, max_iter only a cap). Return false to stop (→ LBFGS_CANCELLED).
using IterationCallback =
    std::function<bool(int iter, double f, double gnorm, const double *x, double to_stop)>;

LbfgsResult lbfgs_minimize(size_t n, double *x, const Objective &f, const LbfgsOptions &o,
                           const IterationCallback &cb = nullptr);

const char *lbfgs_status_string(LbfgsStatus s);

// Bytes lbfgs_minimize allocates for n parameters and m correction pairs: the pairs s and y (m each, allocated whole
// at the start) and four work vectors (the caller's x is not counted).
inline double lbfgs_bytes(double n, int m = 10) { return 8.0 * n * (2.0 * m + 4.0); }

}  // namespace am::potts
#endif
