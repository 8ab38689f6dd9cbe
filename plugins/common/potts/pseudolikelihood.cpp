// potts_core — the factored-attention fit of the estimator "pseudolikelihood" (collapsed or with perturbation a; see
// potts_estimators.h, docs/potts.md): the fit by L-BFGS or a mini-batch optimiser, its curves and run keys. Shared:
// the replica estimator's Potts panel runs it too.
#include "potts_estimators.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "factored.h"
#include "fit_memory.h"
#include "lbfgs.h"
#include "minibatch.h"
#include "mixed.h"

namespace am::potts {

LbfgsOptions lbfgs_options(const PLOptions &o, int max_iter, size_t n_params, size_t M, int L) {
  LbfgsOptions lo;
  lo.max_iter = max_iter;
  lo.gtol = o.gtol;
  lo.ftol = o.ftol;
  if (o.stop_tol > 0.0 && o.stop_window > 0) {
    lo.window = o.stop_window;
    lo.window_tol = o.stop_tol * (double)n_params / (2.0 * (double)M * L);
    lo.window_progress = o.stop_progress;
  }
  return lo;
}

LbfgsResult fit_factored(FactoredModel &fm, std::vector<double> &theta, const int32_t *tokens, size_t M,
                         const PLOptions &o, const IterationCallback &cb) {
  fm.set_parallel(o.parallel);
  const LbfgsOptions lo = lbfgs_options(o, o.max_iter, theta.size(), M, fm.L());
  return lbfgs_minimize(
      theta.size(), theta.data(), [&](const double *x, double *g) { return fm.loss(x, tokens, M, g, o.l2); }, lo, cb);
}

namespace {

// The options with the learning rate resolved: lr ≤ 0 means sgd 20, adam 0.02.
PLOptions with_learning_rate(PLOptions o) {
  if (!(o.lr > 0.0)) o.lr = (o.optimizer == "adam") ? 0.02 : 20.0;
  return o;
}

// Embedding dimension of the uncollapsed model (0 = max(L, C)).
int embedding_dim(const PLOptions &o, const SeqData &d) { return o.d > 0 ? o.d : std::max(d.L, d.C); }

// What the main fit leaves for the run record.
struct PLFit {
  std::vector<double> A, V;  // reported attention (L×L) and values (C×C)
  double train_loss = NAN, test_loss = NAN;
  LbfgsResult res;           // optimizer = lbfgs
  int epochs_done = 0;       // sgd/adam epochs (lbfgs: iterations)
  Curves curves;
};

// Trains `model` (a FactoredModel or MixedModel: loss(theta, tokens, n, grad, l2)) from theta with
// o.optimizer: full-batch L-BFGS for at most max_iter iterations, or mini-batch SGD/Adam for o.epochs.
// eval(step) records a point of the training curves (step 0, then every o.curve_every steps).
template <class Model, class Eval>
am_status train(am_context *ctx, const PLOptions &o, Model &model, const SeqData &d, int max_iter, const char *label,
                Eval eval, std::vector<double> &th, am_rng *rng, LbfgsResult *res, int *epochs_done) {
  if (o.optimizer != "lbfgs")
    return minibatch_train(
        ctx, label, [&](const double *x, const int32_t *t, size_t n, double *g) { return model.loss(x, t, n, g, o.l2); },
        eval, th.data(), th.size(), d.train, d.M, d.L, o.optimizer, o.lr, o.cosine, o.batch, o.epochs, o.curve_every,
        rng, epochs_done);
  LbfgsOptions lo = lbfgs_options(o, max_iter, th.size(), d.M, d.L);
  lo.stop = [ctx] { return am_context_cancelled(ctx) != 0; };  // a stop waits for one evaluation at most
  bool cancelled = false;
  eval(0);
  *res = lbfgs_minimize(
      th.size(), th.data(), [&](const double *x, double *g) { return model.loss(x, d.train.data(), d.M, g, o.l2); },
      lo, [&](int it, double, double, const double *, double to_stop) {
        if (it % o.curve_every == 0) eval(it);
        if (am_context_convergence(ctx, it, to_stop, 1.0, label)) {  // open-ended: max_iter is only a cap
          cancelled = true;
          return false;
        }
        return true;
      });
  *epochs_done = res->iterations;
  am_context_log(ctx, AM_LOG_INFO, "pseudolikelihood: %s stopped after %d iterations: %s", label, res->iterations,
                 res->reason.c_str());
  if (res->status == LBFGS_NONFINITE)
    return am_context_fail(ctx, AM_ERR_NONFINITE, "%s: the loss or its gradient is not finite at iteration %d", label,
                           res->iterations);
  return cancelled || res->status == LBFGS_CANCELLED ? AM_CANCELLED : AM_OK;
}

// One fit of the uncollapsed model mm (its perturbation a) from a small random start; curves may be NULL.
am_status fit_mixed(am_context *ctx, const PLOptions &o, const SeqData &d, int max_iter, am_rng *rng, MixedModel &mm,
                    std::vector<double> &th, Curves *curves, LbfgsResult *res, int *epochs_done, const char *label) {
  th.assign(mm.n_params(), 0.0);
  mm.init(th.data(), rng, 0.1);
  std::vector<double> Abar((size_t)d.L * d.L);
  auto eval = [&](int ep) {
    if (!curves) return;
    const double t0 = now_s();
    curves->epoch.push_back(ep);
    curves->train.push_back(mm.loss(th.data(), d.train.data(), d.M, nullptr));
    curves->test.push_back(d.M_test ? mm.loss(th.data(), d.test.data(), d.M_test, nullptr) : NAN);
    if (d.has_truth) {
      mm.mean_attention(th.data(), d.M_test ? d.test.data() : d.train.data(),
                        std::min<size_t>(d.M_test ? d.M_test : d.M, 2000), Abar.data());
      curves->recon.push_back(recon_error(Abar.data(), d.truth.J, d.L, d.r));
    } else {
      curves->recon.push_back(NAN);
    }
    curves->seconds += now_s() - t0;
  };
  return train(ctx, o, mm, d, max_iter, label, eval, th, rng, res, epochs_done);
}

// Start of the collapsed model: V ~ N(0, init_scale²) per head; W = 0 for one head, and for several heads
// W ~ N(0, init_scale²) too (breaks the symmetry between them).
void init_collapsed(FactoredModel &fm, const PLOptions &o, int L, int C, am_rng *rng, std::vector<double> &th) {
  th.assign(fm.n_params(), 0.0);
  for (int h = 0; h < o.heads; ++h) {
    double *V = fm.V(th.data(), h);
    am_rng_fill_normal(rng, V, (size_t)C * C);
    for (size_t k = 0; k < (size_t)C * C; ++k) V[k] *= o.init_scale;
    if (o.heads > 1) {
      double *W = fm.W(th.data(), h);
      am_rng_fill_normal(rng, W, (size_t)L * L);
      for (size_t k = 0; k < (size_t)L * L; ++k) W[k] *= o.init_scale;
    }
  }
}

// The collapsed factored model (a = 0): W, V per head. The reported A is the attention of head 1 (for
// heads > 1 every head's A and V also go to "heads_detail").
am_status fit_collapsed(am_context *ctx, const PLOptions &o, const SeqData &d, am_rng *rng, am_record *run, PLFit &f) {
  const int L = d.L, C = d.C;
  FactoredModel fm(L, C, o.heads);
  fm.set_parallel(o.parallel);
  std::vector<double> th, Ah((size_t)L * L);
  init_collapsed(fm, o, L, C, rng, th);
  auto eval = [&](int ep) {
    const double t0 = now_s();
    f.curves.epoch.push_back(ep);
    f.curves.train.push_back(fm.loss(th.data(), d.train.data(), d.M, nullptr));
    f.curves.test.push_back(d.M_test ? fm.loss(th.data(), d.test.data(), d.M_test, nullptr) : NAN);
    attention_from_W(fm.W(th.data(), 0), L, Ah.data());
    f.curves.recon.push_back(d.has_truth ? recon_error(Ah.data(), d.truth.J, L, d.r) : NAN);
    f.curves.seconds += now_s() - t0;
  };
  const bool lbfgs = o.optimizer == "lbfgs";
  const am_status st =
      train(ctx, o, fm, d, o.max_iter, lbfgs ? "L-BFGS" : o.optimizer.c_str(), eval, th, rng, &f.res, &f.epochs_done);
  if (lbfgs && f.curves.epoch.back() != f.res.iterations) eval(f.res.iterations);
  f.train_loss = fm.loss(th.data(), d.train.data(), d.M, nullptr);
  f.test_loss = d.M_test ? fm.loss(th.data(), d.test.data(), d.M_test, nullptr) : NAN;
  attention_from_W(fm.W(th.data(), 0), L, f.A.data());
  std::copy(fm.V(th.data(), 0), fm.V(th.data(), 0) + (size_t)C * C, f.V.data());
  am_record_set_matrix(run, "W", fm.W(th.data(), 0), L, L, L);
  if (o.heads > 1) {
    am_record *hl = am_record_list(run, "heads_detail");
    for (int h = 0; h < o.heads && hl; ++h) {
      am_record *e = am_record_append_object(hl);
      attention_from_W(fm.W(th.data(), h), L, Ah.data());
      am_record_set_matrix(e, "A", Ah.data(), L, L, L);
      am_record_set_matrix(e, "V", fm.V(th.data(), h), C, C, C);
    }
  }
  am_record_set_string(run, "model", "factored attention, collapsed (W, V free; softmax over j != i)");
  am_record_set_number(run, "n_params", (double)fm.n_params());
  return st;
}

// The uncollapsed model at perturbation o.a; A is its mean attention, V its collapsed values.
am_status fit_uncollapsed(am_context *ctx, const PLOptions &o, const SeqData &d, am_rng *rng, am_record *run,
                          PLFit &f) {
  const int L = d.L, dd = embedding_dim(o, d);
  MixedModel mm(L, d.C, dd, o.a);
  std::vector<double> th;
  const am_status st = fit_mixed(ctx, o, d, o.max_iter, rng, mm, th, &f.curves, &f.res, &f.epochs_done,
                                 o.optimizer == "lbfgs" ? "L-BFGS" : o.optimizer.c_str());
  f.train_loss = mm.loss(th.data(), d.train.data(), d.M, nullptr);
  f.test_loss = d.M_test ? mm.loss(th.data(), d.test.data(), d.M_test, nullptr) : NAN;
  mm.mean_attention(th.data(), d.M_test ? d.test.data() : d.train.data(), d.M_test ? d.M_test : d.M, f.A.data());
  std::vector<double> Wc((size_t)L * L);
  mm.collapsed(th.data(), Wc.data(), f.V.data());
  am_record_set_string(run, "model",
                       "factored attention, uncollapsed with perturbation a: scores (p_i + a E[MASK])·(p_j + a "
                       "E[s_j]), values E[s_j] + a p_j, j != i");
  am_record_set_number(run, "d", dd);
  am_record_set_number(run, "n_params", (double)mm.n_params());
  return st;
}

// run.optimizer: what the optimizer did.
void write_optimizer(am_record *run, const PLOptions &o, const PLFit &f) {
  am_record *opt = am_record_object(run, "optimizer");
  if (!opt) return;
  am_record_set_string(opt, "name", o.optimizer.c_str());
  if (o.optimizer == "lbfgs") {
    am_record_set_number(opt, "iterations", f.res.iterations);
    am_record_set_number(opt, "evaluations", f.res.evaluations);
    am_record_set_number(opt, "grad_norm", f.res.gnorm);
    am_record_set_string(opt, "status", lbfgs_status_string(f.res.status));
    am_record_set_string(run, "stop_reason", f.res.reason.c_str());
    am_record_set_bool(opt, "converged", f.res.status == LBFGS_CONVERGED || f.res.status == LBFGS_FTOL ||
                                             f.res.status == LBFGS_ROUNDOFF || f.res.status == LBFGS_WINDOW);
  } else {
    am_record_set_number(opt, "epochs", f.epochs_done);
    am_record_set_string(run, "stop_reason", f.epochs_done >= o.epochs ? "epochs" : "cancelled");
    am_record_set_number(opt, "lr", o.lr);
    am_record_set_number(opt, "batch", o.batch);
  }
}

// run.a_scan: the uncollapsed model fitted at every a of o.a_scan (a_scan_iter iterations each; the stream
// of value k is split 100 + k off rng) — test loss vs a.
am_status scan_a(am_context *ctx, const PLOptions &o, const SeqData &d, const am_rng &rng, am_record *run) {
  std::vector<double> as, tr, te;
  const int dd = embedding_dim(o, d);
  am_status st = AM_OK;
  for (size_t k = 0; k < o.a_scan.size() && st == AM_OK; ++k) {
    MixedModel mm(d.L, d.C, dd, o.a_scan[k]);
    std::vector<double> th;
    am_rng r;
    am_rng_split(&rng, 100 + k, &r);
    LbfgsResult rr;
    int ed = 0;
    char label[64];
    std::snprintf(label, sizeof label, "a-scan a=%g", o.a_scan[k]);
    st = fit_mixed(ctx, o, d, o.a_scan_iter, &r, mm, th, nullptr, &rr, &ed, label);
    as.push_back(o.a_scan[k]);
    tr.push_back(mm.loss(th.data(), d.train.data(), d.M, nullptr));
    te.push_back(d.M_test ? mm.loss(th.data(), d.test.data(), d.M_test, nullptr) : NAN);
    am_context_log(ctx, AM_LOG_INFO, "pseudolikelihood: a = %g: train %.5f, test %.5f", o.a_scan[k], tr.back(),
                   te.back());
  }
  am_record *sc = am_record_object(run, "a_scan");
  if (sc) {
    am_record_set_vector(sc, "a", as.data(), as.size());
    am_record_set_vector(sc, "train_loss", tr.data(), tr.size());
    am_record_set_vector(sc, "test_loss", te.data(), te.size());
    if (d.has_truth) am_record_set_number(sc, "epsilon_star", d.eps_star);
    am_record_set_number(sc, "max_iter", o.a_scan_iter);
  }
  return st;
}

// The fit's memory before its model exists: the collapsed or uncollapsed fit, and the a-scan's models (one at a time,
// after the main fit's is gone).
am_status check_memory(am_context *ctx, const PLOptions &o, const SeqData &d) {
  FitShape s;
  s.M = d.M, s.M_test = d.M_test, s.L = d.L, s.C = d.C, s.workers = o.parallel ? am_context_threads(ctx) : 1;
  const bool lbfgs = o.optimizer == "lbfgs";
  const int dd = embedding_dim(o, d);
  double bytes = o.a == 0.0 ? collapsed_fit_bytes(s, o.heads, lbfgs) : mixed_fit_bytes(s, dd, lbfgs);
  if (!o.a_scan.empty()) bytes = std::max(bytes, mixed_fit_bytes(s, dd, true));
  const std::string detail = o.a == 0.0 ? "collapsed, " + std::to_string(o.heads) + (o.heads == 1 ? " head" : " heads")
                                        : "uncollapsed, d = " + std::to_string(dd);
  return check_fit_memory(ctx, bytes, fit_what("the pseudolikelihood fit", s, detail));
}

}  // namespace

am_status run_pseudolikelihood(am_context *ctx, const PLOptions &options, const SeqData &d, const am_rng &rng_in,
                               am_record *run) {
  const double t0 = now_s();
  const PLOptions o = with_learning_rate(options);
  if (const am_status mem = check_memory(ctx, o, d); mem != AM_OK) return mem;
  am_rng rng;
  am_rng_split(&rng_in, 7, &rng);
  PLFit f;
  f.A.resize((size_t)d.L * d.L);
  f.V.resize((size_t)d.C * d.C);
  am_status st = o.a == 0.0 ? fit_collapsed(ctx, o, d, &rng, run, f) : fit_uncollapsed(ctx, o, d, &rng, run, f);
  am_record_set_number(run, "a", o.a);
  am_record_set_number(run, "heads", o.heads);
  am_record_set_number(run, "l2", o.l2);
  write_common(run, d, f.train_loss, f.test_loss, f.A.data(), f.V.data());
  f.curves.eps_star = d.eps_star;
  f.curves.write(run);
  write_optimizer(run, o, f);
  am_record_set_number(run, "fit_time_s", now_s() - t0 - f.curves.seconds);
  am_record_set_number(run, "curve_time_s", f.curves.seconds);
  if (st == AM_OK && !o.a_scan.empty()) st = scan_a(ctx, o, d, rng, run);
  am_record_set_number(run, "wall_time_fit_s", now_s() - t0);
  return st;
}

}  // namespace am::potts
