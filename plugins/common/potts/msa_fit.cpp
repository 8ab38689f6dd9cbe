// potts_core — the alignment fit of the estimator "pseudolikelihood" (msa_fit.h, docs/msa.md).
#include "msa_fit.h"

#include <attnmech/array.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "fit_memory.h"
#include "msa_model.h"
#include "msa_scores.h"

namespace am::potts {

namespace {

// A vector key of length n; absent → `def` (status AM_OK), wrong length or non-finite → a clear error.
am_status read_vector(am_context *ctx, const am_record *ds, const char *key, size_t n, std::vector<double> &out,
                      const std::vector<double> &def) {
  size_t len = 0;
  if (!am_record_get(ds, key)) {
    out = def;
    return AM_OK;
  }
  if (am_record_get_vector(ds, key, nullptr, 0, &len) != AM_OK || len != n)
    return am_context_fail(ctx, AM_ERR_SHAPE, "alignment dataset: '%s' must be a vector of %zu numbers", key, n);
  out.assign(n, 0.0);
  am_record_get_vector(ds, key, out.data(), n, &len);
  for (double x : out)
    if (!std::isfinite(x)) return am_context_fail(ctx, AM_ERR_DOMAIN, "alignment dataset: '%s' holds %g", key, x);
  return AM_OK;
}

am_status check_weights(am_context *ctx, const std::vector<double> &w, const char *key) {
  for (double x : w)
    if (!(x >= 0.0))
      return am_context_fail(ctx, AM_ERR_DOMAIN, "alignment dataset: '%s' holds %g (must be ≥ 0)", key, x);
  return AM_OK;
}

// Gaps missing: the gap colour becomes −1, the colours above it move down by one.
void drop_gap_colour(std::vector<int32_t> &t, int gap) {
  for (auto &x : t) x = x == gap ? -1 : (x > gap ? x - 1 : x);
}

// The alphabet, gap state, site numbers and focus sequence (the dataset's or their defaults), checked against C, L.
am_status read_labels(am_context *ctx, const am_record *ds, MsaData *m) {
  const SeqData &d = m->seq;
  const char *s = nullptr;
  if (am_record_get_string(ds, "alphabet", &s) == AM_OK && s) m->alphabet = s;
  if (!m->alphabet.empty() && (int)m->alphabet.size() != d.C)
    return am_context_fail(ctx, AM_ERR_FORMAT, "alignment dataset: 'alphabet' has %zu letters, C = %d",
                           m->alphabet.size(), d.C);
  double g = -1.0;
  const size_t dash = m->alphabet.find('-');
  if (am_record_get_number(ds, "gap_state", &g) != AM_OK) g = dash == std::string::npos ? -1.0 : (double)dash;
  if (!(g >= -1 && g < d.C) || g != std::floor(g))
    return am_context_fail(ctx, AM_ERR_DOMAIN, "alignment dataset: 'gap_state' %g is not -1 or a colour", g);
  m->gap_state = (int)g;
  std::vector<double> one_to_L(d.L);
  for (int i = 0; i < d.L; ++i) one_to_L[i] = i + 1;
  am_status st = read_vector(ctx, ds, "site_numbers", d.L, m->site_numbers, one_to_L);
  if (st != AM_OK) return st;
  s = nullptr;
  if (am_record_get_string(ds, "focus_sequence", &s) == AM_OK && s) m->focus = s;
  if (!m->focus.empty() && (int)m->focus.size() != d.L)
    return am_context_fail(ctx, AM_ERR_FORMAT, "alignment dataset: 'focus_sequence' has %zu letters, L = %d",
                           m->focus.size(), d.L);
  return AM_OK;
}

// o.gaps applied: missing → drop the gap colour (an error without one), state → keep it.
am_status map_gaps(am_context *ctx, const PLOptions &o, MsaData *m) {
  m->gaps_missing = o.gaps == "missing" || (o.gaps == "auto" && m->gap_state >= 0);
  if (!m->gaps_missing) return AM_OK;
  if (m->gap_state < 0)
    return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "pseudolikelihood: gaps=missing but the dataset has no gap "
                                                         "state (no '-' in its alphabet, no gap_state)");
  if (m->seq.C < 3)
    return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "pseudolikelihood: gaps=missing leaves fewer than 2 colours");
  drop_gap_colour(m->seq.train, m->gap_state);
  drop_gap_colour(m->seq.test, m->gap_state);
  if (!m->alphabet.empty()) m->alphabet.erase((size_t)m->gap_state, 1);
  m->seq.C -= 1;
  m->gap_state = -1;
  return AM_OK;
}

}  // namespace

