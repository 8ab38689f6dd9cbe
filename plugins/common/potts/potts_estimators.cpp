// potts_core — estimators "pseudolikelihood" and "vanilla" (see potts_estimators.h, docs/potts.md).
#include "potts_estimators.h"

#include <attnmech/array.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "factored.h"
#include "lbfgs.h"
#include "mixed.h"
#include "vanilla.h"

namespace potts {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

am_status read_tokens(am_context *ctx, const am_record *ds, const char *key, int L_expect, int C, int *L,
                      size_t *M, std::vector<int32_t> &out) {
  am_array_view v{};
  am_status st = am_record_get_array(ds, key, &v);
  if (st != AM_OK) return st;
  if (v.ndim != 2) return am_context_fail(ctx, AM_ERR_SHAPE, "sequence dataset: '%s' must be a [M, L] array", key);
  if (v.dtype != AM_I32 && v.dtype != AM_I64 && v.dtype != AM_F64 && v.dtype != AM_F32)
    return am_context_fail(ctx, AM_ERR_FORMAT, "sequence dataset: '%s' has an unsupported dtype", key);
  *M = v.shape[0];
  *L = (int)v.shape[1];
  if (L_expect > 0 && *L != L_expect)
    return am_context_fail(ctx, AM_ERR_SHAPE, "sequence dataset: '%s' has L=%d, expected %d", key, *L, L_expect);
  std::vector<double> tmp(*M * (size_t)*L);
  if ((st = am_array_to_f64_c(ctx, &v, tmp.data(), tmp.size())) != AM_OK) return st;
  out.resize(tmp.size());
  for (size_t k = 0; k < tmp.size(); ++k) {
    const double x = tmp[k];
    if (!(x >= 0 && x < C) || x != std::floor(x))
      return am_context_fail(ctx, AM_ERR_DOMAIN, "sequence dataset: '%s' holds %g, outside the colours 0..%d", key, x,
                             C - 1);
    out[k] = (int32_t)x;
  }
  return AM_OK;
}

am_status read_matrix(am_context *ctx, const am_record *obj, const char *key, int n, std::vector<double> &out) {
  am_array_view v{};
  am_status st = am_record_get_array(obj, key, &v);
  if (st != AM_OK) return st;
  if (v.ndim != 2 || (int)v.shape[0] != n || (int)v.shape[1] != n)
    return am_context_fail(ctx, AM_ERR_SHAPE, "sequence dataset: truth.%s must be %d×%d", key, n, n);
  out.resize((size_t)n * n);
  return am_array_to_f64_fortran(ctx, &v, out.data(), out.size());
}

double number_or(const am_record *p, const char *key, double def) {
  double v;
  return am_record_get_number(p, key, &v) == AM_OK ? v : def;
}

// Curves over training (arrays of equal length).
struct Curves {
  std::vector<double> epoch, train, test, recon;
  double eps_star = NAN;  // ε* on the test sequences the curve uses
  double seconds = 0.0;   // time spent evaluating the curves (not counted in fit_time_s)
  void write(am_record *run) const {
    am_record *c = am_record_object(run, "curves");
    if (!c) return;
    if (std::isfinite(eps_star)) am_record_set_number(c, "epsilon_star", eps_star);
    am_record_set_vector(c, "epoch", epoch.data(), epoch.size());
    am_record_set_vector(c, "train_loss", train.data(), train.size());
    am_record_set_vector(c, "test_loss", test.data(), test.size());
    am_record_set_vector(c, "recon_error", recon.data(), recon.size());
  }
};

void centre_columns(const double *V, int C, std::vector<double> &out) {
  out.assign(V, V + (size_t)C * C);
  for (int b = 0; b < C; ++b) {
    double m = 0.0;
    for (int a = 0; a < C; ++a) m += out[a + (size_t)C * b];
    m /= C;
    for (int a = 0; a < C; ++a) out[a + (size_t)C * b] -= m;
  }
}

// Common result keys of both estimators.
void write_common(am_record *run, const SeqData &d, double train_loss, double test_loss, const double *A,
                  const double *V) {
  am_record_set_number(run, "M", (double)d.M);
  am_record_set_number(run, "M_test", (double)d.M_test);
  am_record_set_number(run, "L", d.L);
  am_record_set_number(run, "C", d.C);
  am_record_set_number(run, "train_loss", train_loss);
  am_record_set_number(run, "test_loss", test_loss);
  am_record_set_number(run, "log_C", std::log((double)d.C));
  am_record_set_number(run, "excess_rule", ((double)d.L * d.L + (double)d.C * d.C) / (2.0 * d.M * d.L));
  if (A) am_record_set_matrix(run, "A", A, d.L, d.L, d.L);
  if (V) {
    am_record_set_matrix(run, "V", V, d.C, d.C, d.C);
    std::vector<double> vc;
    centre_columns(V, d.C, vc);
    am_record_set_matrix(run, "V_centred", vc.data(), d.C, d.C, d.C);
  }
  if (!d.has_truth) {
    am_record_set_null(run, "epsilon_star");
    am_record_set_null(run, "excess");
    am_record_set_null(run, "recon_error");
    am_record_set_null(run, "v_corr");
    return;
  }
  am_record_set_number(run, "beta", d.truth.beta);
  am_record_set_number(run, "r", d.r);
  am_record_set_number(run, "epsilon_star", d.eps_star);
  am_record_set_number(run, "epsilon_star_train", d.eps_star_train);
  am_record_set_number(run, "excess", test_loss - d.eps_star);
  am_record_set_number(run, "train_excess", train_loss - d.eps_star_train);
  am_record_set_matrix(run, "J", d.truth.J.data(), d.L, d.L, d.L);
  std::vector<double> Jr(d.truth.J);
  for (auto &x : Jr) x /= d.r;
  double jj = 0.0;
  for (int i = 0; i < d.L; ++i)
    for (int j = 0; j < d.L; ++j)
      if (i != j) jj += Jr[i + (size_t)d.L * j] * Jr[i + (size_t)d.L * j];
  jj /= (double)d.L * (d.L - 1);
  am_record_set_number(run, "mean_J2", jj);
  if (A) {
    const double e = recon_error(A, d.truth.J, d.L, d.r);
    am_record_set_number(run, "recon_error", e);
    am_record_set_number(run, "recon_error_rel", e / jj);
  } else {
    am_record_set_null(run, "recon_error");
  }
  std::vector<double> target(d.truth.U);
  for (auto &x : target) x *= d.truth.beta * d.r;
  std::vector<double> tc;
  centre_columns(target.data(), d.C, tc);
  am_record_set_matrix(run, "V_target_centred", tc.data(), d.C, d.C, d.C);
  if (V)
    am_record_set_number(run, "v_corr", v_corr(V, d.truth.U, d.C, d.truth.beta * d.r));
  else
    am_record_set_null(run, "v_corr");
}

// Adam (β₁ = 0.9, β₂ = 0.999, ε = 1e-8).
struct Adam {
  std::vector<double> m, v;
  long t = 0;
  explicit Adam(size_t n) : m(n, 0.0), v(n, 0.0) {}
  void step(double *x, const double *g, size_t n, double lr) {
    ++t;
    const double b1 = 0.9, b2 = 0.999, c1 = 1.0 - std::pow(b1, (double)t), c2 = 1.0 - std::pow(b2, (double)t);
    for (size_t k = 0; k < n; ++k) {
      m[k] = b1 * m[k] + (1 - b1) * g[k];
      v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k];
      x[k] -= lr * (m[k] / c1) / (std::sqrt(v[k] / c2) + 1e-8);
    }
  }
};

