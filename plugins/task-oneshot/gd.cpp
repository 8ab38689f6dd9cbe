// attnmech — task "oneshot": the gradient-descent network (docs/oneshot.md) with a hand-written backward pass.
//
// The value path is linear given the attention, so the output is evaluated in path form:
//   f(X) = Σ_π coef_π u_π · (X A_π),   A_π = Ω_{1,h1} ⋯ Ω_{L,hL} r,   u_π = V0ᵀ V_{1,h1}ᵀ ⋯ V_{L,hL}ᵀ a,
//   coef_π = Π_l c_l m_{l,h_l},  c_l = (Σ_h m_lh)^{-1/2}.
// u_π depends on the weights only (one set per batch), so the per-episode cost is the attention alone
// (Q/K projections, S×S softmaxes, H_tot matrix–vector products) whatever the value width W.
#include "oneshot_core.h"

#include "../common/sign_accuracy.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace am::oneshot {

size_t ipow(size_t b, size_t e) {
  size_t r = 1;
  while (e--) r *= b;
  return r;
}

namespace {

// Episodes are processed in fixed blocks of kBlock (the last one shorter): the blocks, not the threads, are the
// units of work, so every result — the gradient sums included, reduced block by block in order — is the same
// on every thread count. A block also bounds the memory of the stored attention matrices.
constexpr size_t kBlock = 8;
size_t blocks(size_t n) { return (n + kBlock - 1) / kBlock; }

// Path coefficients coef_π (H_tot) from a mask.
std::vector<double> path_coefs(const ModelShape &s, const Mask &mask) {
  const size_t L = s.L, H = s.H, Ht = ipow(H, L);
  std::vector<double> c(L, 0.0);
  for (size_t l = 0; l < L; ++l) {
    double kept = 0;
    for (size_t h = 0; h < H; ++h) kept += mask.empty() ? 1.0 : mask[l * H + h];
    c[l] = kept > 0 ? 1.0 / std::sqrt(kept) : 0.0;
  }
  std::vector<double> coef(Ht, 1.0);
  for (size_t p = 0; p < Ht; ++p) {
    size_t rem = p;
    for (size_t l = L; l-- > 0;) {
      const size_t h = rem % H;
      rem /= H;
      coef[p] *= c[l] * (mask.empty() ? 1.0 : mask[l * H + h]);
    }
  }
  return coef;
}

// Effective weights: w[l] holds D_{l+1}... we store per layer l = 1..L the vectors w_l(partial path) (W each),
// w_l indexed by (h_l..h_L) packed h_l most significant; u = V0ᵀ w_1 (N0 × H_tot, column π).
struct Effective {
  std::vector<std::vector<double>> w;   // w[l-1]: W × D_l
  std::vector<double> U;                // N0 × H_tot
};

void effective(const Model &m, Effective *e) {
  const ModelShape &s = m.shape;
  const size_t L = s.L, H = s.H, W = s.W, N0 = s.N0;
  e->w.assign(L, {});
  for (size_t l = L; l >= 1; --l) {
    const size_t D = ipow(H, L - l + 1), Dn = D / H;
    e->w[l - 1].assign(W * D, 0.0);
    for (size_t h = 0; h < H; ++h) {
      const double *V = m.V[(l - 1) * H + h].data();
      const double *src = l == L ? m.a.data() : e->w[l].data();
      // columns h*Dn .. h*Dn+Dn-1 = Vᵀ · src (W × Dn)
      cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, int(W), int(Dn), int(W), 1.0, V, int(W), src, int(W), 0.0,
                  e->w[l - 1].data() + h * Dn * W, int(W));
    }
  }
  const size_t Ht = ipow(H, L);
  e->U.assign(N0 * Ht, 0.0);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, int(N0), int(Ht), int(W), 1.0, m.V0.data(), int(W),
              e->w[0].data(), int(W), 0.0, e->U.data(), int(N0));
}

