// estimator "meanfield" — the dataset read, the mathematics run in order, the run record and the report (estimate.h).
#include "estimate.h"

#include <attnmech/array.h>
#include <attnmech/report_spec.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "meanfield.h"
#include "msa_fit.h"
#include "msa_report.hpp"
#include "msa_scores.h"

namespace am::meanfield {

namespace {

// The rows the frequencies count (the training rows, then the held-out rows when included) and their labels.
struct Data {
  am::msa::MsaData m;
  std::vector<int32_t> tokens;
  std::vector<double> w;
  size_t M = 0;
  int ref = 0;  // the dropped state: the gap, else the last colour
};

am_status check_kind(am_context *ctx, const am_record *ds) {
  if (!ds)
    return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "meanfield: needs a sequence dataset (task msa or potts)");
  const char *kind = nullptr;
  if (am_record_get_string(ds, "kind", &kind) == AM_OK && kind && std::string(kind) == "sequence") return AM_OK;
  return am_context_fail(ctx, AM_ERR_FORMAT,
                         "meanfield: the dataset is of kind '%s'; mean-field DCA needs a sequence dataset (the task "
                         "msa's alignment or the task potts's sequences)",
                         kind ? kind : "(none)");
}

am_status check_memory(am_context *ctx, const Options &o, const am_record *ds) {
  am::potts::FitShape s;
  if (!am::potts::sequence_dataset_shape(ds, 0, &s.M, &s.M_test, &s.L, &s.C)) return AM_OK;  // the read names it
  if (o.held_out == "exclude") s.M_test = 0;
  const std::string what = am::potts::fit_what("meanfield: mean-field DCA", s, o.params ? "params=1" : "params=0");
  if ((double)s.L * (s.C - 1) > (double)INT_MAX)
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "%s: L·(C − 1) is over LAPACK's 32-bit sizes", what.c_str());
  return am::potts::check_fit_memory(ctx, meanfield_bytes(s, o.params), what);
}

// The dataset as the alignment fit reads it, gaps kept as a state; the rows the options choose.
am_status read_data(am_context *ctx, const Options &o, const am_record *ds, Data *d) {
  am::msa::FitOptions f;
  f.gaps = "state";
  am_status st = am::msa::read_msa_dataset(ctx, ds, am::potts::PLOptions{}, f, &d->m);
  if (st != AM_OK) return st;
  const am::potts::SeqData &s = d->m.seq;
  d->tokens = s.train;
  d->w = d->m.w;
  if (o.held_out == "include") {
    d->tokens.insert(d->tokens.end(), s.test.begin(), s.test.end());
    d->w.insert(d->w.end(), d->m.w_test.begin(), d->m.w_test.end());
  }
  d->M = d->w.size();
  d->ref = d->m.gap_state >= 0 ? d->m.gap_state : s.C - 1;
  double W = 0.0;
  for (double x : d->w) W += x;
  if (!(W > 0.0))
    return am_context_fail(ctx, AM_ERR_DOMAIN, "meanfield: the rows' weights sum to %g (all weights 0)", W);
  return AM_OK;
}

// Record writes that remember the first failure.
struct Put {
  am_record *obj;
  am_status st = AM_OK;
  Put &num(const char *k, double v) { return keep(am_record_set_number(obj, k, v)); }
  Put &str(const char *k, const std::string &v) { return keep(am_record_set_string(obj, k, v.c_str())); }
  Put &vec(const char *k, const std::vector<double> &v) {
    return keep(am_record_set_vector(obj, k, v.data(), v.size()));
  }
  Put &array(const char *k, const std::vector<double> &x, std::initializer_list<size_t> shape) {
    const std::vector<size_t> sh(shape);
    const am_array_view v = am_array_view_make(AM_F64, (uint32_t)sh.size(), sh.data(), 0, x.data());
    return keep(am_record_set_array(obj, k, &v));
  }
  Put &keep(am_status s) {
    if (st == AM_OK) st = s;
    return *this;
  }
};

// The run keys that describe the estimate, `fit` first.
am_status write_keys(am_record *run, const Options &o, const Data &d, const Correlations &c, double rcond, double t) {
  const am::msa::MsaData &m = d.m;
  const std::string ref = m.alphabet.size() == (size_t)c.C ? std::string(1, m.alphabet[d.ref]) : std::to_string(d.ref);
  Put p{run};
  p.str(am::msa::kFitKey, kFitMeanfield).str("model", "meanfield").num("pseudocount", o.pseudocount);
  p.str("reference_state", ref).str("rows", o.held_out == "include" ? "all" : "train").num("neff", c.weight);
  p.num("M", (double)d.M).num("M_test", (double)m.seq.M_test).num("L", c.L).num("C", c.C);
  p.str("alphabet", m.alphabet).str("gaps", "state").num("rcond", rcond).num("fit_time_s", t);
  p.vec("site_numbers", m.site_numbers);
  if (!m.focus.empty()) p.str("focus_sequence", m.focus);
  if (!m.site_numbering.empty()) p.str("site_numbering", m.site_numbering);
  if (p.st == AM_OK) am::msa::write_warnings(run, m);  // the dataset's, as the alignment fit passes them on
  return p.st;
}

am_status stage(am_context *ctx, double done, const char *label) {
  return am_context_progress(ctx, done, 4, label) != 0 ? AM_CANCELLED : AM_OK;
}

