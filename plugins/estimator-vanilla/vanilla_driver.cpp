// estimator "vanilla" — the training loop, the final losses, the run keys and the memory estimate (vanilla_driver.h).
#include "vanilla_driver.h"

#include <attnmech/array.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "minibatch.h"

namespace am::vanilla {

using namespace am::potts;  // the sequence dataset, curves, run keys and optimisers the fits share

namespace {

// Every layer's attention map averaged over Ma test sequences (A_layers, [layers, L, L]), its distance to J, the
// last layer's map and the mean of the last two layers' maps.
void write_layer_maps(VanillaModel &vm, const double *th, const SeqData &d, size_t Ma, am_record *run) {
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
  const size_t shape[3] = {(size_t)layers, (size_t)L, (size_t)L};
  const am_array_view v = am_array_view_make(AM_F64, 3, shape, 0, cbuf.data());
  am_record_set_array(run, "A_layers", &v);
  am_record_set_matrix(run, "A_last_layer", Al.data() + LL * (layers - 1), L, L, L);
  am_record_set_matrix(run, "A_last_two", last_two.data(), L, L, L);
  am_record_set_vector(run, "recon_error_layers", rl.data(), rl.size());
  if (d.has_truth)
    am_record_set_number(run, "recon_error_last_two", recon_error(last_two.data(), d.truth.J, L, d.r));
}

// The training stream: split 11 off the run's; train_seed k > 0 takes its k-th child instead (another
// initialisation and batch order on the same data; train_seed 0 keeps the historical bits).
am_rng training_stream(const am_rng &rng_in, int train_seed) {
  am_rng rng;
  am_rng_split(&rng_in, 11, &rng);
  if (train_seed > 0) {
    const am_rng parent = rng;
    am_rng_split(&parent, (uint64_t)train_seed, &rng);
  }
  return rng;
}

VanillaConfig model_config(const VanillaOptions &o, const SeqData &d) {
  VanillaConfig cfg;
  cfg.L = d.L;
  cfg.C = d.C;
  cfg.d = o.d;
  cfg.layers = o.layers;
  cfg.hidden = o.hidden;
  cfg.pre_ln = o.norm == "pre";
  cfg.dropout = o.dropout;
  return cfg;
}

// The state of one training: model, parameters, optimiser, streams, curves.
struct Training {
  const VanillaOptions &o;
  const SeqData &d;
  VanillaModel vm;
  std::vector<double> th, g, Abar;
  Step step_rule;
  am_rng rng, dropout_base;
  Curves curves;
  size_t Mc, Mtc;             // training / test sequences scored for the curves
  int ep_done = 0;
  double last_batch_loss = NAN;

  Training(const VanillaOptions &o_, const SeqData &d_, const am_rng &rng_in)
      : o(o_), d(d_), vm(model_config(o_, d_)), th(vm.n_params()), g(th.size()), Abar((size_t)d_.L * d_.L),
        step_rule(o_.optimizer, o_.momentum, th.size()), rng(training_stream(rng_in, o_.train_seed)),
        Mc(std::min(d_.M, o_.eval_test_max > 0 ? o_.eval_test_max : d_.M)),
        Mtc(std::min(d_.M_test, o_.eval_test_max > 0 ? o_.eval_test_max : d_.M_test)) {
    // the dropout masks' own stream (the training stream is not touched: same bits at p = 0)
    am_rng_split(&rng, 0xD50u, &dropout_base);
    vm.init(th.data(), &rng);
  }

  // A point of the training curves; nothing when cancelled (the scoring passes take seconds on a deep model).
  void eval(am_context *ctx, int ep) {
    vm.set_stop([ctx] { return am_context_cancelled(ctx) != 0; });
    const double tr = vm.pseudo_loss(th.data(), d.train.data(), Mc);
    const double te = Mtc ? vm.pseudo_loss(th.data(), d.test.data(), Mtc, Abar.data(), 0) : NAN;
    vm.set_stop(nullptr);
    if (am_context_cancelled(ctx)) return;
    curves.epoch.push_back(ep);
    curves.train.push_back(tr);
    curves.test.push_back(te);
    curves.recon.push_back(d.has_truth && Mtc ? recon_error(Abar.data(), d.truth.J, d.L, d.r) : NAN);
  }

