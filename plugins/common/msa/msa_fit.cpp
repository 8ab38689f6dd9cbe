// msa_core — the alignment fit of the estimator "pseudolikelihood", the second half of the alignment pipeline
// (pipeline.hpp): its steps, then run_msa_fit taking them in order (msa_fit.h, docs/msa.md).
#include "msa_fit.h"

#include <attnmech/array.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "dataset.hpp"
#include "msa_scores.h"

namespace am::msa {

using potts::LbfgsOptions;
using potts::LbfgsResult;
using potts::PLOptions;
using potts::SeqData;

// run.contacts (msa_fit.h).
am_status write_contacts(am_record *run, const MsaData &m, const std::vector<double> &S) {
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
  if (!c) return AM_ERR_NO_MEMORY;
  am_status st = AM_OK;
  const std::pair<const char *, const std::vector<double> *> cols[] = {
      {"i", &i}, {"j", &j}, {"res_i", &ri}, {"res_j", &rj}, {"score", &sc}, {"separation", &sep}};
  for (const auto &kv : cols)
    if (st == AM_OK) st = am_record_set_vector(c, kv.first, kv.second->data(), kv.second->size());
  return st;
}

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

// The dataset's notes for the run: how its sites are numbered and its warnings (the task msa's; absent elsewhere).
void read_notes(const am_record *ds, MsaData *m) {
  const char *s = nullptr;
  if (am_record_get_string(ds, "site_numbering", &s) == AM_OK && s) m->site_numbering = s;
  const am_record *w = am_record_get(ds, kWarningsKey);
  if (am_record_type_of(w) != AM_REC_LIST) return;
  for (size_t i = 0; i < am_record_size(w); ++i)
    if (const char *t = am_record_string(am_record_at(w, i))) m->warnings.emplace_back(t);
}

// f.gaps applied: missing → drop the gap colour (an error without one), state → keep it.
am_status map_gaps(am_context *ctx, const FitOptions &f, MsaData *m) {
  m->gaps_missing = f.gaps == "missing" || (f.gaps == "auto" && m->gap_state >= 0);
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

// Single-site fields: asked for (1), or by default (auto) on a dataset the task msa marked as an alignment.
bool fields_on(const FitOptions &f, const am_record *ds) {
  return f.fields == "1" || (f.fields == "auto" && is_alignment(ds));
}

}  // namespace

am_status read_msa_dataset(am_context *ctx, const am_record *ds, const PLOptions &o, const FitOptions &f, MsaData *m) {
  SeqData &d = m->seq;
  am_status st = potts::read_sequence_dataset(ctx, ds, 0, &d);
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
  read_notes(ds, m);
  m->fields = fields_on(f, ds);
  return map_gaps(ctx, f, m);
}

LbfgsOptions msa_lbfgs_options(const PLOptions &o, const FitOptions &f) {
  LbfgsOptions lo;
  lo.max_iter = o.max_iter;
  lo.gtol = o.gtol;
  lo.ftol = o.ftol;
  if (f.rtol > 0.0 && o.stop_window > 0) {
    lo.window = o.stop_window;
    lo.window_rtol = f.rtol;
    lo.window_progress = o.stop_progress;
  }
  return lo;
}

// The dataset's warnings as the run's (msa_fit.h) (the host gives the run the status "warning" and the CLI and Python show them;
// the task logged each when it made the dataset).
void write_warnings(am_record *run, const MsaData &m) {
  if (m.warnings.empty()) return;
  am_record *list = am_record_get_mut(run, kWarningsKey);
  if (am_record_type_of(list) != AM_REC_LIST) list = am_record_list(run, kWarningsKey);
  for (const std::string &w : m.warnings) am_record_append_string(list, w.c_str());
}

namespace {

// An array of doubles, row-major, into the record.
void set_array(am_record *obj, const char *key, const double *x, std::initializer_list<size_t> shape) {
  const std::vector<size_t> sh(shape);
  const am_array_view v = am_array_view_make(AM_F64, (uint32_t)sh.size(), sh.data(), 0, x);
  am_record_set_array(obj, key, &v);
}

// run.scores, run.fn, run.contacts and run.params (h, J as writes_couplings says; A, V for the factored model) of
// the fitted θ. With gaps as a state the gap colour counts in F_ij unless score_gap=exclude (plmc's scores count
// every state). The factored model's scores come from its heads row by row (MsaModel::pair_rows), without J.
void write_couplings(am_record *run, const MsaData &m, MsaModel &model, const double *th, const PLOptions &o,
                     const FitOptions &f) {
  const size_t L = m.seq.L, C = m.seq.C;
  const bool factored = model.kind() == MsaKind::Factored;
  const bool with_J = writes_couplings(model.kind(), (int)L, (int)C, f.couplings);
  std::vector<double> J(with_J || !factored ? L * L * C * C : 0), h(L * C, 0.0);
  if (!J.empty()) model.couplings(th, J.data());
  std::copy(th, th + model.fields_size(), h.begin());
  const int left_out = f.score_gap == "exclude" ? m.gap_state : -1;
  const std::vector<double> F = factored ? frobenius_scores((int)L, (int)C, left_out, model.pair_rows(th))
                                         : frobenius_scores(J.data(), (int)L, (int)C, left_out);
  const std::vector<double> S = apc_scores(F, (int)L);
  set_array(run, "scores", S.data(), {L, L});
  set_array(run, "fn", F.data(), {L, L});
  write_contacts(run, m, S);
  am_record *p = am_record_object(run, "params");
  if (!p) return;
  set_array(p, "h", h.data(), {L, C});
  if (with_J) set_array(p, "J", J.data(), {L, L, C, C});
  if (!factored) return;
  const size_t H = (size_t)o.heads;
  std::vector<double> A(H * L * L);
  model.attention(th, A.data());
  set_array(p, "A", A.data(), {H, L, L});
  set_array(p, "V", th + model.fields_size() + H * L * L, {H, C, C});
}

// The run keys of the fit (docs/msa.md), `fit` first.
void write_msa_run(am_record *run, const MsaData &m, const PLOptions &o, const FitOptions &f, const LbfgsResult &res,
                   double train_loss, double test_loss, double fit_time) {
  const SeqData &d = m.seq;
  am_record_set_string(run, kFitKey, kFitAlignment);
  am_record_set_string(run, "model", f.model == "potts" ? "potts" : "factored");
  am_record_set_number(run, "heads", f.model == "potts" ? 0 : o.heads);
  if (!f.model_rule.empty()) am_record_set_string(run, "model_rule", f.model_rule.c_str());
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
  if (!m.gaps_missing && m.gap_state >= 0) am_record_set_string(run, "score_gap", f.score_gap.c_str());
  am_record_set_bool(run, "fields", m.fields);
  am_record_set_number(run, "lambda_h", f.lambda_h);
  am_record_set_number(run, "lambda_e", f.lambda_e);
  if (f.model != "potts") {
    am_record_set_number(run, "logit_scale", f.logit_scale > 0.0 ? f.logit_scale : d.L / 8.0);
    am_record_set_bool(run, "symmetric", f.symmetric);
  }
  am_record_set_number(run, "objective", res.f);
  am_record_set_number(run, "grad_norm", res.gnorm);
  am_record_set_number(run, "iterations", res.iterations);
  am_record_set_number(run, "evaluations", res.evaluations);
  am_record_set_string(run, "stop_reason", res.reason.c_str());
  am_record_set_number(run, "fit_time_s", fit_time);
  am_record_set_vector(run, "site_numbers", m.site_numbers.data(), m.site_numbers.size());
  if (!m.site_numbering.empty()) am_record_set_string(run, "site_numbering", m.site_numbering.c_str());
  if (!m.focus.empty()) am_record_set_string(run, "focus_sequence", m.focus.c_str());
}

am_status check_msa_options(am_context *ctx, const PLOptions &o) {
  if (o.optimizer != "lbfgs" || o.a != 0.0 || !o.a_scan.empty())
    return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT,
                           "pseudolikelihood: the alignment fit (fields/model=potts/an alignment dataset) runs L-BFGS "
                           "on the collapsed model only: optimizer=lbfgs, a=0, no a_scan");
  return AM_OK;
}

// The fit's shape from the dataset and the options, before anything of the fit is allocated: the model's colours are
// C − 1 when the gaps are missing (the gap state as read_labels and map_gaps take it). False when the dataset has
// no sequences (the read names it).
bool fit_shape(am_context *ctx, const PLOptions &o, const FitOptions &f, const am_record *ds, potts::FitShape *s) {
  if (!potts::sequence_dataset_shape(ds, o.M_use, &s->M, &s->M_test, &s->L, &s->C)) return false;
  const char *alpha = nullptr;
  double g = -1;
  if (am_record_get_number(ds, "gap_state", &g) != AM_OK && am_record_get_string(ds, "alphabet", &alpha) == AM_OK &&
      alpha && std::string(alpha).find('-') != std::string::npos)
    g = (double)std::string(alpha).find('-');
  const bool missing = f.gaps == "missing" || (f.gaps == "auto" && g >= 0);
  if (missing && s->C >= 3) s->C -= 1;
  s->workers = o.parallel ? am_context_threads(ctx) : 1;
  return true;
}

std::string heads_text(int heads) { return std::to_string(heads) + (heads == 1 ? " head" : " heads"); }

am_status check_msa_memory(am_context *ctx, const PLOptions &o, const FitOptions &f, const am_record *ds) {
  potts::FitShape s;
  if (!fit_shape(ctx, o, f, ds, &s)) return AM_OK;
  const bool potts = f.model == "potts";
  const double bytes = msa_fit_bytes(s, potts ? MsaKind::Potts : MsaKind::Factored, o.heads, fields_on(f, ds),
                                     f.symmetric && !potts, f.couplings);
  std::string detail = potts ? "model=potts" : heads_text(o.heads);
  if (!potts && !f.model_rule.empty() && is_alignment(ds))  // model=auto fell back for memory: say plmc's need
    detail += " (model=auto: plmc's model needs " +
              potts::gigabytes(msa_fit_bytes(s, MsaKind::Potts, o.heads, fields_on(f, ds), false, f.couplings)) + ")";
  return potts::check_fit_memory(ctx, bytes, potts::fit_what("the alignment fit", s, detail));
}

// Σ_μ w_μ · #{i : s^μ_i ≥ 0}: the weight of the scored tokens (the objective's denominator).
double scored_weight(const std::vector<int32_t> &t, const std::vector<double> &w, int L) {
  double n = 0.0;
  for (size_t mu = 0; mu < w.size(); ++mu)
    for (int i = 0; i < L; ++i) n += t[mu * L + i] >= 0 ? w[mu] : 0.0;
  return n;
}

// Refusals before anything is allocated: options the fit does not take, a fit over the memory budget.
am_status check_msa_fit(am_context *ctx, const PLOptions &o, const FitOptions &f, const am_record *ds) {
  const am_status st = check_msa_options(ctx, o);
  return st != AM_OK ? st : check_msa_memory(ctx, o, f, ds);
}

// model=auto (msa_fit.h): plmc's Potts model on an alignment whenever its fit fits the memory budget, else factored
// attention with o.heads heads; model_rule says which and why (the run key `model_rule`).
FitOptions resolve_model(am_context *ctx, const PLOptions &o, const FitOptions &f, const am_record *ds) {
  FitOptions r = f;
  if (f.model != "auto") return r;
  potts::FitShape s;
  if (!is_alignment(ds) || !fit_shape(ctx, o, f, ds, &s)) {
    r.model = "factored";
    r.model_rule = "auto: factored attention (" + heads_text(o.heads) + "): not an alignment dataset";
    return r;
  }
  double budget = 0.0;
  am_memory_check(ctx, 0.0, "the alignment fit", &budget);
  const double need = msa_fit_bytes(s, MsaKind::Potts, o.heads, fields_on(f, ds), false, f.couplings);
  const bool fits = !(budget > 0) || need <= budget;  // no budget known: nothing to refuse by
  r.model = fits ? "potts" : "factored";
  r.model_rule = fits ? "auto: potts (plmc's model; its fit needs " + potts::gigabytes(need) +
                            (budget > 0 ? " of the " + potts::gigabytes(budget) + " budget)" : ")")
                      : "auto: factored attention (" + heads_text(o.heads) + "): plmc's model would need " +
                            potts::gigabytes(need) + ", over the " + potts::gigabytes(budget) + " budget";
  return r;
}

// A clear error when no training token has weight (all weights 0, or every token a gap with gaps missing).
am_status check_scored(am_context *ctx, const MsaData &m) {
  if (scored_weight(m.seq.train, m.w, m.seq.L) > 0.0) return AM_OK;
  return am_context_fail(ctx, AM_ERR_DOMAIN, "pseudolikelihood: no training token to score (all weights 0 or all "
                                             "tokens gaps with gaps=missing)");
}

// The model (factored with o.heads heads, or plmc's Potts model) on the options' loop.
std::unique_ptr<MsaModel> make_model(const PLOptions &o, const FitOptions &f, const MsaData &m) {
  const SeqData &d = m.seq;
  auto model = std::make_unique<MsaModel>(f.model == "potts" ? MsaKind::Potts : MsaKind::Factored, d.L, d.C, o.heads,
                                          m.fields);
  model->set_parallel(o.parallel);
  model->set_symmetric(f.symmetric);
  model->set_logit_scale(f.logit_scale > 0.0 ? f.logit_scale : d.L / 8.0);
  return model;
}

// The training sequences' visiting order, with progress (an order shorter than M: cancelled).
MsaPlan plan_visits(am_context *ctx, const PLOptions &o, const SeqData &d) {
  return make_msa_plan(d.train.data(), d.M, d.L, o.parallel, 4096, [&](double done, double total) {
    return am_context_progress(ctx, done, total, "visiting order (nearest-neighbour chain)") != 0;
  });
}

// What inference leaves: θ, how L-BFGS stopped, whether the context stopped it.
struct Inferred {
  std::vector<double> theta;
  LbfgsResult res;
  bool cancelled = false;
};

// θ from the model's starting point (V drawn from `rng`'s child stream 7), then L-BFGS on the weighted objective.
Inferred infer(am_context *ctx, const PLOptions &o, const FitOptions &f, MsaModel &model, const MsaBatch &train,
               const am_rng &rng_in) {
  Inferred out;
  am_rng rng;
  am_rng_split(&rng_in, 7, &rng);
  out.theta.assign(model.n_params(), 0.0);
  model.init(out.theta.data(), train, rng, o.init_scale);
  const auto objective = [&](const double *x, double *g) {
    return model.objective(x, train, f.lambda_h, f.lambda_e, g);
  };
  LbfgsOptions lo = msa_lbfgs_options(o, f);
  lo.stop = [ctx] { return am_context_cancelled(ctx) != 0; };  // a stop waits for one evaluation at most
  out.res = potts::lbfgs_minimize(
      out.theta.size(), out.theta.data(), objective, lo,
      [&](int it, double fx, double gn, const double *, double to_stop) {
        am_context_log(ctx, AM_LOG_DEBUG, "pseudolikelihood: iteration %d, objective %.8f, |g| %.3g", it, fx, gn);
        out.cancelled = am_context_convergence(ctx, it, to_stop, 1.0, "L-BFGS") != 0;  // max_iter is only a cap
        return !out.cancelled;
      });
  return out;
}

// The run record: the fit's keys (`fit` first, losses, the stop), then scores, fn, contacts and params.
void write_fit(am_record *run, const MsaData &m, const PLOptions &o, const FitOptions &f, MsaModel &model,
               const Inferred &fit, const MsaBatch &train, const MsaBatch &test, double fit_time) {
  const SeqData &d = m.seq;
  const double *th = fit.theta.data();
  const double test_loss = d.M_test && scored_weight(d.test, m.w_test, d.L) > 0 ? model.mean_nll(th, test) : NAN;
  write_msa_run(run, m, o, f, fit.res, model.mean_nll(th, train), test_loss, fit_time);
  write_couplings(run, m, model, th, o, f);
  write_warnings(run, m);
}

// The alignment's weights: the record's and the fit's copy (MsaData::w, w_test).
double weight_bytes(const potts::FitShape &s) { return 2.0 * 8.0 * double(s.M + s.M_test); }

// The outputs of the alignment fit held at once when its last array is written (write_couplings): J and its record
// copy, F, S and their copies, the fields twice, the contact list (rank_pairs' pairs, the six columns and their
// record copies) and the attention maps A with their copy. `record` of them stay in the run record afterwards.
double msa_output_bytes(const potts::FitShape &s, MsaKind kind, int heads, bool with_J) {
  const double L = s.L, C = s.C, LL = L * L, pairs = L * (L - 1) / 2;
  double b = 4 * 8 * LL + 2 * 8 * L * C + pairs * (16 + 6 * 8 + 6 * 8);
  if (with_J) b += 2 * 8 * LL * C * C;
  if (kind == MsaKind::Factored) b += 2 * 8.0 * heads * LL + 2 * 8.0 * heads * C * C;
  return b;
}

}  // namespace

