// potts_core — Potts model, heat-bath sampler, conditional entropy, equilibration.
#include "potts_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "simd/vec.h"

namespace am::potts {

void local_field(const Model &m, const int32_t *s, int i, double *h) {
  const int L = m.L, C = m.C;
  for (int a = 0; a < C; ++a) h[a] = 0.0;
  const double *Ji = m.J.data();  // J symmetric: row i = column i
  for (int j = 0; j < L; ++j) {
    if (j == i) continue;
    const double w = Ji[j + (size_t)L * i];
    if (w == 0.0) continue;
    const double *u = m.U.data() + (size_t)C * s[j];  // U[:, s_j] = U[s_j, :] (symmetric)
    for (int a = 0; a < C; ++a) h[a] += w * u[a];
  }
  for (int a = 0; a < C; ++a) h[a] *= m.beta;
}

static double log_softmax_inplace(double *h, int C) {
  double mx = h[0];
  for (int a = 1; a < C; ++a) mx = std::max(mx, h[a]);
  double z = 0.0;
  for (int a = 0; a < C; ++a) z += std::exp(h[a] - mx);
  const double lse = mx + std::log(z);
  for (int a = 0; a < C; ++a) h[a] -= lse;
  return lse;
}

void log_conditional(const Model &m, const int32_t *s, int i, double *logp) {
  local_field(m, s, i, logp);
  log_softmax_inplace(logp, m.C);
}

double energy(const Model &m, const int32_t *s) {
  double e = 0.0;
  for (int i = 0; i < m.L; ++i)
    for (int j = 0; j < m.L; ++j)
      if (i != j) e += m.J[i + (size_t)m.L * j] * m.U[s[i] + (size_t)m.C * s[j]];
  return -0.5 * e;
}

double neg_log_pseudo(const Model &m, const int32_t *s) {
  std::vector<double> h(m.C);
  double t = 0.0;
  for (int i = 0; i < m.L; ++i) {
    log_conditional(m, s, i, h.data());
    t -= h[s[i]];
  }
  return t;
}

double cond_entropy_rb(const Model &m, const int32_t *s) {
  std::vector<double> h(m.C);
  double t = 0.0;
  for (int i = 0; i < m.L; ++i) {
    log_conditional(m, s, i, h.data());
    for (int a = 0; a < m.C; ++a) t -= std::exp(h[a]) * h[a];
  }
  return t;
}

double epsilon_star(const Model &m, const int32_t *tokens, size_t M) {
  double t = 0.0;
  for (size_t mu = 0; mu < M; ++mu) t += neg_log_pseudo(m, tokens + mu * m.L);
  return t / ((double)M * m.L);
}

void random_state(const Model &m, int32_t *s, am_rng *rng) {
  for (int i = 0; i < m.L; ++i) s[i] = (int32_t)am_rng_below(rng, (uint64_t)m.C);
}

void gibbs_sweep(const Model &m, int32_t *s, am_rng *rng, int *perm, double *work) {
  const int L = m.L, C = m.C;
  for (int i = 0; i < L; ++i) perm[i] = i;
  for (int i = L - 1; i > 0; --i) {  // Fisher–Yates
    const int k = (int)am_rng_below(rng, (uint64_t)(i + 1));
    std::swap(perm[i], perm[k]);
  }
  double *h = work;
  for (int t = 0; t < L; ++t) {
    const int i = perm[t];
    local_field(m, s, i, h);
    double mx = h[0];
    for (int a = 1; a < C; ++a) mx = std::max(mx, h[a]);
    double z = 0.0;
    for (int a = 0; a < C; ++a) z += (h[a] = std::exp(h[a] - mx));
    double u = am_rng_uniform(rng) * z;
    int a = 0;
    for (; a < C - 1; ++a) {
      u -= h[a];
      if (u < 0.0) break;
    }
    s[i] = a;
  }
}

GibbsChain::GibbsChain(const Model &m, int refresh) : m_(m), refresh_(std::max(1, refresh)) {
  const size_t w = simd::kernels().width;
  Cp_ = ((size_t)m.C + w - 1) / w * w;
  bU_.assign((size_t)m.C * Cp_, 0.0);
  for (int b = 0; b < m.C; ++b)
    for (int a = 0; a < m.C; ++a) bU_[(size_t)b * Cp_ + a] = m.beta * m.U[a + (size_t)m.C * b];
  F_.assign((size_t)m.L * Cp_, 0.0);
  p_.assign(Cp_, 0.0);
  d_.assign(Cp_, 0.0);
  s_.assign(m.L, 0);
  perm_.assign(m.L, 0);
  J0_ = m.J;
  for (int i = 0; i < m.L; ++i) J0_[i + (size_t)m.L * i] = 0.0;
}

void GibbsChain::refresh_fields() {
  for (int i = 0; i < m_.L; ++i) local_field(m_, s_.data(), i, F_.data() + (size_t)i * Cp_);
  since_ = 0;
}

void GibbsChain::start(am_rng *rng) {
  random_state(m_, s_.data(), rng);
  refresh_fields();
}

void GibbsChain::set_state(const int32_t *s) {
  std::copy(s, s + m_.L, s_.begin());
  refresh_fields();
}

// p[0, C) = exp(h − max h), p[C, Cp) = 0; returns Σ p.
static double conditional_weights(const simd::Kernels &k, const double *h, int C, size_t Cp, double *p) {
  double mx = h[0];
  for (int a = 1; a < C; ++a) mx = std::max(mx, h[a]);
  std::copy(h, h + C, p);
  for (size_t a = C; a < Cp; ++a) p[a] = -INFINITY;
  return k.exp_shift_sum(p, Cp, mx);
}

void GibbsChain::sweep(am_rng *rng) {
  const int L = m_.L, C = m_.C;
  const simd::Kernels &k = simd::kernels();
  if (since_ >= refresh_) refresh_fields();
  ++since_;
  int *perm = perm_.data();
  for (int i = 0; i < L; ++i) perm[i] = i;
  for (int i = L - 1; i > 0; --i) {  // Fisher–Yates, the draws of gibbs_sweep
    const int r = (int)am_rng_below(rng, (uint64_t)(i + 1));
    std::swap(perm[i], perm[r]);
  }
  double *p = p_.data(), *d = d_.data();
  for (int t = 0; t < L; ++t) {
    const int i = perm[t];
    const double z = conditional_weights(k, F_.data() + (size_t)i * Cp_, C, Cp_, p);
    double u = am_rng_uniform(rng) * z;
    int a = 0;
    for (; a < C - 1; ++a) {
      u -= p[a];
      if (u < 0.0) break;
    }
    const int old = s_[i];
    if (a == old) continue;
    s_[i] = a;
    const double *un = bU_.data() + Cp_ * a, *uo = bU_.data() + Cp_ * old;
    for (size_t b = 0; b < Cp_; ++b) d[b] = un[b] - uo[b];
    // every row j ≠ i gets β J_ji (U[:, a] − U[:, old]) (J symmetric: column i = row i)
    k.rank1_rows((size_t)L, Cp_, J0_.data() + (size_t)L * i, d, F_.data(), Cp_);
  }
}

double GibbsChain::cond_entropy() {
  const int L = m_.L, C = m_.C;
  const simd::Kernels &k = simd::kernels();
  double *p = p_.data();
  double t = 0.0;
  for (int i = 0; i < L; ++i) {
    const double *h = F_.data() + (size_t)i * Cp_;
    const double z = conditional_weights(k, h, C, Cp_, p);
    double mx = h[0];
    for (int a = 1; a < C; ++a) mx = std::max(mx, h[a]);
    double ph = 0.0;
    for (int a = 0; a < C; ++a) ph += p[a] * h[a];
    t += mx + std::log(z) - ph / z;  // −Σ p log p with p = e^{h − lse}
  }
  return t;
}

// Runs chains [c0, c1) of the independent-chain sampler.
static void run_chains(const Model &m, const am_rng &rng, int burnin, size_t c0, size_t c1, int32_t *out) {
  GibbsChain chain(m);
  for (size_t c = c0; c < c1; ++c) {
    am_rng r;
    am_rng_split(&rng, (uint64_t)c, &r);
    chain.start(&r);
    for (int t = 0; t < burnin; ++t) chain.sweep(&r);
    std::copy(chain.state(), chain.state() + m.L, out + c * m.L);
  }
}

void run_parallel(const ParallelFor &pf, size_t n, const std::function<void(size_t begin, size_t end)> &f) {
  if (n == 0) return;
  if (pf)
    pf(n, [&f](size_t begin, size_t end, int) { f(begin, end); });
  else
    f(0, n);
}

am_status sample(am_context *ctx, const Model &m, size_t M, const SampleOptions &o, const am_rng &rng,
                 std::vector<int32_t> &out, size_t *done) {
  out.assign(M * (size_t)m.L, 0);
  if (done) *done = 0;
  if (o.thin > 0) {  // one long chain
    am_rng r;
    am_rng_split(&rng, 0, &r);
    GibbsChain chain(m);
    chain.start(&r);
    for (int t = 0; t < o.burnin; ++t) chain.sweep(&r);
    for (size_t mu = 0; mu < M; ++mu) {
      for (int t = 0; t < o.thin; ++t) chain.sweep(&r);
      std::copy(chain.state(), chain.state() + m.L, out.begin() + mu * m.L);
      if (done) *done = mu + 1;
      if ((mu & 255) == 255 && am_context_progress(ctx, (double)(mu + 1), (double)M, "sampling"))
        return AM_CANCELLED;
    }
    return AM_OK;
  }
  const size_t block = 512;
  for (size_t b0 = 0; b0 < M; b0 += block) {
    const size_t b1 = std::min(M, b0 + block);
    run_parallel(o.parallel, b1 - b0,
                 [&](size_t a, size_t b) { run_chains(m, rng, o.burnin, b0 + a, b0 + b, out.data()); });
    if (done) *done = b1;
    if (am_context_progress(ctx, (double)b1, (double)M, "sampling")) return AM_CANCELLED;
  }
  return AM_OK;
}

void make_J_sinkhorn(int L, am_rng *rng, std::vector<double> &J, double scale, int iters) {
  std::vector<double> r((size_t)L * L);
  for (auto &x : r) x = am_rng_uniform(rng);
  std::vector<double> K((size_t)L * L, 0.0);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      if (i != j) K[i + (size_t)L * j] = std::exp(scale * (r[i + (size_t)L * j] + r[j + (size_t)L * i]));
  std::vector<double> d(L, 1.0), Kd(L);
  for (int it = 0; it < iters; ++it) {
    for (int i = 0; i < L; ++i) {
      double t = 0.0;
      for (int j = 0; j < L; ++j) t += K[i + (size_t)L * j] * d[j];
      Kd[i] = t;
    }
    for (int i = 0; i < L; ++i) d[i] = std::sqrt(d[i] / Kd[i]);
  }
  J.assign((size_t)L * L, 0.0);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j) J[i + (size_t)L * j] = d[i] * K[i + (size_t)L * j] * d[j];
  symmetrize_zero_diag(J, L);
}