bool is_alignment_dataset(const am_record *ds) {
  return ds && (am_record_get(ds, "weights") || am_record_get(ds, "alphabet"));
}

bool wants_msa_fit(const PLOptions &o, const am_record *ds) {
  return is_alignment_dataset(ds) || o.fields == "1" || o.model == "potts";
}

am_status read_msa_dataset(am_context *ctx, const am_record *ds, const PLOptions &o, MsaData *m) {
  SeqData &d = m->seq;
  am_status st = read_sequence_dataset(ctx, ds, 0, &d);
  if (st != AM_OK) return st;
  if ((st = read_vector(ctx, ds, "weights", d.M, m->w, std::vector<double>(d.M, 1.0))) != AM_OK) return st;
  if ((st = read_vector(ctx, ds, "weights_test", d.M_test, m->w_test, std::vector<double>(d.M_test, 1.0))) != AM_OK)
    return st;
  if ((st = check_weights(ctx, m->w, "weights")) != AM_OK) return st;
  if ((st = check_weights(ctx, m->w_test, "weights_test")) != AM_OK) return st;
  double neff = 0.0;
  for (double x : m->w) neff += x;
  for (double x : m->w_test) neff += x;
  m->neff = neff;
  am_record_get_number(ds, "neff", &m->neff);
  if (o.M_use > 0 && o.M_use < d.M) {  // the first M_use training sequences, as the collapsed path takes them
    d.M = o.M_use;
    d.train.resize(d.M * (size_t)d.L);
    m->w.resize(d.M);
  }
  if ((st = read_labels(ctx, ds, m)) != AM_OK) return st;
  m->fields = o.fields == "1" || (o.fields == "auto" && is_alignment_dataset(ds));
  return map_gaps(ctx, o, m);
}

LbfgsOptions msa_lbfgs_options(const PLOptions &o) {
  LbfgsOptions lo;
  lo.max_iter = o.max_iter;
  lo.gtol = o.gtol;
  lo.ftol = o.ftol;
  if (o.rtol > 0.0 && o.stop_window > 0) {
    lo.window = o.stop_window;
    lo.window_rtol = o.rtol;
    lo.window_progress = o.stop_progress;
  }
  return lo;
}

