// estimator "vanilla" — the transformer encoder, forward and hand-written backward pass (see vanilla.h).
#include "vanilla.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>

namespace am::vanilla {

namespace {

constexpr double kLnEps = 1e-5;

// Y[n×o] = X[n×i] W[i×o] + beta·Y
void mm(size_t n, int in, int out, const double *X, const double *W, double *Y, double beta) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, out, in, 1.0, X, in, W, out, beta, Y, out);
}
// dX[n×i] (+)= dY[n×o] Wᵀ
void mm_bt(size_t n, int in, int out, const double *dY, const double *W, double *dX, double beta) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, in, out, 1.0, dY, out, W, out, beta, dX, in);
}
// dW[i×o] += Xᵀ dY
void mm_at(size_t n, int in, int out, const double *X, const double *dY, double *dW) {
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, in, out, (int)n, 1.0, X, in, dY, out, 1.0, dW, out);
}
void add_bias(size_t n, int d, const double *b, double *Y) {
  for (size_t r = 0; r < n; ++r)
    for (int k = 0; k < d; ++k) Y[r * d + k] += b[k];
}
void col_sum(size_t n, int d, const double *dY, double *db) {
  for (size_t r = 0; r < n; ++r)
    for (int k = 0; k < d; ++k) db[k] += dY[r * d + k];
}
void ln_forward(size_t n, int d, const double *X, const double *g, const double *b, double *Y, double *mu,
                double *rs) {
  for (size_t r = 0; r < n; ++r) {
    const double *x = X + r * d;
    double m = 0.0, v = 0.0;
    for (int k = 0; k < d; ++k) m += x[k];
    m /= d;
    for (int k = 0; k < d; ++k) v += (x[k] - m) * (x[k] - m);
    v /= d;
    const double s = 1.0 / std::sqrt(v + kLnEps);
    mu[r] = m;
    rs[r] = s;
    for (int k = 0; k < d; ++k) Y[r * d + k] = g[k] * (x[k] - m) * s + b[k];
  }
}
// dX = LN backward of dY (dX may alias nothing); accumulates dg, db.
void ln_backward(size_t n, int d, const double *X, const double *mu, const double *rs, const double *g,
                 const double *dY, double *dX, double *dg, double *db) {
  for (size_t r = 0; r < n; ++r) {
    const double *x = X + r * d, *dy = dY + r * d;
    double m1 = 0.0, m2 = 0.0;
    for (int k = 0; k < d; ++k) {
      const double xh = (x[k] - mu[r]) * rs[r];
      const double dxh = dy[k] * g[k];
      dg[k] += dy[k] * xh;
      db[k] += dy[k];
      m1 += dxh;
      m2 += dxh * xh;
    }
    m1 /= d;
    m2 /= d;
    for (int k = 0; k < d; ++k) {
      const double xh = (x[k] - mu[r]) * rs[r];
      dX[r * d + k] = rs[r] * (dy[k] * g[k] - m1 - xh * m2);
    }
  }
}
inline double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x * M_SQRT1_2)); }
inline double gelu_d(double x) {
  return 0.5 * (1.0 + std::erf(x * M_SQRT1_2)) + x * std::exp(-0.5 * x * x) * 0.3989422804014327;
}

}  // namespace

VanillaModel::VanillaModel(const VanillaConfig &cfg, size_t chunk)
    : cfg_(cfg), chunk_(std::max<size_t>(chunk, (size_t)std::max(1, cfg.L))) {
  if (cfg_.hidden <= 0) cfg_.hidden = 4 * cfg_.d;
  lay_out_parameters();
  allocate_buffers();
}

double VanillaModel::params(const VanillaConfig &cfg) {
  const double d = cfg.d, h = cfg.hidden > 0 ? cfg.hidden : 4.0 * cfg.d, C = cfg.C, L = cfg.L;
  return (C + 1) * d + L * d + cfg.layers * (4 * d * d + 2 * d * h + h + 6 * d) + d * C + C + (cfg.pre_ln ? 2 * d : 0.0);
}