bool make_J_kregular(int L, int k, am_rng *rng, std::vector<double> &J) {
  if (k <= 0 || k >= L || ((size_t)L * k) % 2 != 0) return false;
  // Pairing (configuration) model with restarts: reject self-loops and multi-edges.
  std::vector<int> stubs;
  std::vector<char> adj((size_t)L * L);
  for (int attempt = 0; attempt < 10000; ++attempt) {
    stubs.clear();
    for (int i = 0; i < L; ++i)
      for (int t = 0; t < k; ++t) stubs.push_back(i);
    std::fill(adj.begin(), adj.end(), 0);
    bool ok = true;
    while (!stubs.empty() && ok) {
      // pick two random stubs; retry a few times on a bad pair
      int tries = 0;
      for (;;) {
        const size_t n = stubs.size();
        const size_t p = am_rng_below(rng, n), q = am_rng_below(rng, n);
        const int a = stubs[p], b = stubs[q];
        if (p != q && a != b && !adj[a + (size_t)L * b]) {
          adj[a + (size_t)L * b] = adj[b + (size_t)L * a] = 1;
          const size_t hi = std::max(p, q), lo = std::min(p, q);
          stubs[hi] = stubs.back();
          stubs.pop_back();
          stubs[lo] = stubs.back();
          stubs.pop_back();
          break;
        }
        if (++tries > 100) {
          ok = false;
          break;
        }
      }
    }
    if (ok) {
      J.assign((size_t)L * L, 0.0);
      for (size_t t = 0; t < adj.size(); ++t) J[t] = adj[t] ? 1.0 / k : 0.0;
      return true;
    }
  }
  return false;
}

