// potts_core — the mini-batch optimisers (see minibatch.h).
#include "minibatch.h"

namespace am::potts {

void Adam::step(double *x, const double *g, size_t n, double lr) {
  ++t;
  const double b1 = 0.9, b2 = 0.999, c1 = 1.0 - std::pow(b1, (double)t), c2 = 1.0 - std::pow(b2, (double)t);
  for (size_t k = 0; k < n; ++k) {
    m[k] = b1 * m[k] + (1 - b1) * g[k];
    v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k];
    x[k] -= lr * (m[k] / c1) / (std::sqrt(v[k] / c2) + 1e-8);
  }
}

void Step::apply(double *x, const double *g, double eta) {
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

double schedule(double lr, bool cosine, long step, long total) {
  if (!cosine || total <= 1) return lr;
  return lr * 0.5 * (1.0 + std::cos(M_PI * (double)step / (double)total));
}

void shuffle(std::vector<size_t> &idx, am_rng *rng) {
  for (size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[am_rng_below(rng, i)]);
}

}  // namespace am::potts