namespace {

// An array of doubles, row-major, into the record.
void set_array(am_record *obj, const char *key, const double *x, std::initializer_list<size_t> shape) {
  const std::vector<size_t> sh(shape);
  const am_array_view v = am_array_view_make(AM_F64, (uint32_t)sh.size(), sh.data(), 0, x);
  am_record_set_array(obj, key, &v);
}

// run.contacts: the pairs i < j by score, as parallel vectors (site numbers, letters as ASCII codes).
void write_contacts(am_record *run, const MsaData &m, const std::vector<double> &S) {
  const int L = m.seq.L;
  const std::vector<RankedPair> r = rank_pairs(S, L);
  std::vector<double> i(r.size()), j(r.size()), ri(r.size()), rj(r.size()), sc(r.size()), sep(r.size());
  for (size_t k = 0; k < r.size(); ++k) {
    i[k] = m.site_numbers[r[k].i];
    j[k] = m.site_numbers[r[k].j];
    ri[k] = m.focus.empty() ? '-' : (unsigned char)m.focus[r[k].i];
    rj[k] = m.focus.empty() ? '-' : (unsigned char)m.focus[r[k].j];
    sc[k] = r[k].score;
    sep[k] = std::fabs(j[k] - i[k]);
  }
  am_record *c = am_record_object(run, "contacts");
  if (!c) return;
  am_record_set_vector(c, "i", i.data(), i.size());
  am_record_set_vector(c, "j", j.data(), j.size());
  am_record_set_vector(c, "res_i", ri.data(), ri.size());
  am_record_set_vector(c, "res_j", rj.data(), rj.size());
  am_record_set_vector(c, "score", sc.data(), sc.size());
  am_record_set_vector(c, "separation", sep.data(), sep.size());
}

// run.scores, run.fn, run.contacts and run.params (h, J; A, V for the factored model) of the fitted θ.
void write_couplings(am_record *run, const MsaData &m, MsaModel &model, const double *th, const PLOptions &o) {
  const size_t L = m.seq.L, C = m.seq.C;
  std::vector<double> J(L * L * C * C), h(L * C, 0.0);
  model.couplings(th, J.data());
  std::copy(th, th + model.fields_size(), h.begin());
  const std::vector<double> F = frobenius_scores(J.data(), (int)L, (int)C, m.gap_state);
  const std::vector<double> S = apc_scores(F, (int)L);
  set_array(run, "scores", S.data(), {L, L});
  set_array(run, "fn", F.data(), {L, L});
  write_contacts(run, m, S);
  am_record *p = am_record_object(run, "params");
  if (!p) return;
  set_array(p, "h", h.data(), {L, C});
  set_array(p, "J", J.data(), {L, L, C, C});
  if (model.kind() != MsaKind::Factored) return;
  const size_t H = (size_t)o.heads;
  std::vector<double> A(H * L * L);
  model.attention(th, A.data());
  set_array(p, "A", A.data(), {H, L, L});
  set_array(p, "V", th + model.fields_size() + H * L * L, {H, C, C});
}

// The run keys of the fit (docs/msa.md).
void write_msa_run(am_record *run, const MsaData &m, const PLOptions &o, const LbfgsResult &res, double train_loss,
                   double test_loss, double fit_time) {
  const SeqData &d = m.seq;
  am_record_set_string(run, "model", o.model == "potts" ? "potts" : "factored");
  am_record_set_number(run, "heads", o.model == "potts" ? 0 : o.heads);
  am_record_set_number(run, "train_loss", train_loss);
  if (d.M_test) am_record_set_number(run, "test_loss", test_loss);
  else am_record_set_null(run, "test_loss");
  am_record_set_number(run, "neff", m.neff);
  am_record_set_number(run, "M", (double)d.M);
  am_record_set_number(run, "M_test", (double)d.M_test);
  am_record_set_number(run, "L", d.L);
  am_record_set_number(run, "C", d.C);
  am_record_set_string(run, "alphabet", m.alphabet.c_str());
  am_record_set_string(run, "gaps", m.gaps_missing ? "missing" : "state");
  am_record_set_bool(run, "fields", m.fields);
  am_record_set_number(run, "lambda_h", o.lambda_h);
  am_record_set_number(run, "lambda_e", o.lambda_e);
  if (o.model != "potts") {
    am_record_set_number(run, "logit_scale", o.logit_scale > 0.0 ? o.logit_scale : d.L / 8.0);
    am_record_set_bool(run, "symmetric", o.symmetric);
  }
  am_record_set_number(run, "objective", res.f);
  am_record_set_number(run, "grad_norm", res.gnorm);
  am_record_set_number(run, "iterations", res.iterations);
  am_record_set_number(run, "evaluations", res.evaluations);
  am_record_set_string(run, "stop_reason", res.reason.c_str());
  am_record_set_number(run, "fit_time_s", fit_time);
  am_record_set_vector(run, "site_numbers", m.site_numbers.data(), m.site_numbers.size());
  if (!m.focus.empty()) am_record_set_string(run, "focus_sequence", m.focus.c_str());
}

am_status check_msa_options(am_context *ctx, const PLOptions &o) {
  if (o.optimizer != "lbfgs" || o.a != 0.0 || !o.a_scan.empty())
    return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT,
                           "pseudolikelihood: the alignment fit (fields/model=potts/an alignment dataset) runs L-BFGS "
                           "on the collapsed model only: optimizer=lbfgs, a=0, no a_scan");
  return AM_OK;
}

// The fit's memory from the dataset's shapes and the options, before anything of the fit is allocated: the model's
// colours are C − 1 when the gaps are missing (the gap state as read_labels and map_gaps take it).
am_status check_msa_memory(am_context *ctx, const PLOptions &o, const am_record *ds) {
  FitShape s;
  if (!sequence_dataset_shape(ds, o.M_use, &s.M, &s.M_test, &s.L, &s.C)) return AM_OK;  // the read names the problem
  const char *alpha = nullptr;
  double g = -1;
  if (am_record_get_number(ds, "gap_state", &g) != AM_OK && am_record_get_string(ds, "alphabet", &alpha) == AM_OK &&
      alpha && std::string(alpha).find('-') != std::string::npos)
    g = (double)std::string(alpha).find('-');
  const bool missing = o.gaps == "missing" || (o.gaps == "auto" && g >= 0);
  if (missing && s.C >= 3) s.C -= 1;
  s.workers = o.parallel ? am_context_threads(ctx) : 1;
  const bool potts = o.model == "potts";
  const bool fields = o.fields == "1" || (o.fields == "auto" && is_alignment_dataset(ds));
  const double bytes = msa_fit_bytes(s, potts ? MsaKind::Potts : MsaKind::Factored, o.heads, fields);
  return check_fit_memory(ctx, bytes,
                          fit_what("the alignment fit", s,
                                   potts ? "model=potts" : std::to_string(o.heads) + (o.heads == 1 ? " head" : " heads")));
}