  // One epoch of mini-batches in the order idx; returns the mean MLM loss of its batches. A cancel on ctx stops it
  // between two batches (a batch takes well under a second; an epoch of a deep model tens of seconds): NaN.
  double epoch(am_context *ctx, std::vector<size_t> &idx, long *step, long total, long warm) {
    const int L = d.L;
    const size_t B = (size_t)std::max(1, o.batch), n = th.size();
    std::vector<int32_t> tok(B * L), mask(B);
    shuffle(idx, &rng);
    double acc = 0.0;
    for (size_t b0 = 0; b0 < d.M; b0 += B) {
      if (am_context_cancelled(ctx)) return NAN;
      const size_t nb = std::min(B, d.M - b0);
      for (size_t k = 0; k < nb; ++k) {
        std::copy(d.train.begin() + idx[b0 + k] * L, d.train.begin() + (idx[b0 + k] + 1) * L, tok.begin() + k * L);
        mask[k] = (int32_t)am_rng_below(&rng, (uint64_t)L);  // one uniformly random masked site (MLM)
      }
      am_rng drng;
      am_rng_split(&dropout_base, (uint64_t)*step, &drng);
      acc += nb * vm.loss(th.data(), tok.data(), mask.data(), nb, g.data(), nullptr, &drng);
      if (o.l2 > 0)
        for (size_t k = 0; k < n; ++k) g[k] += o.l2 * th[k];
      double eta = schedule(o.lr, o.cosine, *step, total);
      if (*step < warm) eta *= (double)(*step + 1) / (double)warm;  // linear warm-up, then the schedule
      ++*step;
      step_rule.apply(th.data(), g.data(), eta);
    }
    return acc / d.M;
  }