// One optimiser step θ ← θ − η·(direction): Adam, or plain SGD with optional heavy-ball momentum
// (v ← μ v + g, θ ← θ − η v).
struct Step {
  size_t n;
  bool sgd;
  double momentum;
  Adam adam;
  std::vector<double> velocity;
  Step(const std::string &name, double mu, size_t n_params)
      : n(n_params), sgd(name == "sgd"), momentum(mu), adam(sgd ? 0 : n), velocity(sgd && mu > 0 ? n : 0) {}
  void apply(double *x, const double *g, double eta) {
    if (!sgd) {
      adam.step(x, g, n, eta);
    } else if (velocity.empty()) {
      for (size_t k = 0; k < n; ++k) x[k] -= eta * g[k];
    } else {
      for (size_t k = 0; k < n; ++k) {
        velocity[k] = momentum * velocity[k] + g[k];
        x[k] -= eta * velocity[k];
      }
    }
  }
};

double schedule(double lr, bool cosine, long step, long total) {
  if (!cosine || total <= 1) return lr;
  return lr * 0.5 * (1.0 + std::cos(M_PI * (double)step / (double)total));
}

void shuffle(std::vector<size_t> &idx, am_rng *rng) {
  for (size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[am_rng_below(rng, i)]);
}

// Mini-batch training loop shared by SGD/Adam. f(theta, tokens, n, grad) → loss on a batch.
template <class F, class Eval>
am_status minibatch_train(am_context *ctx, const char *label, F f, Eval eval, double *theta, size_t n,
                          const std::vector<int32_t> &tokens, size_t M, int L, const std::string &opt, double lr,
                          bool cosine, int batch, int epochs, int eval_every, am_rng *rng, int *epochs_done) {
  std::vector<size_t> idx(M);
  for (size_t k = 0; k < M; ++k) idx[k] = k;
  std::vector<int32_t> buf((size_t)batch * L);
  std::vector<double> g(n);
  Adam adam(n);
  const long per_epoch = (long)((M + batch - 1) / batch), total = per_epoch * epochs;
  long step = 0;
  *epochs_done = 0;
  eval(0);
  for (int ep = 1; ep <= epochs; ++ep) {
    shuffle(idx, rng);
    for (size_t b0 = 0; b0 < M; b0 += batch) {
      const size_t B = std::min((size_t)batch, M - b0);
      for (size_t k = 0; k < B; ++k)
        std::copy(tokens.begin() + idx[b0 + k] * L, tokens.begin() + (idx[b0 + k] + 1) * L, buf.begin() + k * L);
      const double loss = f(theta, buf.data(), B, g.data());
      // A step size too large for the model sends θ to ±∞ within a few steps: stop with a message instead of
      // reporting NaN losses as a result.
      if (!std::isfinite(loss))
        return am_context_fail(ctx, AM_ERR_NONFINITE, "%s diverged in epoch %d (batch loss %g at learning rate %g): "
                               "lower lr", label, ep, loss, lr);
      const double eta = schedule(lr, cosine, step++, total);
      if (opt == "adam") {
        adam.step(theta, g.data(), n, eta);
      } else {
        for (size_t k = 0; k < n; ++k) theta[k] -= eta * g[k];
      }
    }
    *epochs_done = ep;
    for (size_t k = 0; k < n; ++k)
      if (!std::isfinite(theta[k]))
        return am_context_fail(ctx, AM_ERR_NONFINITE, "%s diverged in epoch %d (non-finite parameters at learning "
                               "rate %g): lower lr", label, ep, lr);
    if (ep % std::max(1, eval_every) == 0 || ep == epochs) eval(ep);
    if (am_context_progress(ctx, ep, epochs, label)) return AM_CANCELLED;
  }
  return AM_OK;
}

}  // namespace