double VanillaModel::work_bytes(const VanillaConfig &cfg, size_t chunk) {
  const double d = cfg.d, h = cfg.hidden > 0 ? cfg.hidden : 4.0 * cfg.d, L = cfg.L, nl = cfg.layers;
  const double ch = (double)std::max<size_t>(chunk, (size_t)std::max(1, cfg.L)), rows = ch * L;
  // as allocate_buffers: X_ (nl + 1), Xq_ Q_ K_ V_ AV_ R1_ H_ R2_ (8 per layer), A_, U1_ G1_, the four statistics
  double x = (nl + 1) * rows * d + 8 * nl * rows * d + nl * rows * L + 2 * nl * rows * h + 4 * nl * rows;
  if (cfg.pre_ln) x += 2 * nl * rows * d + ch * d + 2 * ch + rows * d;  // Xn_, Xnq_, Xf_, muf_, rsf_, dXn_
  x += 7 * rows * d + rows * h + rows * std::max(d, h);                  // dX_ … dR_, dU_, tmp_
  if (cfg.dropout > 0) x += nl * rows * L + 2 * nl * rows * d + nl * rows * h + rows * d;  // masks, dT_
  return 8.0 * x;
}

// Offsets of every parameter block in θ (the layout init() documents); n_ = their total.
void VanillaModel::lay_out_parameters() {
  const size_t d = cfg_.d, h = cfg_.hidden;
  size_t o = 0;
  oE_ = o;
  o += (cfg_.C + 1) * d;
  oP_ = o;
  o += cfg_.L * d;
  for (int l = 0; l < cfg_.layers; ++l) {
    Layer y;
    y.Wq = o; o += d * d;
    y.Wk = o; o += d * d;
    y.Wv = o; o += d * d;
    y.Wo = o; o += d * d;
    y.bo = o; o += d;
    y.g1 = o; o += d;
    y.be1 = o; o += d;
    y.W1 = o; o += d * h;
    y.b1 = o; o += h;
    y.W2 = o; o += h * d;
    y.b2 = o; o += d;
    y.g2 = o; o += d;
    y.be2 = o; o += d;
    lay_.push_back(y);
  }
  oWout_ = o;
  o += d * cfg_.C;
  obout_ = o;
  o += cfg_.C;
  if (cfg_.pre_ln) {
    ogf_ = o;
    o += d;
    obf_ = o;
    o += d;
  }
  n_ = o;
}

// The activations of a chunk of sequences per layer (kept for the backward pass), the backward scratch and,
// with dropout, the masks.
void VanillaModel::allocate_buffers() {
  const size_t d = cfg_.d, h = cfg_.hidden;
  const size_t rows = chunk_ * cfg_.L, nl = cfg_.layers;
  auto alloc = [&](std::vector<std::vector<double>> &v, size_t cnt, size_t per) {
    v.assign(cnt, std::vector<double>(per));
  };
  alloc(X_, nl + 1, rows * d);
  alloc(Xq_, nl, rows * d);
  alloc(Q_, nl, rows * d);
  alloc(K_, nl, rows * d);
  alloc(V_, nl, rows * d);
  alloc(A_, nl, rows * cfg_.L);
  alloc(AV_, nl, rows * d);
  alloc(R1_, nl, rows * d);
  alloc(H_, nl, rows * d);
  alloc(U1_, nl, rows * h);
  alloc(G1_, nl, rows * h);
  alloc(R2_, nl, rows * d);
  alloc(mu1_, nl, rows);
  alloc(rs1_, nl, rows);
  alloc(mu2_, nl, rows);
  alloc(rs2_, nl, rows);
  if (cfg_.pre_ln) {
    alloc(Xn_, nl, rows * d);
    alloc(Xnq_, nl, rows * d);
    Xf_.resize(chunk_ * d);
    muf_.resize(chunk_);
    rsf_.resize(chunk_);
    dXn_.resize(rows * d);
  }
  dX_.resize(rows * d);
  dH_.resize(rows * d);
  dU_.resize(rows * h);
  dAV_.resize(rows * d);
  dQ_.resize(rows * d);
  dK_.resize(rows * d);
  dV_.resize(rows * d);
  dR_.resize(rows * d);
  tmp_.resize(rows * std::max(d, h));
  if (cfg_.dropout > 0) {
    alloc(mA_, nl, rows * cfg_.L);
    alloc(mO_, nl, rows * d);
    alloc(mH_, nl, rows * h);
    alloc(mM_, nl, rows * d);
    dT_.resize(rows * d);
  }
}

void VanillaModel::draw_mask(double *m, size_t n) {
  const double p = cfg_.dropout, keep = 1.0 / (1.0 - p);
  for (size_t k = 0; k < n; ++k) m[k] = am_rng_uniform(&drng_) < p ? 0.0 : keep;
}

