// tests/property — random theory problems: architectures from [1] to [4,4,4], ξ of every rank (low rank,
// duplicated examples, zero inputs, constant attention, duplicate and rank-one heads, extreme scales), labels,
// temperatures from 1e-8 to 1e3.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "property.hpp"
#include "reference.hpp"

namespace prop {

struct Problem {
  am_arch arch;
  size_t L = 1, H = 1, P = 1, N0 = 1, Pt = 1, S = 1;
  double T = 1;
  vec xi, xit, y, yt;  // ξ train (P × N0 × H), ξ test (Pt × N0 × H), labels
  // When drawn through attention (am_xi): the inputs and heads, for the npy task's files.
  bool from_attention = false;
  am_readout readout = AM_READOUT_LAST;
  vec X, Xt;                  // P × S × N0 examples back to back (C-order [P, S, N0])
  std::vector<vec> W;         // one N0 × N0 bilinear matrix per head, layer 1 first
};

inline void draw_arch(Gen &g, Problem *p) {
  am_arch_default(&p->arch);
  p->L = 1 + g.pick({6, 3, 1});
  p->arch.layers = (uint32_t)p->L;
  p->H = 1;
  for (size_t l = 0; l < p->L; ++l) {
    p->arch.heads[l] = (uint32_t)(1 + g.pick({5, 3, 2, 2}));
    p->H *= p->arch.heads[l];
  }
  const bool equal = g.chance(0.5);
  const double w0 = g.log_uniform(0.5, 1e4);
  for (size_t l = 0; l <= p->L; ++l) p->arch.widths[l] = equal ? w0 : g.log_uniform(0.5, 1e4);
  for (size_t l = 0; l <= p->L + 1; ++l) p->arch.variances[l] = g.log_uniform(0.1, 10);
  std::string h;
  for (size_t l = 0; l < p->L; ++l) h += (l ? "," : "") + std::to_string(p->arch.heads[l]);
  g.note("heads=[%s] widths0=%g%s", h.c_str(), p->arch.widths[0], equal ? "(all)" : "");
}

// ξ directly: Gaussian, rank r across examples, duplicated or zero examples.
inline void draw_xi_direct(Gen &g, Problem *p, size_t mode) {
  const size_t P = p->P, C = p->N0 * p->H, Pt = p->Pt;
  auto gauss = [&](size_t n, vec *v) {
    v->resize(n * C);
    for (auto &x : *v) x = g.normal();
  };
  gauss(P, &p->xi);
  gauss(Pt, &p->xit);
  if (mode == 1) {  // rank r: ξ = A B, A: P × r, B: r × C
    const size_t r = g.integer(1, std::max<size_t>(1, std::min(P, C)));
    g.note("rank=%zu", r);
    vec A((P + Pt) * r), B(r * C);
    for (auto &x : A) x = g.normal();
    for (auto &x : B) x = g.normal() / std::sqrt((double)r);
    for (size_t mu = 0; mu < P + Pt; ++mu)
      for (size_t c = 0; c < C; ++c) {
        double s = 0;
        for (size_t j = 0; j < r; ++j) s += A[mu + j * (P + Pt)] * B[j + c * r];
        (mu < P ? p->xi[mu + c * P] : p->xit[(mu - P) + c * Pt]) = s;
      }
  } else if (mode == 2) {  // duplicated examples (train, and test copies of training examples)
    for (size_t mu = 1; mu < P; ++mu)
      if (g.chance(0.5)) {
        const size_t src = g.integer(0, mu - 1);
        for (size_t c = 0; c < C; ++c) p->xi[mu + c * P] = p->xi[src + c * P];
      }
    for (size_t t = 0; t < Pt; ++t)
      if (g.chance(0.5)) {
        const size_t src = g.integer(0, P - 1);
        for (size_t c = 0; c < C; ++c) p->xit[t + c * Pt] = p->xi[src + c * P];
      }
  } else if (mode == 3) {  // zero examples, or everything zero
    const bool all = g.chance(0.2);
    g.note("zero=%s", all ? "all" : "some");
    for (size_t mu = 0; mu < P; ++mu)
      if (all || g.chance(0.4))
        for (size_t c = 0; c < C; ++c) p->xi[mu + c * P] = 0.0;
    for (size_t t = 0; t < Pt; ++t)
      if (all || g.chance(0.4))
        for (size_t c = 0; c < C; ++c) p->xit[t + c * Pt] = 0.0;
  }
}

// ξ through attention (am_xi): bilinear heads of scale 0 (constant attention) to 10 (sharp), duplicated or
// rank-one heads, inputs with zero tokens or duplicated examples. False if am_xi refused (then `why` is set).
inline bool draw_xi_attention(Gen &g, am_context *ctx, Problem *p, std::string *why, double scale) {
  p->from_attention = true;
  p->S = 1 + g.pick({3, 3, 2, 1, 1});
  p->readout = (am_readout)g.integer(0, 2);
  const double wscale = std::vector<double>{0.0, 0.1, 1.0, 10.0}[g.pick({2, 3, 4, 1})];
  const bool dup = g.chance(0.3), rank1 = g.chance(0.2);
  g.note("attention S=%zu readout=%d Wscale=%g duplicate_heads=%d rank1_heads=%d", p->S, (int)p->readout, wscale,
         (int)dup, (int)rank1);
  const size_t N0 = p->N0, S = p->S;
  size_t nheads = 0;
  for (size_t l = 0; l < p->L; ++l) nheads += p->arch.heads[l];
  p->W.assign(nheads, vec(N0 * N0));
  for (size_t h = 0; h < nheads; ++h) {
    vec &w = p->W[h];
    if (dup && h > 0) {
      w = p->W[h - 1];
      continue;
    }
    if (rank1) {
      vec a(N0), b(N0);
      for (auto &x : a) x = g.normal();
      for (auto &x : b) x = g.normal();
      for (size_t j = 0; j < N0; ++j)
        for (size_t i = 0; i < N0; ++i) w[i + j * N0] = wscale * a[i] * b[j];
    } else {
      for (auto &x : w) x = wscale * g.normal();
    }
  }
  auto examples = [&](size_t n, vec *X) {
    X->resize(n * S * N0);
    for (auto &x : *X) x = g.normal();
    for (size_t mu = 0; mu < n; ++mu)
      if (g.chance(0.2)) {  // a zero token or a copy of the previous example
        double *e = X->data() + mu * S * N0;
        if (mu > 0 && g.chance(0.5)) std::copy(e - S * N0, e, e);
        else std::fill_n(e + g.integer(0, S - 1) * N0, N0, 0.0);
      }
  };
  examples(p->P, &p->X);
  examples(p->Pt, &p->Xt);
  for (vec *X : {&p->X, &p->Xt})
    for (auto &x : *X) x *= scale;
  std::vector<am_head> heads;
  for (auto &w : p->W) heads.push_back(am_head AM_BILINEAR_HEAD(w.data()));
  p->xi.resize(p->P * N0 * p->H);
  p->xit.resize(p->Pt * N0 * p->H);
  am_status st = am_xi(ctx, &p->arch, heads.data(), p->readout, p->P, N0, S, p->X.data(), p->xi.data());
  if (!st) st = am_xi(ctx, &p->arch, heads.data(), p->readout, p->Pt, N0, S, p->Xt.data(), p->xit.data());
  if (st) *why = format("am_xi: %s: %s", am_status_string(st), am_context_last_error(ctx));
  return st == AM_OK;
}

inline void draw_labels(Gen &g, Problem *p) {
  const size_t m = g.pick({12, 3, 1, 3, 1});
  static const char *names[] = {"pm1", "ones", "zero", "gaussian", "huge"};
  g.note("y=%s", names[m]);
  auto fill = [&](vec *y, size_t n) {
    y->resize(n);
    for (auto &v : *y)
      v = m == 0 ? (g.chance(0.5) ? 1.0 : -1.0) : m == 1 ? 1.0 : m == 2 ? 0.0 : m == 3 ? g.normal() : 1e150 * g.normal();
  };
  fill(&p->y, p->P);
  fill(&p->yt, p->Pt);
}

// A whole problem. P mostly small (cheap cases), N0 from 1.
inline bool draw_problem(Gen &g, am_context *ctx, Problem *p, std::string *why, size_t max_P = 300,
                         bool attention = false) {
  draw_arch(g, p);
  const size_t cls = g.pick({12, 5, 1});
  auto in = [&](size_t lo, size_t hi) { return g.integer(std::min(lo, max_P), std::min(hi, max_P)); };
  p->P = cls == 0 ? in(1, 12) : cls == 1 ? in(13, 60) : in(61, max_P);
  p->N0 = g.chance(0.85) ? g.integer(1, 6) : g.integer(7, 16);
  p->Pt = g.chance(0.7) ? g.integer(1, 4) : g.integer(5, 30);
  p->T = g.log_uniform(1e-8, 1e3);
  const size_t mode = attention ? 4 : g.pick({3, 3, 2, 2, 4});
  static const char *names[] = {"gaussian", "lowrank", "duplicates", "zeros", "attention"};
  g.note("P=%zu N0=%zu Pt=%zu T=%.3g xi=%s", p->P, p->N0, p->Pt, p->T, names[mode]);
  // Extreme scales of the inputs: of X before attention (which then sharpens or flattens too), else of ξ.
  const double scale = g.chance(0.08) ? std::pow(10.0, g.unif() * 200 - 100) : 1.0;
  if (scale != 1.0) g.note("scale=%g", scale);
  if (mode == 4) {
    if (!draw_xi_attention(g, ctx, p, why, scale)) return false;
  } else {
    draw_xi_direct(g, p, mode);
    for (auto &x : p->xi) x *= scale;
    for (auto &x : p->xit) x *= scale;
  }
  draw_labels(g, p);
  return true;
}

}  // namespace prop