// From the inverse: the scores (F, then APC) and, with o.params, the fields and couplings; the inverse is freed
// before the couplings go into the record (the peak meanfield_bytes counts).
am_status write_results(am_record *run, const Options &o, const Data &d, Correlations &inv,
                        const am::sdk::ParallelFor &loop) {
  const size_t L = inv.L, C = inv.C;
  const std::vector<double> F = frobenius(inv, d.m.gap_state, loop);
  const std::vector<double> S = am::msa::apc_scores(F, inv.L);
  std::vector<double> h, J;
  if (o.params) {
    h = fields(inv);
    J = couplings(inv);
  }
  std::vector<double>().swap(inv.c);
  am_status st = Put{run}.array("scores", S, {L, L}).array("fn", F, {L, L}).st;
  if (st == AM_OK) st = am::msa::write_contacts(run, d.m, S);
  if (st != AM_OK || !o.params) return st;
  am_record *p = am_record_object(run, "params");
  return p ? Put{p}.array("h", h, {L, C}).array("J", J, {L, L, C, C}).st : AM_ERR_NO_MEMORY;
}

}  // namespace

bool is_meanfield_fit(const am_record *run) {
  const char *s = nullptr;
  return am_record_get_string(run, am::msa::kFitKey, &s) == AM_OK && s && std::string(s) == kFitMeanfield;
}

double meanfield_bytes(const am::potts::FitShape &s, bool params) {
  const double L = s.L, C = s.C, M = double(s.M + s.M_test), n = L * (C - 1), LLCC = L * L * C * C;
  const double pairs = L * (L - 1) / 2;
  // held throughout: the dataset and the fit's copy of it (data_bytes), the rows counted and their weights (twice)
  const double held = am::potts::data_bytes(s) + 4.0 * M * L + 2 * 8.0 * M;
  // counting: the site-major copy of the rows beside C; then C (its inverse) beside J; then J and its record copy
  const double J = params ? 8.0 * LLCC : 0.0;
  const double work = std::max(8.0 * n * n + std::max(4.0 * M * L, J), 2 * J);
  // outputs: F and S and their record copies, the contacts (ranked pairs, six columns and their copies), h twice
  const double out = 4 * 8.0 * L * L + pairs * (16 + 6 * 8 + 6 * 8) + (params ? 2 * 8.0 * L * C : 0.0);
  return held + work + out;
}

am_status estimate(am_context *ctx, const Options &o, const am_record *ds, const am::sdk::ParallelFor &loop,
                   am_record *run) {
  double t[4] = {am::potts::now_s(), 0, 0, 0};  // start, frequencies done, inverse done, results written
  am_status st = check_kind(ctx, ds);
  if (st != AM_OK || (st = check_memory(ctx, o, ds)) != AM_OK) return st;
  Data d;
  if ((st = read_data(ctx, o, ds, &d)) != AM_OK || (st = stage(ctx, 0, "mean-field DCA: frequencies")) != AM_OK)
    return st;
  const am::potts::SeqData &s = d.m.seq;
  Correlations c = correlations(Rows{d.tokens.data(), d.w.data(), d.M, s.L, s.C}, d.ref, o.pseudocount, loop);
  if ((st = stage(ctx, 1, "mean-field DCA: Cholesky inverse")) != AM_OK) return st;
  t[1] = am::potts::now_s();
  double rcond = 0.0;
  if ((st = invert(ctx, c, Labels{d.m.site_numbers, d.m.alphabet}, o.pseudocount, &rcond)) != AM_OK) return st;
  if ((st = stage(ctx, 2, "mean-field DCA: scores")) != AM_OK) return st;
  t[2] = am::potts::now_s();
  const size_t n = c.n;
  if ((st = write_results(run, o, d, c, loop)) == AM_OK)
    st = write_keys(run, o, d, c, rcond, am::potts::now_s() - t[0]);
  if (st != AM_OK)
    return am_context_fail(ctx, st, "meanfield: cannot store the results: %s", am_record_last_error(run));
  t[3] = am::potts::now_s();
  am_context_log(ctx, AM_LOG_INFO,
                 "meanfield: L = %d, C = %d, %zu rows (Neff %.1f), C is %zu × %zu, 1/cond %.3g; %.2f s: reading and "
                 "frequencies %.2f s, Cholesky inverse %.2f s, scores and results %.2f s",
                 s.L, s.C, d.M, c.weight, n, n, rcond, t[3] - t[0], t[1] - t[0], t[2] - t[1], t[3] - t[2]);
  return stage(ctx, 4, "mean-field DCA");
}

namespace {

using namespace am::spec;

void summary(Report &rep, const std::string &r, size_t ri) {
  Node v = rep.values("mean-field DCA (run " + std::to_string(ri) + ")");
  v.value("Neff", cat(r, "neff"), "%.1f").value("L (sites)", cat(r, "L"), "%.0f");
  v.value("C (states)", cat(r, "C"), "%.0f");
  v.value("M (rows counted)", cat(r, "M"), "%.0f").value("rows", cat(r, "rows"), "%s");
  v.value("pseudocount", cat(r, "pseudocount"), "%.3g").value("reference state", cat(r, "reference_state"), "%s");
  v.value("1/cond(C)", cat(r, "rcond"), "%.3g").value("time (s)", cat(r, "fit_time_s"), "%.2f");
  am::msa_report::top_contacts(rep, r);
}

}  // namespace

am_status describe(const am_record *results, am_record *report) {
  return am::msa_report::describe_runs(results, report, is_meanfield_fit,
                                       [&](Report &rep, const std::string &r, const std::string &suffix, size_t ri) {
                                         am::msa_report::contact_map(rep, results, r, suffix);
                                         am::msa_report::coupling_files(rep, r, suffix);
                                         summary(rep, r, ri);
                                       });
}

}  // namespace am::meanfield