// The working set of one chunk of n episodes: dimensions, the Q/K projections of every head, the attention
// matrices (kept for the backward pass) and the per-episode buffers.
struct ChunkWork {
  size_t L, H, G, N0, S, Ht, nh, n, nS;
  double isg;                                  // 1/√G
  std::vector<double> q, k, Om;                // nh × G × nS (twice), nh × n × S × S
  std::vector<double> dq, dk;                  // like q, k (backward only)
  std::vector<std::vector<double>> v, dv;      // per layer: S × D_l path vectors and their gradients
  std::vector<double> Z, XtU, dOm, dLg;        // N0 × Ht, S × Ht, nh × S × S, S × S

  ChunkWork(const ModelShape &s, size_t n_, bool backward)
      : L(s.L), H(s.H), G(s.G), N0(s.N0), S(s.S), Ht(ipow(s.H, s.L)), nh(s.L * s.H), n(n_), nS(n_ * s.S),
        isg(1.0 / std::sqrt(double(s.G))), q(nh * G * nS), k(nh * G * nS), Om(nh * n * S * S) {
    if (backward) {
      dq.assign(nh * G * nS, 0.0);
      dk.assign(nh * G * nS, 0.0);
    }
    v.resize(L);
    dv.resize(L);
    for (size_t l = 0; l < L; ++l) {
      v[l].resize(S * ipow(H, L - l));
      dv[l].resize(S * ipow(H, L - l));
    }
    Z.resize(N0 * Ht);
    XtU.resize(S * Ht);
    dOm.resize(nh * S * S);
    dLg.resize(S * S);
  }
  double *attention(size_t j, size_t e) { return Om.data() + (j * n + e) * S * S; }
  size_t qk_offset(size_t j, size_t e) const { return j * G * nS + e * G * S; }
};

// q = Q_j X, k = K_j X for every head j over the whole chunk.
void project_qk(const Model &m, const double *X, ChunkWork &w) {
  for (size_t j = 0; j < w.nh; ++j) {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, int(w.G), int(w.nS), int(w.N0), 1.0, m.Q[j].data(),
                int(w.G), X, int(w.N0), 0.0, w.q.data() + j * w.G * w.nS, int(w.G));
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, int(w.G), int(w.nS), int(w.N0), 1.0, m.K[j].data(),
                int(w.G), X, int(w.N0), 0.0, w.k.data() + j * w.G * w.nS, int(w.G));
  }
}

// Ω of every head for episode e: softmax over keys (rows) of kᵀ q /√G, column by column.
void attention_softmax(size_t e, ChunkWork &w) {
  const size_t S = w.S;
  for (size_t j = 0; j < w.nh; ++j) {
    double *O = w.attention(j, e);
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, int(S), int(S), int(w.G), w.isg,
                w.k.data() + w.qk_offset(j, e), int(w.G), w.q.data() + w.qk_offset(j, e), int(w.G), 0.0, O, int(S));
    for (size_t t = 0; t < S; ++t) {
      double *col = O + t * S, mx = col[0];
      for (size_t r = 1; r < S; ++r) mx = std::max(mx, col[r]);
      double sum = 0;
      for (size_t r = 0; r < S; ++r) sum += (col[r] = std::exp(col[r] - mx));
      const double inv = 1.0 / sum;
      for (size_t r = 0; r < S; ++r) col[r] *= inv;
    }
  }
}

// Path vectors of episode e, right to left: v[L-1] = Ω_{L,h} r; v[l-1](h, rest) = Ω_{l,h} v[l](rest).
void path_vectors(size_t e, ChunkWork &w) {
  const size_t L = w.L, H = w.H, S = w.S;
  for (size_t h = 0; h < H; ++h) {
    const double *O = w.attention((L - 1) * H + h, e);
    double *dst = w.v[L - 1].data() + h * S;
    for (size_t r = 0; r < S; ++r) {
      double acc = 0;
      for (size_t t = 0; t < S; ++t) acc += O[t * S + r];
      dst[r] = acc / double(S);
    }
  }
  for (size_t l = L - 1; l >= 1; --l) {
    const size_t Dn = ipow(H, L - l);
    for (size_t h = 0; h < H; ++h) {
      const double *O = w.attention((l - 1) * H + h, e);
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, int(S), int(Dn), int(S), 1.0, O, int(S), w.v[l].data(),
                  int(S), 0.0, w.v[l - 1].data() + h * Dn * S, int(S));
    }
  }
}