void make_U_gaussian(int C, am_rng *rng, std::vector<double> &U) {
  std::vector<double> G((size_t)C * C);
  am_rng_fill_normal(rng, G.data(), G.size());
  U.assign((size_t)C * C, 0.0);
  const double s = 1.0 / std::sqrt(2.0);
  for (int a = 0; a < C; ++a)
    for (int b = 0; b < C; ++b) U[a + (size_t)C * b] = s * (G[a + (size_t)C * b] + G[b + (size_t)C * a]);
}

void symmetrize_zero_diag(std::vector<double> &J, int L) {
  for (int i = 0; i < L; ++i) {
    J[i + (size_t)L * i] = 0.0;
    for (int j = i + 1; j < L; ++j) {
      const double v = 0.5 * (J[i + (size_t)L * j] + J[j + (size_t)L * i]);
      J[i + (size_t)L * j] = J[j + (size_t)L * i] = v;
    }
  }
}

double row_sum_mean(const std::vector<double> &J, int L, double *max_dev) {
  std::vector<double> r(L, 0.0);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j) r[i] += J[i + (size_t)L * j];
  const double mean = std::accumulate(r.begin(), r.end(), 0.0) / L;
  if (max_dev) {
    double d = 0.0;
    for (double x : r) d = std::max(d, std::fabs(x - mean));
    *max_dev = d;
  }
  return mean;
}