void VanillaModel::branch_add(size_t n, int in, int out, const double *X, const double *W, const double *b,
                              double *mask, double *Y) {
  if (!mask) {
    mm(n, in, out, X, W, Y, 1.0);
    add_bias(n, out, b, Y);
    return;
  }
  double *T = tmp_.data();
  mm(n, in, out, X, W, T, 0.0);
  add_bias(n, out, b, T);
  draw_mask(mask, n * out);
  for (size_t k = 0; k < n * out; ++k) Y[k] += T[k] * mask[k];
}

void VanillaModel::init(double *theta, am_rng *rng) const {
  const int d = cfg_.d, h = cfg_.hidden;
  am_rng_fill_normal(rng, theta, n_);
  auto scale = [&](size_t off, size_t cnt, double s) {
    for (size_t k = 0; k < cnt; ++k) theta[off + k] *= s;
  };
  auto set = [&](size_t off, size_t cnt, double v) {
    for (size_t k = 0; k < cnt; ++k) theta[off + k] = v;
  };
  for (const Layer &y : lay_) {
    const double sd = 1.0 / std::sqrt((double)d), sh = 1.0 / std::sqrt((double)h);
    scale(y.Wq, d * d, sd);
    scale(y.Wk, d * d, sd);
    scale(y.Wv, d * d, sd);
    scale(y.Wo, d * d, sd);
    scale(y.W1, (size_t)d * h, sd);
    scale(y.W2, (size_t)h * d, sh);
    set(y.bo, d, 0.0);
    set(y.g1, d, 1.0);
    set(y.be1, d, 0.0);
    set(y.b1, h, 0.0);
    set(y.b2, d, 0.0);
    set(y.g2, d, 1.0);
    set(y.be2, d, 0.0);
  }
  scale(oWout_, (size_t)d * cfg_.C, 1.0 / std::sqrt((double)d));
  set(obout_, cfg_.C, 0.0);
  if (cfg_.pre_ln) {
    set(ogf_, d, 1.0);
    set(obf_, d, 0.0);
  }
}

// Rows of a layer: keys/values are computed for all B·L input rows; queries (and everything after the
// attention: residual, LayerNorms, MLP, the layer's output) only for the "query rows" — all rows in
// the lower layers, only the masked row of every example in the last layer (the read-out needs nothing
// else). query_rows(l) = query rows per example (L or 1); query row (e, t) reads input row source_row(l, e, t).
int VanillaModel::query_rows(int l) const { return l == cfg_.layers - 1 ? 1 : cfg_.L; }

size_t VanillaModel::source_row(int l, size_t e, int t, const int32_t *mask) const {
  return l == cfg_.layers - 1 ? e * cfg_.L + mask[e] : e * cfg_.L + t;
}

// Layer 0's input: token embedding (MASK = C at the masked site) + positional vector, B·L rows.
void VanillaModel::embed(const double *theta, const int32_t *tokens, const int32_t *mask, size_t B) {
  const int L = cfg_.L, C = cfg_.C, d = cfg_.d;
  const double *E = theta + oE_, *P = theta + oP_;
  double *X = X_[0].data();
  for (size_t e = 0; e < B; ++e)
    for (int i = 0; i < L; ++i) {
      const int t = (i == mask[e]) ? C : tokens[e * L + i];
      for (int k = 0; k < d; ++k) X[(e * L + i) * d + k] = E[(size_t)t * d + k] + P[(size_t)i * d + k];
    }
}

