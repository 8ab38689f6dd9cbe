// NUTS / HMC engine on Gaussian targets with known moments.
#include "nuts.h"
#include "diagnostics.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace am::posterior;

namespace {

// N(m, Σ) with Σ given by its inverse (precision Λ, dense row-major d×d).
class Gaussian : public LogDensity {
 public:
  Gaussian(std::vector<double> mean, std::vector<double> precision)
      : m_(std::move(mean)), Lam_(std::move(precision)), d_(m_.size()) {}
  size_t dim() const override { return d_; }
  double log_density(const double *q, double *grad) override {
    double lp = 0;
    for (size_t i = 0; i < d_; ++i) {
      double gi = 0;
      for (size_t j = 0; j < d_; ++j) gi -= Lam_[i * d_ + j] * (q[j] - m_[j]);
      grad[i] = gi;
      lp += 0.5 * gi * (q[i] - m_[i]);
    }
    return lp;
  }

 private:
  std::vector<double> m_, Lam_;
  size_t d_;
};

struct Draws {
  std::vector<std::vector<std::vector<double>>> x;  // [chain][coord][draw]
  long long divergences = 0;
  double accept = 0;
  int n = 0;
};

Draws run(LogDensity &model, const SamplerSettings &s, int chains, uint64_t seed) {
  Draws out;
  const size_t d = model.dim();
  am_rng root;
  am_rng_init(&root, seed, 0);
  out.x.assign(static_cast<size_t>(chains), std::vector<std::vector<double>>(d));
  for (int c = 0; c < chains; ++c) {
    am_rng r;
    am_rng_split(&root, static_cast<uint64_t>(c), &r);
    Sampler smp(model, s, r);
    REQUIRE(smp.init_uniform(2.0));
    smp.begin_warmup();
    for (int i = 0; i < s.warmup; ++i) smp.warmup_step();
    smp.end_warmup();
    for (int i = 0; i < s.samples; ++i) {
      const TransitionInfo t = smp.sample_step();
      out.divergences += t.divergent;
      out.accept += t.accept_stat;
      ++out.n;
      for (size_t k = 0; k < d; ++k) out.x[static_cast<size_t>(c)][k].push_back(smp.position()[k]);
    }
  }
  out.accept /= out.n;
  return out;
}

Chains coord(const Draws &D, size_t k) {
  Chains c;
  for (const auto &ch : D.x) c.push_back(ch[k]);
  return c;
}
Chains product(const Draws &D, size_t i, size_t j, double mi, double mj) {
  Chains c;
  for (const auto &ch : D.x) {
    std::vector<double> v(ch[i].size());
    for (size_t t = 0; t < v.size(); ++t) v[t] = (ch[i][t] - mi) * (ch[j][t] - mj);
    c.push_back(v);
  }
  return c;
}

}  // namespace

TEST_CASE("NUTS: correlated 2-D Gaussian, mean and covariance within Monte-Carlo error") {
  // Σ = [[1, 0.95·1·3], [·, 9]] (correlation 0.95, scales 1 and 3), mean (1, −2).
  const double s1 = 1, s2 = 3, rho = 0.95;
  const double S11 = s1 * s1, S22 = s2 * s2, S12 = rho * s1 * s2, det = S11 * S22 - S12 * S12;
  Gaussian g({1.0, -2.0}, {S22 / det, -S12 / det, -S12 / det, S11 / det});
  SamplerSettings s;
  s.warmup = 500;
  s.samples = 2000;
  const Draws D = run(g, s, 4, 11);
  CHECK(D.divergences == 0);
  // dual averaging targets 0.8; the post-warm-up mean is typically higher (the final step is exp of
  // the averaged log step, smaller than the last iterates; Stan shows the same), never far below
  CHECK(D.accept > 0.75);
  CHECK(D.accept < 0.99);
  const double mean_true[2] = {1.0, -2.0};
  const double cov_true[2][2] = {{S11, S12}, {S12, S22}};
  for (size_t k = 0; k < 2; ++k) {
    const Diagnostics dg = diagnose(coord(D, k));
    CHECK(dg.rhat < 1.01);
    CHECK(dg.ess_bulk > 1000);  // NUTS on a 2-D Gaussian: ESS of the order of the number of draws
    // 4.5 Monte-Carlo standard errors (sd/√ESS): fails with probability < 1e-5 per check
    CHECK(std::fabs(dg.mean - mean_true[k]) < 4.5 * dg.mcse);
  }
  for (size_t i = 0; i < 2; ++i)
    for (size_t j = i; j < 2; ++j) {
      const Diagnostics dp = diagnose(product(D, i, j, mean_true[i], mean_true[j]));
      // the mean of (x_i − m_i)(x_j − m_j) estimates Σ_ij; its MCSE comes from the same ESS machinery
      CHECK(std::fabs(dp.mean - cov_true[i][j]) < 4.5 * dp.mcse);
    }
}