double tau_int(const double *x, size_t n, double window_c) {
  if (n < 4) return 1.0;
  double mean = 0.0;
  for (size_t t = 0; t < n; ++t) mean += x[t];
  mean /= n;
  double c0 = 0.0;
  for (size_t t = 0; t < n; ++t) c0 += (x[t] - mean) * (x[t] - mean);
  c0 /= n;
  if (c0 <= 0.0) return 1.0;
  double tau = 1.0;  // τ = 1 + 2 Σ_{t≥1} ρ(t), window W = first t with t ≥ c τ(t)
  for (size_t lag = 1; lag < n / 2; ++lag) {
    double c = 0.0;
    for (size_t t = 0; t + lag < n; ++t) c += (x[t] - mean) * (x[t + lag] - mean);
    c /= n;
    tau += 2.0 * c / c0;
    if ((double)lag >= window_c * tau) break;
  }
  return std::max(tau, 1e-12);
}

double max_site_frequency(const int32_t *tokens, size_t M, int L, int C) {
  std::vector<size_t> cnt((size_t)L * C, 0);
  for (size_t mu = 0; mu < M; ++mu)
    for (int i = 0; i < L; ++i) cnt[(size_t)i * C + tokens[mu * L + i]]++;
  size_t mx = 0;
  for (size_t c : cnt) mx = std::max(mx, c);
  return M ? (double)mx / (double)M : 0.0;
}