// Layer l's softmax attention: Q of the query rows, K and V of all rows, A = softmax(Q Kᵀ/√d), AV = A V;
// attn_rows (if non-null) gets each example's masked row of A.
void VanillaModel::attention_forward(const double *theta, int l, size_t B, const int32_t *mask, double *attn_rows) {
  const int L = cfg_.L, d = cfg_.d, NL = cfg_.layers, nq = query_rows(l);
  const Layer &y = lay_[l];
  const size_t n = B * L, nr = B * nq;
  const double isd = 1.0 / std::sqrt((double)d);
  const double *X = X_[l].data();
  double *Xq = Xq_[l].data(), *Q = Q_[l].data(), *K = K_[l].data(), *V = V_[l].data(), *A = A_[l].data(),
         *AV = AV_[l].data();
  for (size_t e = 0; e < B; ++e)
    for (int t = 0; t < nq; ++t) {
      const size_t r = source_row(l, e, t, mask);
      std::copy(X + r * d, X + (r + 1) * d, Xq + (e * nq + t) * d);
    }
  // the projections' input: the rows themselves (post-LN) or their LayerNorm (pre-LN)
  const double *Xin = X, *Xqin = Xq;
  if (cfg_.pre_ln) {
    double *Xn = Xn_[l].data(), *Xnq = Xnq_[l].data();
    ln_forward(n, d, X, theta + y.g1, theta + y.be1, Xn, mu1_[l].data(), rs1_[l].data());
    for (size_t e = 0; e < B; ++e)
      for (int t = 0; t < nq; ++t) {
        const size_t r = source_row(l, e, t, mask);
        std::copy(Xn + r * d, Xn + (r + 1) * d, Xnq + (e * nq + t) * d);
      }
    Xin = Xn;
    Xqin = Xnq;
  }
  mm(nr, d, d, Xqin, theta + y.Wq, Q, 0.0);
  mm(n, d, d, Xin, theta + y.Wk, K, 0.0);
  mm(n, d, d, Xin, theta + y.Wv, V, 0.0);
  const double *mA = nullptr;
  if (drop_) {
    draw_mask(mA_[l].data(), nr * L);
    mA = mA_[l].data();
  }
  for (size_t e = 0; e < B; ++e) {
    const double *Ke = K + e * L * d, *Ve = V + e * L * d;
    for (int t = 0; t < nq; ++t) {
      const size_t qr = e * nq + t;
      const double *q = Q + qr * d;
      double *a = A + qr * L;
      double mx = -INFINITY;
      for (int j = 0; j < L; ++j) {
        double s = 0.0;
        for (int k = 0; k < d; ++k) s += q[k] * Ke[j * d + k];
        a[j] = s * isd;
        mx = std::max(mx, a[j]);
      }
      double z = 0.0;
      for (int j = 0; j < L; ++j) z += (a[j] = std::exp(a[j] - mx));
      for (int j = 0; j < L; ++j) a[j] /= z;
      double *av = AV + qr * d;
      for (int k = 0; k < d; ++k) av[k] = 0.0;
      for (int j = 0; j < L; ++j) {
        const double aj = mA ? a[j] * mA[qr * L + j] : a[j];  // the dropped weights weigh the values
        for (int k = 0; k < d; ++k) av[k] += aj * Ve[j * d + k];
      }
    }
    if (attn_rows) {
      const size_t qr = e * nq + (nq == 1 ? 0 : mask[e]);
      for (int j = 0; j < L; ++j) attn_rows[(e * NL + l) * L + j] = A[qr * L + j];
    }
  }
}

// Layer l after the attention: h = LN₁(Xq + AV W_o + b_o), output LN₂(h + GELU(h W₁ + b₁) W₂ + b₂) → X_[l + 1].
void VanillaModel::block_forward(const double *theta, int l, size_t B) {
  const int d = cfg_.d;
  const Layer &y = lay_[l];
  const size_t nr = B * query_rows(l);
  const double *Xq = Xq_[l].data();
  double *R1 = R1_[l].data();
  std::copy(Xq, Xq + nr * d, R1);
  branch_add(nr, d, d, AV_[l].data(), theta + y.Wo, theta + y.bo, drop_ ? mO_[l].data() : nullptr, R1);
  double *H = H_[l].data();
  if (cfg_.pre_ln) {  // h = R1 stays on the residual stream; the MLP reads LN₂(h); X' = h + MLP
    ln_forward(nr, d, R1, theta + y.g2, theta + y.be2, H, mu2_[l].data(), rs2_[l].data());
    mlp_forward(theta, l, nr, R1, X_[l + 1].data());
    return;
  }
  ln_forward(nr, d, R1, theta + y.g1, theta + y.be1, H, mu1_[l].data(), rs1_[l].data());
  double *R2 = R2_[l].data();
  mlp_forward(theta, l, nr, H, R2);
  ln_forward(nr, d, R2, theta + y.g2, theta + y.be2, X_[l + 1].data(), mu2_[l].data(), rs2_[l].data());
}