// Z = X_e A (N0 × Ht); f_e = Σ_π coef_π u_π·z_π.
double episode_output(const std::vector<double> &coef, const Effective &eff, const double *Xe, ChunkWork &w) {
  const size_t N0 = w.N0;
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, int(N0), int(w.Ht), int(w.S), 1.0, Xe, int(N0),
              w.v[0].data(), int(w.S), 0.0, w.Z.data(), int(N0));
  double fe = 0;
  for (size_t p = 0; p < w.Ht; ++p)
    if (coef[p] != 0) fe += coef[p] * cblas_ddot(int(N0), eff.U.data() + p * N0, 1, w.Z.data() + p * N0, 1);
  return fe;
}

// Backward through the value paths of episode e (dL/df_e = ge): dU += ge coef_π z_π, then the attention
// gradients dΩ (into dOm) through the path vectors.
void paths_backward(const std::vector<double> &coef, const Effective &eff, const double *Xe, size_t e, double ge,
                    ChunkWork &w, std::vector<double> *dU) {
  const size_t L = w.L, H = w.H, S = w.S, N0 = w.N0, Ht = w.Ht;
  for (size_t p = 0; p < Ht; ++p)
    if (coef[p] != 0) cblas_daxpy(int(N0), ge * coef[p], w.Z.data() + p * N0, 1, dU->data() + p * N0, 1);
  // dA_π = ge coef_π Xᵀ u_π
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, int(S), int(Ht), int(N0), 1.0, Xe, int(N0), eff.U.data(),
              int(N0), 0.0, w.XtU.data(), int(S));
  for (size_t p = 0; p < Ht; ++p)
    for (size_t r = 0; r < S; ++r) w.dv[0][p * S + r] = ge * coef[p] * w.XtU[p * S + r];
  std::fill(w.dOm.begin(), w.dOm.end(), 0.0);
  for (size_t l = 1; l < L; ++l) {   // v[l-1](h, rest) = Ω_{l,h} v[l](rest)
    const size_t Dn = ipow(H, L - l);
    std::fill(w.dv[l].begin(), w.dv[l].end(), 0.0);
    for (size_t h = 0; h < H; ++h) {
      const double *O = w.attention((l - 1) * H + h, e);
      double *dO = w.dOm.data() + ((l - 1) * H + h) * S * S;
      // dΩ += dv[l-1](h,·) v[l]ᵀ ; dv[l] += Ωᵀ dv[l-1](h,·)
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, int(S), int(S), int(Dn), 1.0,
                  w.dv[l - 1].data() + h * Dn * S, int(S), w.v[l].data(), int(S), 1.0, dO, int(S));
      cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, int(S), int(Dn), int(S), 1.0, O, int(S),
                  w.dv[l - 1].data() + h * Dn * S, int(S), 1.0, w.dv[l].data(), int(S));
    }
  }
  for (size_t h = 0; h < H; ++h) {   // v[L-1](h) = Ω_{L,h} r
    double *dO = w.dOm.data() + ((L - 1) * H + h) * S * S;
    const double *d = w.dv[L - 1].data() + h * S;
    for (size_t t = 0; t < S; ++t)
      for (size_t r = 0; r < S; ++r) dO[t * S + r] += d[r] / double(S);
  }
}