LbfgsOptions lbfgs_options(const PLOptions &o, int max_iter, size_t n_params, size_t M, int L) {
  LbfgsOptions lo;
  lo.max_iter = max_iter;
  lo.gtol = o.gtol;
  lo.ftol = o.ftol;
  if (o.stop_tol > 0.0 && o.stop_window > 0) {
    lo.window = o.stop_window;
    lo.window_tol = o.stop_tol * (double)n_params / (2.0 * (double)M * L);
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

double recon_error(const double *A, const std::vector<double> &J, int L, double r) {
  double e = 0.0;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      if (i != j) {
        const double t = A[i + (size_t)L * j] - J[i + (size_t)L * j] / r;
        e += t * t;
      }
  return e / ((double)L * (L - 1));
}

double v_corr(const double *V, const std::vector<double> &U, int C, double beta_r) {
  std::vector<double> a, b, t(U);
  for (auto &x : t) x *= beta_r;
  centre_columns(V, C, a);
  centre_columns(t.data(), C, b);
  double ma = 0, mb = 0;
  const size_t n = a.size();
  for (size_t k = 0; k < n; ++k) {
    ma += a[k];
    mb += b[k];
  }
  ma /= n;
  mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t k = 0; k < n; ++k) {
    sab += (a[k] - ma) * (b[k] - mb);
    saa += (a[k] - ma) * (a[k] - ma);
    sbb += (b[k] - mb) * (b[k] - mb);
  }
  return (saa > 0 && sbb > 0) ? sab / std::sqrt(saa * sbb) : 0.0;
}

am_status read_sequence_dataset(am_context *ctx, const am_record *ds, size_t M_use, SeqData *out) {
  if (!ds) return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "this estimator needs a sequence dataset");
  const char *kind = nullptr;
  if (am_record_get_string(ds, "kind", &kind) != AM_OK || !kind || std::string(kind) != "sequence")
    return am_context_fail(ctx, AM_ERR_FORMAT, "dataset kind must be \"sequence\"");
  double C = 0;
  if (am_record_get_number(ds, "C", &C) != AM_OK || !(C >= 2) || C != std::floor(C))
    return am_context_fail(ctx, AM_ERR_FORMAT, "sequence dataset: 'C' (number of colours ≥ 2) missing");
  out->C = (int)C;
  am_status st = read_tokens(ctx, ds, "tokens", 0, out->C, &out->L, &out->M, out->train);
  if (st == AM_ERR_NOT_FOUND) return am_context_fail(ctx, st, "sequence dataset: 'tokens' missing");
  if (st != AM_OK) return st;
  if (out->L < 2) return am_context_fail(ctx, AM_ERR_SHAPE, "sequence dataset: L must be ≥ 2");
  if (M_use > 0 && M_use < out->M) {
    out->M = M_use;
    out->train.resize(M_use * (size_t)out->L);
  }
  if (out->M == 0) return am_context_fail(ctx, AM_ERR_SHAPE, "sequence dataset: no training sequences");
  int Lt = 0;
  st = read_tokens(ctx, ds, "tokens_test", out->L, out->C, &Lt, &out->M_test, out->test);
  if (st == AM_ERR_NOT_FOUND) {
    out->M_test = 0;
    out->test.clear();
  } else if (st != AM_OK) {
    return st;
  }
  const am_record *truth = am_record_get(ds, "truth");
  out->has_truth = false;
  if (truth && am_record_type_of(truth) == AM_REC_OBJECT && am_record_get(truth, "J") && am_record_get(truth, "U")) {
    Model &m = out->truth;
    m.L = out->L;
    m.C = out->C;
    m.beta = number_or(truth, "beta", 1.0);
    if ((st = read_matrix(ctx, truth, "J", out->L, m.J)) != AM_OK) return st;
    if ((st = read_matrix(ctx, truth, "U", out->C, m.U)) != AM_OK) return st;
    symmetrize_zero_diag(m.J, m.L);
    out->r = row_sum_mean(m.J, m.L);
    out->has_truth = true;
    // ε* with the true conditionals on exactly the sequences this run uses
    out->eps_star = out->M_test ? epsilon_star(m, out->test.data(), out->M_test) : NAN;
    out->eps_star_train = epsilon_star(m, out->train.data(), out->M);
  }
  return AM_OK;
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
  const LbfgsOptions lo = lbfgs_options(o, max_iter, th.size(), d.M, d.L);
  bool cancelled = false;
  eval(0);
  *res = lbfgs_minimize(
      th.size(), th.data(), [&](const double *x, double *g) { return model.loss(x, d.train.data(), d.M, g, o.l2); },
      lo, [&](int it, double, double, const double *) {
        if (it % o.curve_every == 0) eval(it);
        if (am_context_progress(ctx, it, max_iter, label)) {
          cancelled = true;
          return false;
        }
        return true;
      });
  *epochs_done = res->iterations;
  if (res->status == LBFGS_NONFINITE)
    return am_context_fail(ctx, AM_ERR_NONFINITE, "%s: the loss or its gradient is not finite at iteration %d", label,
                           res->iterations);
  return cancelled ? AM_CANCELLED : AM_OK;
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
    am_record_set_bool(opt, "converged", f.res.status == LBFGS_CONVERGED || f.res.status == LBFGS_FTOL ||
                                             f.res.status == LBFGS_ROUNDOFF || f.res.status == LBFGS_WINDOW);
  } else {
    am_record_set_number(opt, "epochs", f.epochs_done);
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

}  // namespace