// The MLP of block l on its input H_[l] (nr rows): U1 = H W₁ + b₁, G1 = GELU(U1) (its units dropped in training),
// out = residual + G1 W₂ + b₂ (the branch dropped in training). Both LayerNorm placements share it.
void VanillaModel::mlp_forward(const double *theta, int l, size_t nr, const double *residual, double *out) {
  const int d = cfg_.d, hd = cfg_.hidden;
  const Layer &y = lay_[l];
  double *U1 = U1_[l].data(), *G1 = G1_[l].data();
  mm(nr, d, hd, H_[l].data(), theta + y.W1, U1, 0.0);
  add_bias(nr, hd, theta + y.b1, U1);
  for (size_t k = 0; k < nr * hd; ++k) G1[k] = gelu(U1[k]);
  if (drop_) {
    double *mh = mH_[l].data();
    draw_mask(mh, nr * hd);
    for (size_t k = 0; k < nr * hd; ++k) G1[k] *= mh[k];
  }
  std::copy(residual, residual + nr * d, out);
  branch_add(nr, hd, d, G1, theta + y.W2, theta + y.b2, drop_ ? mM_[l].data() : nullptr, out);
}

// Read-out at the masked sites (the last layer's output holds one row per example): Σ_e −log p(s_m | ·).
// With grad: the read-out's gradient (times scale) into grad, and the gradient w.r.t. the last layer's
// output rows into dX_.
double VanillaModel::readout(const double *theta, const int32_t *tokens, const int32_t *mask, size_t B, double scale,
                             double *grad) {
  const int L = cfg_.L, C = cfg_.C, d = cfg_.d;
  const double *Xo = cfg_.pre_ln ? Xf_.data() : X_[cfg_.layers].data(), *Wout = theta + oWout_,
               *bout = theta + obout_;
  std::vector<double> z(C);
  double total = 0.0;
  for (size_t e = 0; e < B; ++e) {
    const int m = mask[e], s = tokens[e * L + m];
    const double *x = Xo + e * d;
    for (int a = 0; a < C; ++a) {
      double t = bout[a];
      for (int k = 0; k < d; ++k) t += x[k] * Wout[(size_t)k * C + a];
      z[a] = t;
    }
    double mx = z[0];
    for (int a = 1; a < C; ++a) mx = std::max(mx, z[a]);
    double se = 0.0;
    for (int a = 0; a < C; ++a) se += (z[a] = std::exp(z[a] - mx));
    total += -std::log(z[s] / se);
    if (!grad) continue;
    for (int a = 0; a < C; ++a) z[a] = z[a] / se * scale;
    z[s] -= scale;
    double *gW = grad + oWout_, *gb = grad + obout_, *dx = dX_.data() + e * d;
    for (int a = 0; a < C; ++a) gb[a] += z[a];
    for (int k = 0; k < d; ++k) {
      double t = 0.0;
      for (int a = 0; a < C; ++a) {
        gW[(size_t)k * C + a] += x[k] * z[a];
        t += Wout[(size_t)k * C + a] * z[a];
      }
      dx[k] = t;
    }
  }
  return total;
}

void VanillaModel::mlp_backward(const double *theta, int l, size_t nr, const double *dOut, double beta,
                                double *grad) {
  const int d = cfg_.d, hd = cfg_.hidden;
  const Layer &y = lay_[l];
  if (drop_) {  // through the branch's dropout mask
    const double *mm2 = mM_[l].data();
    for (size_t k = 0; k < nr * d; ++k) dT_[k] = dOut[k] * mm2[k];
    dOut = dT_.data();
  }
  col_sum(nr, d, dOut, grad + y.b2);
  mm_at(nr, hd, d, G1_[l].data(), dOut, grad + y.W2);  // G1_ holds the hidden units after their dropout
  mm_bt(nr, hd, d, dOut, theta + y.W2, dU_.data(), 0.0);
  const double *U1 = U1_[l].data();
  if (drop_) {
    const double *mh = mH_[l].data();
    for (size_t k = 0; k < nr * hd; ++k) dU_[k] *= mh[k];
  }
  for (size_t k = 0; k < nr * hd; ++k) dU_[k] *= gelu_d(U1[k]);
  col_sum(nr, hd, dU_.data(), grad + y.b1);
  mm_at(nr, d, hd, H_[l].data(), dU_.data(), grad + y.W1);
  mm_bt(nr, d, hd, dU_.data(), theta + y.W1, dH_.data(), beta);
}