// Backward through the softmaxes of episode e: dlogits from dΩ, then dq, dk of every head.
void softmax_backward(size_t e, ChunkWork &w) {
  const size_t S = w.S, G = w.G;
  for (size_t j = 0; j < w.nh; ++j) {
    const double *O = w.attention(j, e);
    const double *dO = w.dOm.data() + j * S * S;
    for (size_t t = 0; t < S; ++t) {
      double dot = 0;
      for (size_t r = 0; r < S; ++r) dot += O[t * S + r] * dO[t * S + r];
      for (size_t r = 0; r < S; ++r) w.dLg[t * S + r] = O[t * S + r] * (dO[t * S + r] - dot);
    }
    // logits = kᵀ q /√G:  dq = k dLg /√G,  dk = q dLgᵀ /√G
    const double *ke = w.k.data() + w.qk_offset(j, e), *qe = w.q.data() + w.qk_offset(j, e);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, int(G), int(S), int(S), w.isg, ke, int(G), w.dLg.data(),
                int(S), 0.0, w.dq.data() + w.qk_offset(j, e), int(G));
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, int(G), int(S), int(S), w.isg, qe, int(G), w.dLg.data(),
                int(S), 0.0, w.dk.data() + w.qk_offset(j, e), int(G));
  }
}

// grad Q_j += dq_j Xᵀ, grad K_j += dk_j Xᵀ over the whole chunk.
void accumulate_qk_grads(const double *X, const ChunkWork &w, Model *grad) {
  for (size_t j = 0; j < w.nh; ++j) {
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, int(w.G), int(w.N0), int(w.nS), 1.0,
                w.dq.data() + j * w.G * w.nS, int(w.G), X, int(w.N0), 1.0, grad->Q[j].data(), int(w.G));
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, int(w.G), int(w.N0), int(w.nS), 1.0,
                w.dk.data() + j * w.G * w.nS, int(w.G), X, int(w.N0), 1.0, grad->K[j].data(), int(w.G));
  }
}

// Forward (and optionally backward) over a chunk of n episodes. With g != nullptr (dL/df per episode) the
// gradients of Q, K (per head) and of U (dU, N0 × H_tot) are accumulated into `grad` / `dU`.
void chunk(const Model &m, const std::vector<double> &coef, const Effective &eff, size_t n, const double *X,
           double *f, const double *g, Model *grad, std::vector<double> *dU) {
  ChunkWork w(m.shape, n, g != nullptr);
  project_qk(m, X, w);
  for (size_t e = 0; e < n; ++e) {
    const double *Xe = X + e * w.N0 * w.S;
    attention_softmax(e, w);
    path_vectors(e, w);
    const double fe = episode_output(coef, eff, Xe, w);
    if (f) f[e] = fe;
    if (!g) continue;
    const double ge = g[e];
    if (ge == 0) continue;
    paths_backward(coef, eff, Xe, e, ge, w, dU);
    softmax_backward(e, w);
  }
  if (!g) return;
  accumulate_qk_grads(X, w, grad);
}

// Zero Q and K gradients shaped like m (what a block of the backward pass accumulates).
void zero_qk(const Model &m, Model *g) {
  g->shape = m.shape;
  g->Q.assign(m.Q.size(), {});
  g->K.assign(m.K.size(), {});
  for (size_t j = 0; j < m.Q.size(); ++j) g->Q[j].assign(m.Q[j].size(), 0.0);
  for (size_t j = 0; j < m.K.size(); ++j) g->K[j].assign(m.K[j].size(), 0.0);
}

void zero_like(const Model &m, Model *g) {
  zero_qk(m, g);
  g->V0.assign(m.V0.size(), 0.0);
  g->a.assign(m.a.size(), 0.0);
  g->V.assign(m.V.size(), {});
  for (size_t j = 0; j < m.V.size(); ++j) g->V[j].assign(m.V[j].size(), 0.0);
}

// fn(first episode, episodes, block) for every block of n episodes, the blocks spread over pf's workers.
template <class Fn>
void for_blocks(const am::sdk::ParallelFor &pf, size_t n, Fn &&fn) {
  const size_t nb = blocks(n);
  pf(nb, [&](size_t b, size_t e, int) {
    for (size_t k = b; k < e; ++k) fn(k * kBlock, std::min(kBlock, n - k * kBlock), k);
  });
}

}  // namespace

size_t Model::n_params() const {
  size_t n = V0.size() + a.size();
  for (const auto &v : V) n += v.size();
  for (const auto &v : Q) n += v.size();
  for (const auto &v : K) n += v.size();
  return n;
}

