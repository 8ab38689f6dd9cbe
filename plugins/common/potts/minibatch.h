// potts_core — the mini-batch optimisers beside L-BFGS (lbfgs.h): Adam, plain SGD with optional heavy-ball
// momentum, the cosine learning-rate schedule, the epoch shuffle, and the mini-batch loop the pseudo-likelihood
// fits run with optimizer=sgd|adam (the vanilla transformer's loop is its own: it masks and drops out).
#ifndef ATTNMECH_POTTS_MINIBATCH_H
#define ATTNMECH_POTTS_MINIBATCH_H

#include <attnmech/context.h>
#include <attnmech/rng.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace am::potts {

// Adam (β₁ = 0.9, β₂ = 0.999, ε = 1e-8).
struct Adam {
  std::vector<double> m, v;
  long t = 0;
  explicit Adam(size_t n) : m(n, 0.0), v(n, 0.0) {}
  void step(double *x, const double *g, size_t n, double lr);
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
  void apply(double *x, const double *g, double eta);
};

// lr at `step` of `total`: constant, or the cosine decay lr·(1 + cos(π step/total))/2.
double schedule(double lr, bool cosine, long step, long total);

// Fisher–Yates shuffle of idx from rng.
void shuffle(std::vector<size_t> &idx, am_rng *rng);

// Mini-batch training loop shared by SGD/Adam. f(theta, tokens, n, grad) → loss on a batch; eval(epoch) records
// a point of the training curves (epoch 0, every eval_every epochs and the last).
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
      if (am_context_cancelled(ctx)) return AM_CANCELLED;  // between batches: an epoch may take long
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

}  // namespace am::potts
#endif