// Backward through layer l's LayerNorms, MLP and output projection: from dX_ (gradient w.r.t. the layer's
// output rows) to dAV_ and to dR_ (gradient w.r.t. the residual input R1 = the query rows' share).
void VanillaModel::block_backward(const double *theta, int l, size_t B, double *grad) {
  const int d = cfg_.d;
  const Layer &y = lay_[l];
  const size_t nr = B * query_rows(l);
  double *dR2 = dR_.data();
  ln_backward(nr, d, R2_[l].data(), mu2_[l].data(), rs2_[l].data(), theta + y.g2, dX_.data(), dR2, grad + y.g2,
              grad + y.be2);
  std::copy(dR2, dR2 + nr * d, dH_.data());
  mlp_backward(theta, l, nr, dR2, 1.0, grad);
  double *dR1 = dR_.data();
  ln_backward(nr, d, R1_[l].data(), mu1_[l].data(), rs1_[l].data(), theta + y.g1, dH_.data(), dR1, grad + y.g1,
              grad + y.be1);
  attention_branch_backward(theta, l, nr, grad);
}

// The attention branch AV W_o + b_o (after its dropout mask) backwards from dR_ (gradient w.r.t. the residual
// sum): grads of W_o, b_o and dAV_. dR_ itself is left for the residual path.
void VanillaModel::attention_branch_backward(const double *theta, int l, size_t nr, double *grad) {
  const int d = cfg_.d;
  const Layer &y = lay_[l];
  const double *dB = dR_.data();
  if (drop_) {
    const double *mo = mO_[l].data();
    for (size_t k = 0; k < nr * d; ++k) dT_[k] = dB[k] * mo[k];
    dB = dT_.data();
  }
  col_sum(nr, d, dB, grad + y.bo);
  mm_at(nr, d, d, AV_[l].data(), dB, grad + y.Wo);
  mm_bt(nr, d, d, dB, theta + y.Wo, dAV_.data(), 0.0);
}

// Backward through layer l's attention: from dAV_ and dR_ to the weights W_q, W_k, W_v and to dX_, the
// gradient w.r.t. all of the layer's input rows (keys, values, and the query rows scattered back).
void VanillaModel::attention_backward(const double *theta, int l, size_t B, const int32_t *mask, double *grad) {
  const int L = cfg_.L, d = cfg_.d, nq = query_rows(l);
  const Layer &y = lay_[l];
  const size_t n = B * L, nr = B * nq;
  attention_core_backward(l, B);
  const double *X = X_[l].data(), *Xq = Xq_[l].data();
  double *dR1 = dR_.data();
  mm_at(nr, d, d, Xq, dQ_.data(), grad + y.Wq);
  mm_at(n, d, d, X, dK_.data(), grad + y.Wk);
  mm_at(n, d, d, X, dV_.data(), grad + y.Wv);
  // gradient w.r.t. the query rows' input: residual + query projection
  mm_bt(nr, d, d, dQ_.data(), theta + y.Wq, dR1, 1.0);
  // gradient w.r.t. all input rows: keys and values, plus the query rows scattered back
  mm_bt(n, d, d, dK_.data(), theta + y.Wk, dX_.data(), 0.0);
  mm_bt(n, d, d, dV_.data(), theta + y.Wv, dX_.data(), 1.0);
  for (size_t e = 0; e < B; ++e)
    for (int t = 0; t < nq; ++t) {
      double *dst = dX_.data() + source_row(l, e, t, mask) * d;
      const double *sv = dR1 + (e * nq + t) * d;
      for (int k = 0; k < d; ++k) dst[k] += sv[k];
    }
}

// The softmax attention's backward pass: from dAV_ to dQ_ (query rows), dK_ and dV_ (all rows).
void VanillaModel::attention_core_backward(int l, size_t B) {
  const int L = cfg_.L, d = cfg_.d, nq = query_rows(l);
  const size_t n = B * L, nr = B * nq;
  const double isd = 1.0 / std::sqrt((double)d);
  const double *Q = Q_[l].data(), *K = K_[l].data(), *V = V_[l].data(), *A = A_[l].data();
  std::fill(dQ_.begin(), dQ_.begin() + nr * d, 0.0);
  std::fill(dK_.begin(), dK_.begin() + n * d, 0.0);
  std::fill(dV_.begin(), dV_.begin() + n * d, 0.0);
  std::vector<double> dA(L);
  for (size_t e = 0; e < B; ++e) {
    const size_t r0 = e * L;
    for (int t = 0; t < nq; ++t) {
      const size_t qr = e * nq + t;
      const double *a = A + qr * L, *dav = dAV_.data() + qr * d, *ma = drop_ ? mA_[l].data() + qr * L : nullptr;
      double tt = 0.0;
      for (int j = 0; j < L; ++j) {
        const double *v = V + (r0 + j) * d;
        double *dv = dV_.data() + (r0 + j) * d;
        const double aj = ma ? a[j] * ma[j] : a[j];  // the values saw the dropped weights
        double s = 0.0;
        for (int k = 0; k < d; ++k) {
          s += dav[k] * v[k];
          dv[k] += aj * dav[k];
        }
        if (ma) s *= ma[j];  // back through the mask to the softmax output
        dA[j] = s;
        tt += a[j] * s;
      }
      const double *q = Q + qr * d;
      double *dq = dQ_.data() + qr * d;
      for (int j = 0; j < L; ++j) {
        const double ds = a[j] * (dA[j] - tt) * isd;
        const double *kk = K + (r0 + j) * d;
        double *dk = dK_.data() + (r0 + j) * d;
        for (int k = 0; k < d; ++k) {
          dq[k] += ds * kk[k];
          dk[k] += ds * q[k];
        }
      }
    }
  }
}