std::vector<double *> Model::blocks() {
  std::vector<double *> b{V0.data(), a.data()};
  for (auto &v : V) b.push_back(v.data());
  for (auto &v : Q) b.push_back(v.data());
  for (auto &v : K) b.push_back(v.data());
  return b;
}

std::vector<size_t> Model::block_sizes() const {
  std::vector<size_t> b{V0.size(), a.size()};
  for (const auto &v : V) b.push_back(v.size());
  for (const auto &v : Q) b.push_back(v.size());
  for (const auto &v : K) b.push_back(v.size());
  return b;
}

void init_model(const ModelShape &s, am_rng *rng, Model *m) {
  m->shape = s;
  auto fill = [rng](std::vector<double> &v, size_t n, double fan_in) {
    v.resize(n);
    am_rng_fill_normal(rng, v.data(), n);
    const double sd = 1.0 / std::sqrt(fan_in);
    for (double &x : v) x *= sd;
  };
  fill(m->V0, s.W * s.N0, double(s.N0));
  fill(m->a, s.W, double(s.W));
  m->V.assign(s.L * s.H, {});
  m->Q.assign(s.L * s.H, {});
  m->K.assign(s.L * s.H, {});
  for (size_t j = 0; j < s.L * s.H; ++j) fill(m->V[j], s.W * s.W, double(s.W));
  for (size_t j = 0; j < s.L * s.H; ++j) {
    fill(m->Q[j], s.G * s.N0, double(s.N0));
    fill(m->K[j], s.G * s.N0, double(s.N0));
  }
}

void forward(const Model &m, const Mask &mask, size_t n, const double *X, double *f,
             const am::sdk::ParallelFor &pf) {
  const am::sdk::BlasThreads single(1);  // our threads run the blocks
  Effective eff;
  effective(m, &eff);
  const std::vector<double> coef = path_coefs(m.shape, mask);
  const size_t stride = m.shape.N0 * m.shape.S;
  for_blocks(pf, n, [&](size_t first, size_t cn, size_t) {
    chunk(m, coef, eff, cn, X + first * stride, f + first, nullptr, nullptr, nullptr);
  });
}

double loss_and_grad(const Model &m, size_t n, const double *X, const double *y, Model *grad,
                     const am::sdk::ParallelFor &pf) {
  const am::sdk::BlasThreads single(1);  // our threads run the blocks
  const ModelShape &s = m.shape;
  const size_t L = s.L, H = s.H, W = s.W, N0 = s.N0, Ht = ipow(H, L);
  Effective eff;
  effective(m, &eff);
  const std::vector<double> coef = path_coefs(s, Mask());
  std::vector<double> f(n);
  const size_t stride = N0 * s.S;
  // forward first (the per-episode gradient factor needs f), then the backward pass; the attention is
  // recomputed in the second sweep, which keeps the memory per worker at one block.
  for_blocks(pf, n, [&](size_t first, size_t cn, size_t) {
    chunk(m, coef, eff, cn, X + first * stride, f.data() + first, nullptr, nullptr, nullptr);
  });
  double loss = 0;
  std::vector<double> g(n);
  for (size_t e = 0; e < n; ++e) {
    loss += (f[e] - y[e]) * (f[e] - y[e]);
    g[e] = 2.0 * (f[e] - y[e]) / double(n);
  }
  loss /= double(n);
  const size_t nb = blocks(n);
  std::vector<Model> part(nb);
  std::vector<std::vector<double>> dUp(nb, std::vector<double>(N0 * Ht, 0.0));
  for (auto &p : part) zero_qk(m, &p);
  for_blocks(pf, n, [&](size_t first, size_t cn, size_t k) {
    chunk(m, coef, eff, cn, X + first * stride, nullptr, g.data() + first, &part[k], &dUp[k]);
  });
  zero_like(m, grad);
  std::vector<double> dU(N0 * Ht, 0.0);
  for (size_t k = 0; k < nb; ++k) {   // reduction in block order: the same on every thread count
    for (size_t j = 0; j < L * H; ++j) {
      for (size_t i = 0; i < grad->Q[j].size(); ++i) grad->Q[j][i] += part[k].Q[j][i];
      for (size_t i = 0; i < grad->K[j].size(); ++i) grad->K[j][i] += part[k].K[j][i];
    }
    for (size_t i = 0; i < dU.size(); ++i) dU[i] += dUp[k][i];
  }
  // U = V0ᵀ w_1:  dV0 = w_1 dUᵀ (W × N0),  dw_1 = V0 dU (W × Ht)
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, int(W), int(N0), int(Ht), 1.0, eff.w[0].data(), int(W),
              dU.data(), int(N0), 0.0, grad->V0.data(), int(W));
  std::vector<double> dw(W * Ht);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, int(W), int(Ht), int(N0), 1.0, m.V0.data(), int(W), dU.data(),
              int(N0), 0.0, dw.data(), int(W));
  for (size_t l = 1; l <= L; ++l) {
    const size_t D = ipow(H, L - l + 1), Dn = D / H;
    std::vector<double> dnext(W * Dn, 0.0);
    for (size_t h = 0; h < H; ++h) {
      const double *src = l == L ? m.a.data() : eff.w[l].data();
      const double *dwh = dw.data() + h * Dn * W;
      // w_l(h,·) = Vᵀ src:  dV += src dw_l(h,·)ᵀ ;  dsrc += V dw_l(h,·)
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, int(W), int(W), int(Dn), 1.0, src, int(W), dwh, int(W), 1.0,
                  grad->V[(l - 1) * H + h].data(), int(W));
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, int(W), int(Dn), int(W), 1.0,
                  m.V[(l - 1) * H + h].data(), int(W), dwh, int(W), 1.0, dnext.data(), int(W));
    }
    if (l == L) {
      for (size_t i = 0; i < W; ++i) grad->a[i] = dnext[i];
    } else {
      dw.swap(dnext);
    }
  }
  return loss;
}