namespace {

// Checkpoints of the entropy curve: 0, 1, 2, 5, 10, 20, 50, ... up to 2B, plus B and 2B (sorted, unique).
std::vector<int> entropy_checkpoints(int B) {
  std::vector<int> cps = {0};
  for (int dec = 1; dec <= 2 * B; dec *= 10)
    for (int f : {1, 2, 5})
      if (f * dec < 2 * B) cps.push_back(f * dec);
  cps.push_back(B);
  cps.push_back(2 * B);
  std::sort(cps.begin(), cps.end());
  cps.erase(std::unique(cps.begin(), cps.end()), cps.end());
  return cps;
}

// Chain c of the ensemble: its conditional entropy per site at every checkpoint (ent[c K + k]; at B and 2B the
// mean over `window` sweeps) and its final state.
void entropy_chain(const Model &m, const std::vector<int> &cps, int B, int window, const am_rng &eq_rng, size_t c,
                   GibbsChain &chain, double *ent, int32_t *final_state) {
  const size_t K = cps.size();
  am_rng r;
  am_rng_split(&eq_rng, c, &r);
  chain.start(&r);
  int t = 0;
  for (size_t k = 0; k < K; ++k) {
    for (; t < cps[k]; ++t) chain.sweep(&r);
    if (cps[k] == B || cps[k] == 2 * B) {  // time average over [cp, cp + window) (variance reduction)
      double acc = 0.0;
      for (int w = 0; w < window; ++w) {
        if (w > 0) {
          chain.sweep(&r);
          ++t;
        }
        acc += chain.cond_entropy();
      }
      ent[k] = acc / ((double)window * m.L);
    } else {
      ent[k] = chain.cond_entropy() / m.L;
    }
  }
  std::copy(chain.state(), chain.state() + m.L, final_state);
}

// Ensemble mean and standard error at every checkpoint, and the B → 2B entropy difference with its error.
void entropy_summary(const std::vector<int> &cps, int B, size_t N, const std::vector<double> &ent,
                     EquilibrationReport &rep) {
  const size_t K = cps.size();
  size_t kB = 0, k2B = 0;
  for (size_t k = 0; k < K; ++k) {
    double mean = 0.0, sq = 0.0;
    for (size_t c = 0; c < N; ++c) mean += ent[c * K + k];
    mean /= N;
    for (size_t c = 0; c < N; ++c) sq += (ent[c * K + k] - mean) * (ent[c * K + k] - mean);
    rep.sweeps.push_back(cps[k]);
    rep.cond_entropy.push_back(mean);
    rep.cond_entropy_se.push_back(std::sqrt(sq / (N - 1) / N));
    if (cps[k] == B) kB = k;
    if (cps[k] == 2 * B) k2B = k;
  }
  rep.entropy_B = rep.cond_entropy[kB];
  rep.entropy_2B = rep.cond_entropy[k2B];
  rep.entropy_diff = rep.entropy_2B - rep.entropy_B;
  double sq = 0.0, md = rep.entropy_diff;
  for (size_t c = 0; c < N; ++c) {
    const double d = ent[c * K + k2B] - ent[c * K + kB] - md;
    sq += d * d;
  }
  rep.entropy_diff_se = std::sqrt(sq / (N - 1) / N);
}

// Integrated autocorrelation time of the energy: tau_chains chains (streams N + c), burn-in B, tau_sweeps
// recorded; the mean over chains.
double energy_tau(const Model &m, const EquilibrationOptions &o, int B, size_t N, const am_rng &eq_rng) {
  const int nt = std::max(1, o.tau_chains), T = std::max(16, o.tau_sweeps);
  std::vector<double> taus(nt, 1.0);
  run_parallel(o.parallel, (size_t)nt, [&](size_t c0, size_t c1) {
    GibbsChain chain(m);
    std::vector<double> e(T);
    for (size_t c = c0; c < c1; ++c) {
      am_rng r;
      am_rng_split(&eq_rng, N + c, &r);
      chain.start(&r);
      for (int t = 0; t < B; ++t) chain.sweep(&r);
      for (int t = 0; t < T; ++t) {
        chain.sweep(&r);
        e[t] = energy(m, chain.state());
      }
      taus[c] = tau_int(e.data(), e.size());
    }
  });
  return std::accumulate(taus.begin(), taus.end(), 0.0) / nt;
}

}  // namespace

am_status equilibration_report(am_context *ctx, const Model &m, const EquilibrationOptions &o, const am_rng &rng,
                               EquilibrationReport &rep) {
  rep = EquilibrationReport();
  const int B = std::max(1, o.burnin);
  const std::vector<int> cps = entropy_checkpoints(B);
  const size_t N = (size_t)std::max(2, o.chains), K = cps.size();
  const int window = std::max(1, std::min(o.window, B));
  std::vector<double> ent(N * K, 0.0);
  std::vector<int32_t> final_states(N * (size_t)m.L);
  am_rng eq_rng;
  am_rng_split(&rng, 1000003u, &eq_rng);
  auto work_fn = [&](size_t c0, size_t c1) {
    GibbsChain chain(m);
    for (size_t c = c0; c < c1; ++c)
      entropy_chain(m, cps, B, window, eq_rng, c, chain, ent.data() + c * K, final_states.data() + c * m.L);
  };
  const size_t block = 256;
  for (size_t b0 = 0; b0 < N; b0 += block) {
    const size_t b1 = std::min(N, b0 + block);
    run_parallel(o.parallel, b1 - b0, [&](size_t a, size_t b) { work_fn(b0 + a, b0 + b); });
    if (am_context_progress(ctx, (double)b1, (double)N, "equilibration test")) return AM_CANCELLED;
  }
  entropy_summary(cps, B, N, ent, rep);
  rep.max_site_freq = max_site_frequency(final_states.data(), N, m.L, m.C);
  rep.tau_int_energy = energy_tau(m, o, B, N, eq_rng);
  rep.entropy_ok = std::fabs(rep.entropy_diff) < o.entropy_tol;
  rep.freq_ok = rep.max_site_freq < o.max_freq_limit;
  rep.equilibrated = rep.entropy_ok && rep.freq_ok;
  return AM_OK;
}

}  // namespace am::potts