// Pre-LN block backward: from dX_ (gradient w.r.t. X' = h + MLP(LN₂(h))) to dR_ (w.r.t. h, which is also the
// query rows' residual share) and dAV_.
void VanillaModel::block_backward_pre(const double *theta, int l, size_t B, double *grad) {
  const int d = cfg_.d;
  const Layer &y = lay_[l];
  const size_t nr = B * query_rows(l);
  const double *dXo = dX_.data();
  mlp_backward(theta, l, nr, dXo, 0.0, grad);
  double *dR1 = dR_.data();
  ln_backward(nr, d, R1_[l].data(), mu2_[l].data(), rs2_[l].data(), theta + y.g2, dH_.data(), dR1, grad + y.g2,
              grad + y.be2);
  for (size_t k = 0; k < nr * d; ++k) dR1[k] += dXo[k];  // the residual path
  attention_branch_backward(theta, l, nr, grad);
}

// Pre-LN attention backward: the projections read N = LN₁(X); dX_ (all input rows) = LN₁ backward of the
// projections' gradient + the residual gradient dR_ of the query rows scattered back.
void VanillaModel::attention_backward_pre(const double *theta, int l, size_t B, const int32_t *mask,
                                          double *grad) {
  const int L = cfg_.L, d = cfg_.d, nq = query_rows(l);
  const Layer &y = lay_[l];
  const size_t n = B * L, nr = B * nq;
  attention_core_backward(l, B);
  const double *Xn = Xn_[l].data(), *Xnq = Xnq_[l].data();
  mm_at(nr, d, d, Xnq, dQ_.data(), grad + y.Wq);
  mm_at(n, d, d, Xn, dK_.data(), grad + y.Wk);
  mm_at(n, d, d, Xn, dV_.data(), grad + y.Wv);
  double *dXn = dXn_.data(), *tq = tmp_.data();
  mm_bt(n, d, d, dK_.data(), theta + y.Wk, dXn, 0.0);
  mm_bt(n, d, d, dV_.data(), theta + y.Wv, dXn, 1.0);
  mm_bt(nr, d, d, dQ_.data(), theta + y.Wq, tq, 0.0);
  for (size_t e = 0; e < B; ++e)
    for (int t = 0; t < nq; ++t) {
      double *dst = dXn + source_row(l, e, t, mask) * d;
      const double *sv = tq + (e * nq + t) * d;
      for (int k = 0; k < d; ++k) dst[k] += sv[k];
    }
  ln_backward(n, d, X_[l].data(), mu1_[l].data(), rs1_[l].data(), theta + y.g1, dXn, dX_.data(), grad + y.g1,
              grad + y.be1);
  const double *dR1 = dR_.data();
  for (size_t e = 0; e < B; ++e)
    for (int t = 0; t < nq; ++t) {
      double *dst = dX_.data() + source_row(l, e, t, mask) * d;
      const double *sv = dR1 + (e * nq + t) * d;
      for (int k = 0; k < d; ++k) dst[k] += sv[k];
    }
}

// dX_ (gradient w.r.t. layer 0's input rows) into the token and positional embeddings.
void VanillaModel::embed_backward(const int32_t *tokens, const int32_t *mask, size_t B, double *grad) {
  const int L = cfg_.L, C = cfg_.C, d = cfg_.d;
  double *gE = grad + oE_, *gP = grad + oP_;
  for (size_t e = 0; e < B; ++e)
    for (int i = 0; i < L; ++i) {
      const int t = (i == mask[e]) ? C : tokens[e * L + i];
      const double *dx = dX_.data() + (e * L + i) * d;
      for (int k = 0; k < d; ++k) {
        gE[(size_t)t * d + k] += dx[k];
        gP[(size_t)i * d + k] += dx[k];
      }
    }
}