am_status train(am_context *ctx, Model *m, const TrainSettings &ts, BatchFn fn, void *user,
                const am::sdk::ParallelFor &pf, TrainLog *log, TrainState *state, const Checkpoints &checkpoints) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto last_checkpoint = t0;
  std::vector<double *> pb = m->blocks();
  const std::vector<size_t> sz = m->block_sizes();
  TrainState local;
  TrainState &S = state ? *state : local;
  if (S.mom.size() != sz.size() || S.vel.size() != sz.size()) {  // a fresh start
    S = TrainState();
    S.mom.resize(sz.size());
    S.vel.resize(sz.size());
    for (size_t b = 0; b < sz.size(); ++b) {
      S.mom[b].assign(sz[b], 0.0);
      S.vel[b].assign(sz[b], 0.0);
    }
  }
  for (size_t b = 0; b < sz.size(); ++b)
    if (S.mom[b].size() != sz[b] || S.vel[b].size() != sz[b])
      return am_context_fail(ctx, AM_ERR_SHAPE, "oneshot: the training state does not fit the model");
  const double seconds_before = S.seconds;
  auto elapsed = [&] { return seconds_before + std::chrono::duration<double>(clock::now() - t0).count(); };
  TrainLog local_log;
  TrainLog &L = log ? *log : local_log;
  Model grad;
  std::vector<double> X, y;
  const size_t log_every = std::max<size_t>(1, ts.steps / 50);
  am_status result = AM_OK;
  while (S.step < ts.steps) {
    const size_t step = S.step;
    fn(user, step, &X, &y);
    const double loss = loss_and_grad(*m, y.size(), X.data(), y.data(), &grad, pf);
    if (!std::isfinite(loss))
      return am_context_fail(ctx, AM_ERR_NONFINITE, "oneshot: training diverged at step %zu (loss %g); lower lr",
                             step, loss);
    S.run += loss;
    ++S.run_n;
    std::vector<double *> gb = grad.blocks();
    const double bc1 = 1.0 - std::pow(ts.beta1, double(step + 1)), bc2 = 1.0 - std::pow(ts.beta2, double(step + 1));
    for (size_t b = 0; b < sz.size(); ++b) {
      double *p = pb[b], *gr = gb[b], *mo = S.mom[b].data(), *ve = S.vel[b].data();
      for (size_t i = 0; i < sz[b]; ++i) {
        const double gi = gr[i] + ts.weight_decay * p[i];
        mo[i] = ts.beta1 * mo[i] + (1 - ts.beta1) * gi;
        ve[i] = ts.beta2 * ve[i] + (1 - ts.beta2) * gi * gi;
        p[i] -= ts.lr * (mo[i] / bc1) / (std::sqrt(ve[i] / bc2) + ts.eps);
      }
    }
    S.step = step + 1;
    if (S.step % log_every == 0 || S.step == ts.steps) {
      L.step.push_back(double(S.step));
      L.loss.push_back(S.run / double(S.run_n));
      am_context_log(ctx, AM_LOG_DEBUG, "oneshot: step %zu loss %.4f", S.step, S.run / double(S.run_n));
      S.run = 0;
      S.run_n = 0;
    }
    const bool stop = am_context_progress(ctx, double(S.step), double(ts.steps), "oneshot: training the GD network");
    if (stop) result = AM_CANCELLED;
    const bool due = std::chrono::duration<double>(clock::now() - last_checkpoint).count() >= checkpoints.every_seconds;
    if (checkpoints.fn && S.step < ts.steps && (stop || due)) {
      S.seconds = elapsed();
      checkpoints.fn(S, *m, L);
      last_checkpoint = clock::now();
    }
    if (stop) break;
  }
  S.seconds = elapsed();
  L.seconds = S.seconds;
  return result;
}