// Σ_μ w_μ · #{i : s^μ_i ≥ 0}: the weight of the scored tokens (the objective's denominator).
double scored_weight(const std::vector<int32_t> &t, const std::vector<double> &w, int L) {
  double n = 0.0;
  for (size_t mu = 0; mu < w.size(); ++mu)
    for (int i = 0; i < L; ++i) n += t[mu * L + i] >= 0 ? w[mu] : 0.0;
  return n;
}

}  // namespace

am_status run_msa_fit(am_context *ctx, const PLOptions &o, const am_record *ds, const am_rng &rng_in, am_record *run) {
  const double t0 = now_s();
  MsaData m;
  am_status st = check_msa_options(ctx, o);
  if (st != AM_OK || (st = check_msa_memory(ctx, o, ds)) != AM_OK || (st = read_msa_dataset(ctx, ds, o, &m)) != AM_OK)
    return st;
  const SeqData &d = m.seq;
  if (!(scored_weight(d.train, m.w, d.L) > 0.0))
    return am_context_fail(ctx, AM_ERR_DOMAIN, "pseudolikelihood: no training token to score (all weights 0 or all "
                                               "tokens gaps with gaps=missing)");
  MsaModel model(o.model == "potts" ? MsaKind::Potts : MsaKind::Factored, d.L, d.C, o.heads, m.fields);
  model.set_parallel(o.parallel);
  model.set_symmetric(o.symmetric);
  model.set_logit_scale(o.logit_scale > 0.0 ? o.logit_scale : d.L / 8.0);
  const MsaPlan plan = make_msa_plan(d.train.data(), d.M, d.L, o.parallel, 4096, [&](double done, double total) {
    return am_context_progress(ctx, done, total, "visiting order (nearest-neighbour chain)") != 0;
  });
  if (plan.order.size() != d.M) return AM_CANCELLED;
  const MsaBatch train{d.M, d.train.data(), m.w.data(), &plan}, test{d.M_test, d.test.data(), m.w_test.data()};
  am_rng rng;
  am_rng_split(&rng_in, 7, &rng);
  std::vector<double> th(model.n_params());
  model.init(th.data(), train, rng, o.init_scale);
  bool cancelled = false;
  const auto f = [&](const double *x, double *g) { return model.objective(x, train, o.lambda_h, o.lambda_e, g); };
  LbfgsOptions lo = msa_lbfgs_options(o);
  lo.stop = [ctx] { return am_context_cancelled(ctx) != 0; };  // a stop waits for one evaluation at most
  const LbfgsResult res =
      lbfgs_minimize(th.size(), th.data(), f, lo, [&](int it, double fx, double gn, const double *, double to_stop) {
        am_context_log(ctx, AM_LOG_DEBUG, "pseudolikelihood: iteration %d, objective %.8f, |g| %.3g", it, fx, gn);
        cancelled = am_context_convergence(ctx, it, to_stop, 1.0, "L-BFGS") != 0;  // max_iter is only a cap
        return !cancelled;
      });
  const double fit_time = now_s() - t0;
  am_context_log(ctx, AM_LOG_INFO, "pseudolikelihood: %d iterations, objective %.6f, stopped: %s", res.iterations,
                 res.f, res.reason.c_str());
  if (res.status == LBFGS_NONFINITE)
    return am_context_fail(ctx, AM_ERR_NONFINITE, "pseudolikelihood: the objective or its gradient is not finite at "
                                                  "iteration %d", res.iterations);
  const double test_loss = d.M_test && scored_weight(d.test, m.w_test, d.L) > 0 ? model.mean_nll(th.data(), test) : NAN;
  write_msa_run(run, m, o, res, model.mean_nll(th.data(), train), test_loss, fit_time);
  write_couplings(run, m, model, th.data(), o);
  return cancelled || res.status == LBFGS_CANCELLED ? AM_CANCELLED : AM_OK;
}

}  // namespace am::potts