double VanillaModel::chunk_loss(const double *theta, const int32_t *tokens, const int32_t *mask, size_t B,
                                double scale, double *grad, double *attn_rows) {
  const int d = cfg_.d;
  embed(theta, tokens, mask, B);
  for (int l = 0; l < cfg_.layers; ++l) {
    attention_forward(theta, l, B, mask, attn_rows);
    block_forward(theta, l, B);
  }
  if (cfg_.pre_ln)  // the last layer holds one row per example
    ln_forward(B, d, X_[cfg_.layers].data(), theta + ogf_, theta + obf_, Xf_.data(), muf_.data(), rsf_.data());
  const double total = readout(theta, tokens, mask, B, scale, grad);
  if (!grad) return total;
  if (cfg_.pre_ln) {
    ln_backward(B, d, X_[cfg_.layers].data(), muf_.data(), rsf_.data(), theta + ogf_, dX_.data(), tmp_.data(),
                grad + ogf_, grad + obf_);
    std::copy(tmp_.begin(), tmp_.begin() + B * d, dX_.begin());
  }
  for (int l = cfg_.layers - 1; l >= 0; --l) {  // dX_: gradient w.r.t. the current layer's output rows
    if (cfg_.pre_ln) {
      block_backward_pre(theta, l, B, grad);
      attention_backward_pre(theta, l, B, mask, grad);
    } else {
      block_backward(theta, l, B, grad);
      attention_backward(theta, l, B, mask, grad);
    }
  }
  embed_backward(tokens, mask, B, grad);
  return total;
}

double VanillaModel::loss(const double *theta, const int32_t *tokens, const int32_t *mask, size_t n, double *grad,
                          double *attn_rows, const am_rng *dropout_rng) {
  if (grad) std::fill(grad, grad + n_, 0.0);
  drop_ = cfg_.dropout > 0 && dropout_rng;
  if (drop_) drng_ = *dropout_rng;
  const double scale = 1.0 / (double)n;
  double total = 0.0;
  for (size_t e0 = 0; e0 < n; e0 += chunk_) {
    const size_t B = std::min(chunk_, n - e0);
    total += chunk_loss(theta, tokens + e0 * cfg_.L, mask + e0, B, scale, grad,
                        attn_rows ? attn_rows + e0 * cfg_.layers * cfg_.L : nullptr);
  }
  drop_ = false;
  return total * scale;
}

double VanillaModel::pseudo_loss(const double *theta, const int32_t *tokens, size_t M, double *mean_attn,
                                 int attn_layer) {
  const int L = cfg_.L, NL = cfg_.layers;
  const size_t seqs = std::max<size_t>(1, chunk_ / L);
  std::vector<int32_t> tok(seqs * L * L), msk(seqs * L);
  std::vector<double> rows(mean_attn ? seqs * L * NL * L : 0);
  const int l0 = attn_layer < 0 ? 0 : attn_layer, l1 = attn_layer < 0 ? NL : attn_layer + 1;
  if (mean_attn) std::fill(mean_attn, mean_attn + (size_t)(l1 - l0) * L * L, 0.0);
  double total = 0.0;
  for (size_t m0 = 0; m0 < M; m0 += seqs) {
    if (stop_ && stop_()) return NAN;
    const size_t S = std::min(seqs, M - m0);
    for (size_t s = 0; s < S; ++s)
      for (int i = 0; i < L; ++i) {
        std::copy(tokens + (m0 + s) * L, tokens + (m0 + s + 1) * L, tok.begin() + (s * L + i) * L);
        msk[s * L + i] = i;
      }
    total += chunk_loss(theta, tok.data(), msk.data(), S * L, 1.0, nullptr, mean_attn ? rows.data() : nullptr);
    if (mean_attn)
      for (int l = l0; l < l1; ++l) {
        double *out = mean_attn + (size_t)(l - l0) * L * L;
        for (size_t s = 0; s < S; ++s)
          for (int i = 0; i < L; ++i)
            for (int j = 0; j < L; ++j) out[i + (size_t)L * j] += rows[((s * L + i) * NL + l) * L + j] / (double)M;
      }
  }
  return total / ((double)M * L);
}

}  // namespace am::vanilla