bool writes_couplings(MsaKind kind, int L, int C, const std::string &couplings) {
  if (couplings == "1" || couplings == "0") return couplings == "1";
  return kind == MsaKind::Potts || (double)L * L * C * C <= kAutoCouplings;
}

double msa_fit_bytes(const potts::FitShape &s, MsaKind kind, int heads, bool fields, bool symmetric,
                     const std::string &couplings) {
  const double M = double(s.M), L = s.L;
  const double D = M > 1 ? (M - 1) * L : 0.0;  // changed sites of the plan: at most every site of every visit
  const double model = MsaModel::work_bytes(kind, s.L, s.C, heads, std::max(s.M, s.M_test), symmetric);
  // held throughout: the data, the weights, the model's work arrays and the plan (order, diff_begin, diff_site)
  const double held = potts::data_bytes(s) + weight_bytes(s) + model + 16.0 * M + 4.0 * D;
  const double n = MsaModel::params(kind, s.L, s.C, heads, fields);
  const double call = MsaModel::call_bytes(kind, s.L, s.C, std::max(s.M, s.M_test), D, s.workers);
  const double planning = M * L + 8.0 * std::min(M, 4096.0);  // make_msa_plan's byte rows and candidates
  const double fit = 8.0 * n + potts::lbfgs_bytes(n) + std::max(call, planning);
  const bool with_J = writes_couplings(kind, s.L, s.C, couplings);
  const double out = 8.0 * n + std::max(call, msa_output_bytes(s, kind, heads, with_J));
  return held + std::max(fit, out);
}