std::vector<double> path_overlap(const Model &m) {
  Effective eff;
  effective(m, &eff);
  const size_t W = m.shape.W, Ht = ipow(m.shape.H, m.shape.L);
  std::vector<double> O(Ht * Ht);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, int(Ht), int(Ht), int(W), 1.0 / double(W), eff.w[0].data(),
              int(W), eff.w[0].data(), int(W), 0.0, O.data(), int(Ht));
  return O;
}

std::vector<double> path_weights(const Model &m) {
  Effective eff;
  effective(m, &eff);
  return eff.U;
}

double sign_accuracy(const double *f, const double *y, size_t n) { return am::common::sign_accuracy(f, y, n); }

am_status save_model(am_context *ctx, const std::string &dir, const Model &m) {
  std::vector<double> flat;
  flat.reserve(m.n_params());
  Model &mm = const_cast<Model &>(m);
  const auto bl = mm.blocks();
  const auto sz = m.block_sizes();
  for (size_t b = 0; b < bl.size(); ++b) flat.insert(flat.end(), bl[b], bl[b] + sz[b]);
  return write_vector(ctx, dir + "/params.npy", flat);
}

am_status write_vector(am_context *ctx, const std::string &file, const std::vector<double> &x) {
  const am_array_view v = am::sdk::f64_view(x.data(), {x.size()});
  return am_npy_write(ctx, file.c_str(), &v);
}

am_status load_model(am_context *ctx, const std::string &dir, const ModelShape &s, Model *m) {
  am_array *arr = nullptr;
  am_status st = am_npy_read(ctx, (dir + "/params.npy").c_str(), &arr);
  if (st != AM_OK) return st;
  Model out;
  am_rng r;
  am_rng_init(&r, 0, 0);
  init_model(s, &r, &out);
  const am_array_view v = am_array_get_view(arr);
  if (v.dtype != AM_F64 || v.ndim != 1 || v.shape[0] != out.n_params()) {
    am_array_destroy(&arr);
    return AM_ERR_FORMAT;
  }
  const double *d = static_cast<const double *>(v.data);
  const auto bl = out.blocks();
  const auto sz = out.block_sizes();
  size_t off = 0;
  for (size_t b = 0; b < bl.size(); ++b) {
    std::copy(d + off, d + off + sz[b], bl[b]);
    off += sz[b];
  }
  am_array_destroy(&arr);
  *m = std::move(out);
  return AM_OK;
}

}  // namespace am::oneshot
