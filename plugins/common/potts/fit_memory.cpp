// potts_core — the memory estimates of the sequence fits (fit_memory.h). Every term names the arrays it counts; the
// models' own arrays are their static work_bytes (msa_model.h, factored.h, mixed.h), lbfgs_bytes the
// optimiser's. A phase's bytes are what is held at once; the estimate is the largest phase.
#include "fit_memory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "factored.h"
#include "lbfgs.h"
#include "mixed.h"

namespace am::potts {

namespace {

// The alignment's weights: the record's and the fit's copy (MsaData::w, w_test).
double weight_bytes(const FitShape &s) { return 2.0 * 8.0 * double(s.M + s.M_test); }

// The outputs of the alignment fit held at once when its last array is written (write_couplings): J and its record
// copy, F, S and their copies, the fields twice, the contact list (rank_pairs' pairs, the six columns and their
// record copies) and the attention maps A with their copy. `record` of them stay in the run record afterwards.
double msa_output_bytes(const FitShape &s, MsaKind kind, int heads) {
  const double L = s.L, C = s.C, LL = L * L, pairs = L * (L - 1) / 2;
  double b = 2 * 8 * LL * C * C + 4 * 8 * LL + 2 * 8 * L * C + pairs * (16 + 6 * 8 + 6 * 8);
  if (kind == MsaKind::Factored) b += 2 * 8.0 * heads * LL + 2 * 8.0 * heads * C * C;
  return b;
}

std::string gigabytes(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  return buf;
}

}  // namespace

double data_bytes(const FitShape &s) { return 2.0 * 4.0 * double(s.M + s.M_test) * s.L; }

double msa_fit_bytes(const FitShape &s, MsaKind kind, int heads, bool fields) {
  const double M = double(s.M), L = s.L;
  const double D = M > 1 ? (M - 1) * L : 0.0;  // changed sites of the plan: at most every site of every visit
  const double held = data_bytes(s) + weight_bytes(s) + MsaModel::work_bytes(kind, s.L, s.C, heads, std::max(s.M, s.M_test)) +
                      16.0 * M + 4.0 * D;  // + the plan: order, diff_begin, diff_site
  const double n = MsaModel::params(kind, s.L, s.C, heads, fields);
  const double call = MsaModel::call_bytes(s.C, std::max(s.M, s.M_test), D, s.workers);
  const double planning = M * L + 8.0 * std::min(M, 4096.0);  // make_msa_plan's byte rows and candidates
  const double fit = 8.0 * n + lbfgs_bytes(n) + std::max(call, planning);
  const double out = 8.0 * n + std::max(call, msa_output_bytes(s, kind, heads));
  return held + std::max(fit, out);
}

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