am_status run_msa_fit(am_context *ctx, const potts::PLOptions &o, const FitOptions &options, const am_record *ds,
                      const am_rng &rng, am_record *run) {
  const double t0 = potts::now_s();
  const FitOptions f = resolve_model(ctx, o, options, ds);  // model=auto: which model, by the memory it needs
  if (!f.model_rule.empty()) am_context_log(ctx, AM_LOG_INFO, "pseudolikelihood: model %s", f.model_rule.c_str());
  MsaData m;
  am_status st = check_msa_fit(ctx, o, f, ds);  // refusals before anything is allocated
  if (st != AM_OK || (st = read_msa_dataset(ctx, ds, o, f, &m)) != AM_OK || (st = check_scored(ctx, m)) != AM_OK)
    return st;
  const potts::SeqData &d = m.seq;
  const std::unique_ptr<MsaModel> model = make_model(o, f, m);
  const MsaPlan plan = plan_visits(ctx, o, d);  // each sequence after a near neighbour: only changed sites updated
  if (plan.order.size() != d.M) return AM_CANCELLED;
  const MsaBatch train{d.M, d.train.data(), m.w.data(), &plan}, test{d.M_test, d.test.data(), m.w_test.data()};
  const Inferred fit = infer(ctx, o, f, *model, train, rng);  // infer: L-BFGS on the weighted pseudo-likelihood
  const double fit_time = potts::now_s() - t0;
  am_context_log(ctx, AM_LOG_INFO, "pseudolikelihood: %d iterations, objective %.6f, stopped: %s", fit.res.iterations,
                 fit.res.f, fit.res.reason.c_str());
  if (fit.res.status == potts::LBFGS_NONFINITE)
    return am_context_fail(ctx, AM_ERR_NONFINITE, "pseudolikelihood: the objective or its gradient is not finite at "
                                                  "iteration %d", fit.res.iterations);
  write_fit(run, m, o, f, *model, fit, train, test, fit_time);  // write: losses, scores, contacts, parameters
  return fit.cancelled || fit.res.status == potts::LBFGS_CANCELLED ? AM_CANCELLED : AM_OK;
}

}  // namespace am::msa