TEST_CASE("NUTS: badly scaled 50-D Gaussian (sd from 1e-2 to 1e2) with the adapted diagonal metric") {
  const size_t d = 50;
  std::vector<double> mean(d), prec(d * d, 0.0), sd(d);
  for (size_t i = 0; i < d; ++i) {
    sd[i] = std::pow(10.0, -2.0 + 4.0 * static_cast<double>(i) / (d - 1));
    mean[i] = 0.5 * sd[i] * std::cos(static_cast<double>(i));
    prec[i * d + i] = 1.0 / (sd[i] * sd[i]);
  }
  Gaussian g(mean, prec);
  SamplerSettings s;
  s.warmup = 600;
  s.samples = 800;
  const Draws D = run(g, s, 4, 12);
  CHECK(D.divergences == 0);
  CHECK(D.accept > 0.7);
  CHECK(D.accept < 0.99);
  double z2_mean = 0, z2_var = 0;
  for (size_t k = 0; k < d; ++k) {
    const Diagnostics dg = diagnose(coord(D, k));
    CHECK(dg.rhat < 1.02);
    const double z = (dg.mean - mean[k]) / dg.mcse;
    CHECK(std::fabs(z) < 4.5);  // per-coordinate 4.5 MCSE
    z2_mean += z * z / d;
    const Diagnostics dv = diagnose(product(D, k, k, mean[k], mean[k]));
    const double zv = (dv.mean - sd[k] * sd[k]) / dv.mcse;
    CHECK(std::fabs(zv) < 4.5);
    z2_var += zv * zv / d;
  }
  // averaged squared z-scores ~ χ²_50/50: mean 1, sd 0.2; allow up to 2 (≈ 5 sd)
  CHECK(z2_mean < 2.0);
  CHECK(z2_var < 2.0);
}

TEST_CASE("HMC: fixed-length trajectories with an adapted step size, correlated 2-D Gaussian") {
  const double S11 = 1, S22 = 4, S12 = 1.2, det = S11 * S22 - S12 * S12;
  Gaussian g({0.0, 0.5}, {S22 / det, -S12 / det, -S12 / det, S11 / det});
  SamplerSettings s;
  s.algorithm = Algorithm::hmc;
  s.hmc_steps = 10;
  s.warmup = 400;
  s.samples = 2000;
  const Draws D = run(g, s, 4, 13);
  CHECK(D.accept > 0.7);  // adapted towards 0.8 (see the NUTS case)
  CHECK(D.accept < 0.99);
  const double mean_true[2] = {0.0, 0.5};
  for (size_t k = 0; k < 2; ++k) {
    const Diagnostics dg = diagnose(coord(D, k));
    CHECK(dg.rhat < 1.02);
    CHECK(std::fabs(dg.mean - mean_true[k]) < 4.5 * dg.mcse);
  }
  const Diagnostics dp = diagnose(product(D, 0, 1, mean_true[0], mean_true[1]));
  CHECK(std::fabs(dp.mean - S12) < 4.5 * dp.mcse);
}

TEST_CASE("HMC with a fixed step: the step is not adapted") {
  Gaussian g({0.0}, {1.0});
  SamplerSettings s;
  s.algorithm = Algorithm::hmc;
  s.step_size = 0.3;
  s.adapt_step_size = false;
  am_rng r;
  am_rng_init(&r, 5, 0);
  Sampler smp(g, s, r);
  REQUIRE(smp.init_uniform(2.0));
  smp.begin_warmup();
  for (int i = 0; i < 50; ++i) smp.warmup_step();
  smp.end_warmup();
  CHECK(smp.step_size() == 0.3);
  // 1 gradient at the start + 16 per transition
  CHECK(smp.gradient_evaluations() == 1 + 50 * 16);
}

TEST_CASE("NUTS: a divergent trajectory is flagged (density with a cliff)") {
  // log p = −q²/2 for q < 3, −∞ beyond: leapfrog steps that cross q = 3 are divergent.
  class Cliff : public LogDensity {
   public:
    size_t dim() const override { return 1; }
    double log_density(const double *q, double *g) override {
      g[0] = -q[0];
      return q[0] < 3 ? -0.5 * q[0] * q[0] : -INFINITY;
    }
  } cliff;
  SamplerSettings s;
  s.step_size = 1.0;
  s.adapt_step_size = false;
  s.adapt_metric = false;
  am_rng r;
  am_rng_init(&r, 3, 0);
  Sampler smp(cliff, s, r);
  const double q0 = 2.9;
  REQUIRE(smp.set_position(&q0));
  int div = 0;
  for (int i = 0; i < 200; ++i) {
    const TransitionInfo t = smp.sample_step();
    div += t.divergent;
    CHECK(smp.position()[0] < 3.0);  // never accepts a point outside the support
  }
  CHECK(div > 0);
}
