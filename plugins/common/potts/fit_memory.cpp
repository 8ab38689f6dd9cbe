// potts_core — the memory estimates of the pseudo-likelihood fits and what every sequence fit's estimate shares
// (fit_memory.h). Every term names the arrays it counts; the models' own arrays are their static work_bytes
// (factored.h, mixed.h), lbfgs_bytes the optimiser's. A phase's bytes are what is held at once; the estimate is the
// largest phase.
#include "fit_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "factored.h"
#include "lbfgs.h"
#include "mixed.h"

namespace am::potts {

std::string gigabytes(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  return buf;
}

double data_bytes(const FitShape &s) { return 2.0 * 4.0 * double(s.M + s.M_test) * s.L; }

double collapsed_fit_bytes(const FitShape &s, int heads, bool lbfgs) {
  const double L = s.L, C = s.C, LL = L * L, n = heads * (LL + C * C);
  // optimiser: L-BFGS, or the mini-batch loop's gradient and Adam's two moments (allocated for sgd too)
  const double opt = lbfgs ? lbfgs_bytes(n) : 3 * 8.0 * n + 8.0 * double(s.M);
  // the run record: W, the heads' A and V (heads > 1), A, V, J and the curves' small arrays
  const double out = 8.0 * (LL + (heads > 1 ? heads * (LL + C * C) : 0.0) + 3 * LL + 4 * C * C);
  const double model = FactoredModel::work_bytes(s.L, s.C, heads, std::max(s.M, s.M_test), s.workers);
  return data_bytes(s) + model + 8.0 * n + 8.0 * 2 * LL + std::max(opt, out);
}

double mixed_fit_bytes(const FitShape &s, int d, bool lbfgs) {
  const double L = s.L, C = s.C, LL = L * L, n = MixedModel::params(s.L, s.C, d);
  const double opt = lbfgs ? lbfgs_bytes(n) : 3 * 8.0 * n + 8.0 * double(s.M);
  // after the fit: collapsed() works on a copy of the model (its tables at a = 0), beside Wc, A, the record's A, J, V
  const double model = MixedModel::work_bytes(s.L, s.C, d), out = model + 8.0 * (LL + 4 * LL + 4 * C * C);
  return data_bytes(s) + model + 8.0 * n + 8.0 * 2 * LL + std::max(opt, out);
}

std::string fit_what(const char *fit, const FitShape &s, const std::string &detail) {
  return std::string(fit) + " (" + detail + (detail.empty() ? "" : ", ") + "L = " + std::to_string(s.L) +
         ", C = " + std::to_string(s.C) + ", M = " + std::to_string(s.M) + ", M_test = " + std::to_string(s.M_test) +
         ")";
}

am_status check_fit_memory(am_context *ctx, double bytes, const std::string &what) {
  const am_status st = am_memory_check(ctx, bytes, what.c_str(), nullptr);
  if (st == AM_OK) am_context_log(ctx, AM_LOG_DEBUG, "%s: memory estimate %s", what.c_str(), gigabytes(bytes).c_str());
  return st;
}

}  // namespace am::potts