  // o.epochs epochs (curve points at 0, every eval_every and the last); AM_CANCELLED when asked to stop.
  am_status run(am_context *ctx) {
    std::vector<size_t> idx(d.M);
    for (size_t k = 0; k < d.M; ++k) idx[k] = k;
    const size_t B = (size_t)std::max(1, o.batch);
    const long per_epoch = (long)((d.M + B - 1) / B), total = per_epoch * o.epochs;
    const long warm = (long)std::lround(o.warmup * (double)per_epoch);  // warm-up steps
    long step = 0;
    const char *label = step_rule.sgd ? "SGD epochs" : "Adam epochs";
    am_context_progress(ctx, 0, o.epochs, label);  // the phase is named while the first curve point is scored
    eval(ctx, 0);
    for (int ep = 1; ep <= o.epochs; ++ep) {
      const double loss = epoch(ctx, idx, &step, total, warm);
      if (am_context_cancelled(ctx)) return AM_CANCELLED;  // mid-epoch: ep_done and the curves end at the last one
      last_batch_loss = loss;
      ep_done = ep;
      if (ep % o.eval_every == 0 || ep == o.epochs) eval(ctx, ep);
      if (am_context_progress(ctx, ep, o.epochs, label)) return AM_CANCELLED;
    }
    return AM_OK;
  }
};

// d itself, or (when only Mt < M_test test sequences are scored) a copy whose ε* is evaluated on those.
const SeqData *scored_data(const SeqData &d, size_t Mt, SeqData *tmp) {
  if (!(Mt < d.M_test && d.has_truth)) return &d;
  tmp->L = d.L;
  tmp->C = d.C;
  tmp->M = d.M;
  tmp->M_test = Mt;
  tmp->has_truth = true;
  tmp->truth = d.truth;
  tmp->r = d.r;
  tmp->eps_star = epsilon_star(d.truth, d.test.data(), Mt);
  tmp->eps_star_train = d.eps_star_train;
  return tmp;
}

void write_model_keys(am_record *run, const VanillaOptions &o, bool pre_ln, size_t n_params) {
  am_record_set_string(run, "model",
                       pre_ln ? "vanilla transformer: token + learned positional embeddings, single-head softmax "
                                "attention, pre-LayerNorm residual blocks + final LayerNorm, GELU MLP (hidden 4d), "
                                "MLM read-out"
                              : "vanilla transformer: token + learned positional embeddings, single-head softmax "
                                "attention, residual + post-LayerNorm, GELU MLP (hidden 4d), MLM read-out");
  am_record_set_string(run, "norm", pre_ln ? "pre" : "post");
  am_record_set_string(run, "A_definition", "mean over test sequences of row i of the first layer's attention when site i is masked");
  am_record_set_number(run, "layers", o.layers);
  am_record_set_number(run, "d", o.d);
  am_record_set_number(run, "n_params", (double)n_params);
}

void write_optimizer(am_record *run, const VanillaOptions &o, const Training &t) {
  am_record *opt = am_record_object(run, "optimizer");
  if (!opt) return;
  const bool sgd = t.step_rule.sgd;
  am_record_set_string(opt, "name", sgd ? "sgd" : "adam");
  am_record_set_number(opt, "lr", o.lr);
  if (sgd) am_record_set_number(opt, "momentum", o.momentum);
  am_record_set_number(opt, "train_seed", o.train_seed);
  am_record_set_number(opt, "dropout", o.dropout);
  am_record_set_number(opt, "batch", (double)std::max(1, o.batch));
  am_record_set_number(opt, "epochs", t.ep_done);
  am_record_set_bool(opt, "cosine", o.cosine);
  am_record_set_number(opt, "warmup_epochs", o.warmup);
  am_record_set_number(opt, "last_epoch_mlm_loss", t.last_batch_loss);
  am_record_set_number(opt, "curve_sequences", (double)t.Mtc);
}

}  // namespace

double vanilla_fit_bytes(const potts::FitShape &s, const VanillaConfig &cfg, size_t batch, bool adam, bool velocity) {
  const double L = s.L, LL = L * L, n = VanillaModel::params(cfg), nl = cfg.layers;
  const double state = 8.0 * n * (2 + (adam ? 2 : 0) + (velocity ? 1 : 0));  // θ, g, Adam's moments or SGD's velocity
  const double seqs = std::max(1.0, std::floor(128.0 / L));                 // pseudo_loss: sequences per chunk
  const double epoch = 4.0 * double(batch) * (L + 1) + 8.0 * double(s.M);   // a batch's tokens and masks, the order
  const double pseudo = 4.0 * seqs * L * (L + 1) + 8.0 * seqs * L * nl * L;  // masked copies, attention rows
  const double out = 8.0 * (3 * nl * LL + 6 * LL);  // the layer maps (two copies and the record's), A, J, …
  return potts::data_bytes(s) + VanillaModel::work_bytes(cfg) + state + 8.0 * LL + std::max({epoch, pseudo, out});
}

am_status run_vanilla(am_context *ctx, const VanillaOptions &o, const SeqData &d, const am_rng &rng_in,
                      am_record *run) {
  const double t0 = now_s();
  {  // the training's memory before the model exists
    FitShape s;
    s.M = d.M, s.M_test = d.M_test, s.L = d.L, s.C = d.C;
    const bool sgd = o.optimizer == "sgd";
    const double bytes = vanilla_fit_bytes(s, model_config(o, d), (size_t)std::max(1, o.batch), !sgd, sgd && o.momentum > 0);
    const std::string detail = std::to_string(o.layers) + (o.layers == 1 ? " layer" : " layers") + ", d = " +
                               std::to_string(o.d);
    if (const am_status st = check_fit_memory(ctx, bytes, fit_what("the vanilla fit", s, detail)); st != AM_OK) return st;
  }
  Training t(o, d, rng_in);
  const am_status st = t.run(ctx);
  // final numbers: the full pseudo-likelihood on the training set and on (up to final_test_max) test sequences —
  // not after a cancel (passes over all the data: a stop must not wait for them; the curves hold the losses so far)
  const size_t Mt = o.final_test_max > 0 ? std::min(o.final_test_max, d.M_test) : d.M_test;
  const bool final = st == AM_OK;
  const double train_loss = final ? t.vm.pseudo_loss(t.th.data(), d.train.data(), d.M) : NAN;
  const double test_loss = final && Mt ? t.vm.pseudo_loss(t.th.data(), d.test.data(), Mt, t.Abar.data(), 0) : NAN;
  if (!final)
    am_context_log(ctx, AM_LOG_INFO, "vanilla: stopped after %d of %d epochs; final losses not computed (the training "
                   "curves hold the losses so far)", t.ep_done, o.epochs);
  SeqData dd;
  write_common(run, *scored_data(d, Mt, &dd), train_loss, test_loss, t.Abar.data(), nullptr);
  if (final && o.layers > 1 && Mt) write_layer_maps(t.vm, t.th.data(), d, std::min<size_t>(Mt, 2000), run);
  if (d.has_truth && t.Mtc) t.curves.eps_star = epsilon_star(d.truth, d.test.data(), t.Mtc);
  t.curves.write(run);
  write_model_keys(run, o, t.vm.config().pre_ln, t.th.size());
  write_optimizer(run, o, t);
  am_record_set_number(run, "fit_time_s", now_s() - t0);
  return st;
}

}  // namespace am::vanilla