am_status run_pseudolikelihood(am_context *ctx, const PLOptions &options, const SeqData &d, const am_rng &rng_in,
                               am_record *run) {
  const double t0 = now_s();
  const PLOptions o = with_learning_rate(options);
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

// Every layer's attention map averaged over Ma test sequences (A_layers, [layers, L, L]), its distance to J, the
// last layer's map and the mean of the last two layers' maps.
static void write_layer_maps(VanillaModel &vm, const double *th, const SeqData &d, size_t Ma, am_record *run) {
  const int L = d.L, layers = vm.config().layers;
  const size_t LL = (size_t)L * L;
  std::vector<double> Al(LL * layers), last_two(LL, 0.0), cbuf(LL * layers);
  std::vector<double> rl(layers);
  vm.pseudo_loss(th, d.test.data(), Ma, Al.data(), -1);
  for (int l = 0; l < layers; ++l) {
    const double *a = Al.data() + LL * l;
    for (int i = 0; i < L; ++i)  // the [layers, L, L] C-order copy: element (l, i, j) = A_l(i, j)
      for (int j = 0; j < L; ++j) cbuf[LL * l + (size_t)L * i + j] = a[i + (size_t)L * j];
    rl[l] = d.has_truth ? recon_error(a, d.truth.J, L, d.r) : NAN;
    if (l >= layers - 2)
      for (size_t k = 0; k < LL; ++k) last_two[k] += 0.5 * a[k];
  }
  am_array_view v{};
  v.dtype = AM_F64;
  v.ndim = 3;
  v.shape[0] = (size_t)layers;
  v.shape[1] = v.shape[2] = (size_t)L;
  v.data = cbuf.data();
  am_record_set_array(run, "A_layers", &v);
  am_record_set_matrix(run, "A_last_layer", Al.data() + LL * (layers - 1), L, L, L);
  am_record_set_matrix(run, "A_last_two", last_two.data(), L, L, L);
  am_record_set_vector(run, "recon_error_layers", rl.data(), rl.size());
  if (d.has_truth)
    am_record_set_number(run, "recon_error_last_two", recon_error(last_two.data(), d.truth.J, L, d.r));
}

am_status run_vanilla(am_context *ctx, const VanillaOptions &o, const SeqData &d, const am_rng &rng_in,
                      am_record *run) {
  const double t0 = now_s();
  am_rng rng;
  am_rng_split(&rng_in, 11, &rng);
  if (o.train_seed > 0) {  // another training stream on the same data; train_seed 0 keeps the historical bits
    const am_rng parent = rng;
    am_rng_split(&parent, (uint64_t)o.train_seed, &rng);
  }
  const int L = d.L, C = d.C;
  VanillaConfig cfg;
  cfg.L = L;
  cfg.C = C;
  cfg.d = o.d;
  cfg.layers = o.layers;
  cfg.hidden = o.hidden;
  cfg.pre_ln = o.norm == "pre";
  cfg.dropout = o.dropout;
  am_rng dropout_base;  // the dropout masks' own stream (the training stream is not touched: same bits at p = 0)
  am_rng_split(&rng, 0xD50u, &dropout_base);
  VanillaModel vm(cfg);
  std::vector<double> th(vm.n_params());
  vm.init(th.data(), &rng);
  const size_t n = th.size();
  std::vector<double> g(n), Abar((size_t)L * L);
  Step step_rule(o.optimizer, o.momentum, n);
  Curves curves;
  const size_t Mc = std::min(d.M, o.eval_test_max > 0 ? o.eval_test_max : d.M);
  const size_t Mtc = std::min(d.M_test, o.eval_test_max > 0 ? o.eval_test_max : d.M_test);
  auto eval = [&](int ep) {
    curves.epoch.push_back(ep);
    curves.train.push_back(vm.pseudo_loss(th.data(), d.train.data(), Mc));
    curves.test.push_back(Mtc ? vm.pseudo_loss(th.data(), d.test.data(), Mtc, Abar.data(), 0) : NAN);
    curves.recon.push_back(d.has_truth && Mtc ? recon_error(Abar.data(), d.truth.J, L, d.r) : NAN);
  };
  std::vector<size_t> idx(d.M);
  for (size_t k = 0; k < d.M; ++k) idx[k] = k;
  const size_t B = (size_t)std::max(1, o.batch);
  std::vector<int32_t> tok(B * L), mask(B);
  const long per_epoch = (long)((d.M + B - 1) / B), total = per_epoch * o.epochs;
  long step = 0;
  const long warm = (long)std::lround(o.warmup * (double)per_epoch);  // warm-up steps
  am_status st = AM_OK;
  int ep_done = 0;
  eval(0);
  double last_batch_loss = NAN;
  for (int ep = 1; ep <= o.epochs; ++ep) {
    shuffle(idx, &rng);
    double acc = 0.0;
    for (size_t b0 = 0; b0 < d.M; b0 += B) {
      const size_t nb = std::min(B, d.M - b0);
      for (size_t k = 0; k < nb; ++k) {
        std::copy(d.train.begin() + idx[b0 + k] * L, d.train.begin() + (idx[b0 + k] + 1) * L, tok.begin() + k * L);
        mask[k] = (int32_t)am_rng_below(&rng, (uint64_t)L);  // one uniformly random masked site (MLM)
      }
      am_rng drng;
      am_rng_split(&dropout_base, (uint64_t)step, &drng);
      acc += nb * vm.loss(th.data(), tok.data(), mask.data(), nb, g.data(), nullptr, &drng);
      if (o.l2 > 0)
        for (size_t k = 0; k < n; ++k) g[k] += o.l2 * th[k];
      double eta = schedule(o.lr, o.cosine, step, total);
      if (step < warm) eta *= (double)(step + 1) / (double)warm;  // linear warm-up, then the schedule
      ++step;
      step_rule.apply(th.data(), g.data(), eta);
    }
    last_batch_loss = acc / d.M;
    ep_done = ep;
    if (ep % o.eval_every == 0 || ep == o.epochs) eval(ep);
    if (am_context_progress(ctx, ep, o.epochs, step_rule.sgd ? "SGD epochs" : "Adam epochs")) {
      st = AM_CANCELLED;
      break;
    }
  }
  // final numbers: the full pseudo-likelihood on the training set and on (up to final_test_max) test sequences
  const size_t Mt = o.final_test_max > 0 ? std::min(o.final_test_max, d.M_test) : d.M_test;
  const double train_loss = vm.pseudo_loss(th.data(), d.train.data(), d.M);
  const double test_loss = Mt ? vm.pseudo_loss(th.data(), d.test.data(), Mt, Abar.data(), 0) : NAN;
  SeqData dd;  // same numbers, ε* evaluated on the test sequences actually used
  const SeqData *dp = &d;
  if (Mt < d.M_test && d.has_truth) {
    dd.L = d.L;
    dd.C = d.C;
    dd.M = d.M;
    dd.M_test = Mt;
    dd.has_truth = true;
    dd.truth = d.truth;
    dd.r = d.r;
    dd.eps_star = epsilon_star(d.truth, d.test.data(), Mt);
    dd.eps_star_train = d.eps_star_train;
    dp = &dd;
  }
  write_common(run, *dp, train_loss, test_loss, Abar.data(), nullptr);
  if (o.layers > 1 && Mt) write_layer_maps(vm, th.data(), d, std::min<size_t>(Mt, 2000), run);
  if (d.has_truth && Mtc) curves.eps_star = epsilon_star(d.truth, d.test.data(), Mtc);
  curves.write(run);
  am_record_set_string(run, "model",
                       cfg.pre_ln ? "vanilla transformer: token + learned positional embeddings, single-head softmax "
                                    "attention, pre-LayerNorm residual blocks + final LayerNorm, GELU MLP (hidden 4d), "
                                    "MLM read-out"
                                  : "vanilla transformer: token + learned positional embeddings, single-head softmax "
                                    "attention, residual + post-LayerNorm, GELU MLP (hidden 4d), MLM read-out");
  am_record_set_string(run, "norm", cfg.pre_ln ? "pre" : "post");
  am_record_set_string(run, "A_definition", "mean over test sequences of row i of the first layer's attention when site i is masked");
  am_record_set_number(run, "layers", o.layers);
  am_record_set_number(run, "d", o.d);
  am_record_set_number(run, "n_params", (double)n);
  am_record *opt = am_record_object(run, "optimizer");
  if (opt) {
    am_record_set_string(opt, "name", step_rule.sgd ? "sgd" : "adam");
    am_record_set_number(opt, "lr", o.lr);
    if (step_rule.sgd) am_record_set_number(opt, "momentum", o.momentum);
    am_record_set_number(opt, "train_seed", o.train_seed);
    am_record_set_number(opt, "dropout", o.dropout);
    am_record_set_number(opt, "batch", (double)B);
    am_record_set_number(opt, "epochs", ep_done);
    am_record_set_bool(opt, "cosine", o.cosine);
    am_record_set_number(opt, "warmup_epochs", o.warmup);
    am_record_set_number(opt, "last_epoch_mlm_loss", last_batch_loss);
    am_record_set_number(opt, "curve_sequences", (double)Mtc);
  }
  am_record_set_number(run, "fit_time_s", now_s() - t0);
  return st;
}

}  // namespace potts
