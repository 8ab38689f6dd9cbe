// msa_core — the alignment pseudo-likelihood of msa_model.h through the dense couplings.
//
// Layout: the couplings are kept as Jt[i][j][b][a] — for site i and context site j, one row of Cp doubles per
// colour b of site j (a = the colour of site i, padded from C to Cp, a multiple of the vector width). Row b = C is
// all zeros: a missing token points there, so the conditionals need no branch. Site i's conditional logits for
// sequence μ are then h_i + Σ_j Jt[i][j][s_μj] (one row gather per j) and the coupling gradient is the transpose
// (one row scatter per j) into Gt with the same layout. Sites are independent: each worker owns whole sites
// (their rows of Jt and Gt and their loss), and the per-site losses are added in site order, so the result is
// the same bits for every thread count.
// The factored couplings are one product: Jt[(i, j)][(b, a)] = Σ_h A^h_ij Vt^h[(b, a)] with Vt^h[b][a] = V^h_ab
// (an L²×H by H×(C+1)·Cp dgemm); its gradient is two more products with the same matrices.
#include "msa_model.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "simd/vec.h"

namespace am::msa {

namespace simd = potts::simd;  // the vector kernels the Potts code shares
using potts::run_parallel;

namespace {
constexpr size_t kSeqChunk = 1024;  // sequences per gather/scatter pass: each pass keeps one site's rows in L2
}

struct MsaModel::Impl {
  size_t Cp = 0, rowlen = 0;    // padded colours; doubles of one (i, j) block = (C + 1)·Cp
  ParallelFor pf;
  std::vector<double> Jt, Gt;   // L·L·rowlen each
  std::vector<double> Am, dAm;  // factored: H × L² row-major, Am[h·L² + i·L + j] = A^h_ij (and its gradient)
  std::vector<double> Vt, dVt;  // H × rowlen row-major
  std::vector<int> offs;        // M·L row offsets of the batch (j·rowlen + b·Cp)
  std::vector<double> site_loss, dh;
};

namespace {
// Doubles per padded colour row (C rounded up to the vector width) and per (i, j) block: (C + 1)·Cp.
size_t padded_colours(int C) {
  const size_t W = simd::kernels().width;
  return (size_t)C + (W - (size_t)C % W) % W;
}
}  // namespace

double MsaModel::work_bytes(MsaKind kind, int L, int C, int heads, size_t M_max) {
  const double LL = (double)L * L, rowlen = ((double)C + 1) * (double)padded_colours(C), H = heads;
  double doubles = 2.0 * LL * rowlen + L + (double)L * C;  // Jt, Gt, site_loss, dh
  if (kind == MsaKind::Factored) doubles += 2.0 * H * LL + 2.0 * H * rowlen;  // Am, dAm, Vt, dVt
  return 8.0 * doubles + 4.0 * (double)M_max * L;  // + offs (int per token)
}

double MsaModel::call_bytes(int C, size_t M, double D, int workers) {
  // Visits: order and begin (size_t per visit), from and to (int per changed site); z: kSeqChunk + 1 rows per worker.
  return 16.0 * (double)M + 8.0 * D + 8.0 * (double)(kSeqChunk + 1) * (double)padded_colours(C) * std::max(1, workers);
}

double MsaModel::params(MsaKind kind, int L, int C, int heads, bool fields) {
  const double coup = kind == MsaKind::Factored ? (double)heads * ((double)L * L + (double)C * C)
                                                 : (double)L * (L - 1) / 2.0 * C * C;
  return (fields ? (double)L * C : 0.0) + coup;
}

MsaModel::MsaModel(MsaKind kind, int L, int C, int heads, bool fields)
    : impl_(std::make_unique<Impl>()), kind_(kind), L_(L), C_(C), H_(kind == MsaKind::Factored ? heads : 0),
      fields_(fields) {
  Impl &m = *impl_;
  m.Cp = padded_colours(C);
  m.rowlen = ((size_t)C + 1) * m.Cp;
  const size_t LL = (size_t)L * L;
  m.Jt.assign(LL * m.rowlen, 0.0);
  m.Gt.assign(LL * m.rowlen, 0.0);
  if (kind_ == MsaKind::Factored) {
    m.Am.assign(LL * H_, 0.0);
    m.dAm.assign(LL * H_, 0.0);
    m.Vt.assign((size_t)H_ * m.rowlen, 0.0);
    m.dVt.assign((size_t)H_ * m.rowlen, 0.0);
  }
  m.site_loss.assign(L, 0.0);
  m.dh.assign((size_t)L * C, 0.0);
}

MsaModel::~MsaModel() = default;

size_t MsaModel::n_params() const {
  const size_t coup = kind_ == MsaKind::Factored
                          ? (size_t)H_ * ((size_t)L_ * L_ + (size_t)C_ * C_)
                          : (size_t)L_ * (L_ - 1) / 2 * C_ * C_;
  return fields_size() + coup;
}

void MsaModel::set_parallel(ParallelFor pf) { impl_->pf = std::move(pf); }

double MsaModel::flops(size_t M) const {
  // Gather and scatter: one addition per (sequence, i, j, a); the factored products: three of 2·L²·C²·H.
  const double gs = 2.0 * (double)M * L_ * (double)L_ * C_;
  return gs + (kind_ == MsaKind::Factored ? 6.0 * (double)L_ * L_ * (double)C_ * C_ * H_ : 0.0);
}

namespace {

// Row offsets of every (μ, j): j·rowlen + b·Cp with b = C for a missing token.
void make_offsets(const MsaBatch &b, int L, int C, size_t Cp, size_t rowlen, std::vector<int> &offs) {
  offs.resize(b.M * (size_t)L);
  for (size_t k = 0; k < offs.size(); ++k) {
    const int32_t t = b.tokens[k];
    const size_t j = k % (size_t)L;
    offs[k] = (int)(j * rowlen + (size_t)(t < 0 ? C : t) * Cp);
  }
}

// Row-wise softmax over j ≠ i of s·W (row-major L×L) into A (row-major, A_ii = 0).
void row_softmax(const double *W, int L, double s, double *A) {
  for (int i = 0; i < L; ++i) {
    const double *w = W + (size_t)i * L;
    double *a = A + (size_t)i * L;
    double mx = -INFINITY;
    for (int j = 0; j < L; ++j)
      if (j != i) mx = std::max(mx, s * w[j]);
    double z = 0.0;
    for (int j = 0; j < L; ++j) z += (a[j] = j == i ? 0.0 : std::exp(s * w[j] - mx));
    for (int j = 0; j < L; ++j) a[j] /= z;
  }
}

}  // namespace

// X ← (X + Xᵀ)/2 where the transpose maps block (i, j) row b lane a to block (j, i) row a lane b.
static void symmetrise_blocks(std::vector<double> &X, int L, int C, size_t Cp, size_t rowlen) {
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j < L; ++j) {
      double *ij = X.data() + ((size_t)i * L + j) * rowlen, *ji = X.data() + ((size_t)j * L + i) * rowlen;
      for (int b = 0; b < C; ++b)
        for (int a = 0; a < C; ++a) {
          const double v = 0.5 * (ij[(size_t)b * Cp + a] + ji[(size_t)a * Cp + b]);
          ij[(size_t)b * Cp + a] = ji[(size_t)a * Cp + b] = v;
        }
    }
}

// Jt from θ (factored: A from W, then one dgemm; Potts: e_ij and its transpose into both blocks).
static void build_couplings(MsaModel::Impl &m, MsaKind kind, int L, int C, int H, const double *coup, bool sym,
                            double ls) {
  const size_t LL = (size_t)L * L;
  if (kind == MsaKind::Factored) {
    for (int h = 0; h < H; ++h) {
      row_softmax(coup + (size_t)h * LL, L, ls, m.Am.data() + (size_t)h * LL);
      const double *V = coup + (size_t)H * LL + (size_t)h * C * C;
      double *vt = m.Vt.data() + (size_t)h * m.rowlen;
      for (int b = 0; b < C; ++b)
        for (int a = 0; a < C; ++a) vt[(size_t)b * m.Cp + a] = V[(size_t)a * C + b];
    }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)LL, (int)m.rowlen, H, 1.0, m.Am.data(), (int)LL,
                m.Vt.data(), (int)m.rowlen, 0.0, m.Jt.data(), (int)m.rowlen);
    if (sym) symmetrise_blocks(m.Jt, L, C, m.Cp, m.rowlen);
    return;
  }
  const double *e = coup;
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j < L; ++j, e += (size_t)C * C) {
      double *ij = m.Jt.data() + ((size_t)i * L + j) * m.rowlen, *ji = m.Jt.data() + ((size_t)j * L + i) * m.rowlen;
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b) {
          ij[(size_t)b * m.Cp + a] = e[(size_t)a * C + b];  // site i's colour a, context j's colour b
          ji[(size_t)a * m.Cp + b] = e[(size_t)a * C + b];  // site j's colour b, context i's colour a
        }
    }
}

namespace {

// The visits of a batch: order and, per visit k, the row offsets that change from visit k−1 (from → to).
struct Visits {
  std::vector<size_t> order;
  std::vector<size_t> begin;  // M + 1
  std::vector<int> from, to;
  bool chained = false;
};

void make_visits(const MsaBatch &b, int L, const std::vector<int> &offs, Visits &v) {
  v.chained = b.plan != nullptr;
  v.from.clear();
  v.to.clear();
  v.begin.assign(b.M + 1, 0);
  if (!v.chained) {
    v.order.resize(b.M);
    for (size_t k = 0; k < b.M; ++k) v.order[k] = k;
    return;
  }
  v.order = b.plan->order;
  for (size_t k = 0; k < b.M; ++k) {
    v.begin[k] = v.from.size();
    if (k == 0) continue;
    const size_t prev = v.order[k - 1] * L, cur = v.order[k] * L;
    for (size_t d = b.plan->diff_begin[k]; d < b.plan->diff_begin[k + 1]; ++d) {
      const int j = b.plan->diff_site[d];
      v.from.push_back(offs[prev + j]);
      v.to.push_back(offs[cur + j]);
    }
  }
  v.begin[b.M] = v.from.size();
}

// Site i over the visits [k0, k1): logits into z (rows of Cp), −Σ w log p returned; with grad the residuals
// r = scale·w·(p − onehot) are scattered into Gt's rows of site i and added to dh_i.
struct SitePass {
  const MsaModel::Impl &m;
  const Visits &v;
  int L, C;
  const MsaBatch &b;
  const double *h;  // fields (L×C) or nullptr
  double scale;     // 1/N
  bool grad;

  // A visit starts afresh at the block start (or always, without a plan), else from the previous logits.
  void gather(int i, const double *Jt_i, size_t k0, size_t k1, double *z) const {
    const auto &K = simd::kernels();
    for (size_t k = k0; k < k1; ++k) {
      double *zr = z + (k - k0) * m.Cp;
      if (v.chained && k > k0) {
        std::memcpy(zr, zr - m.Cp, sizeof(double) * m.Cp);
        K.gather_diff(Jt_i, v.from.data() + v.begin[k], v.to.data() + v.begin[k], v.begin[k + 1] - v.begin[k],
                      m.Cp, zr);
        continue;
      }
      std::fill(zr, zr + m.Cp, 0.0);
      if (h) std::memcpy(zr, h + (size_t)i * C, sizeof(double) * C);
      K.gather_rows(Jt_i, m.offs.data() + v.order[k] * L, (size_t)L, m.Cp, zr);
    }
  }

  // Logits → residuals in place (a missing site i: a zero row); returns −Σ w log p.
  double residuals(int i, size_t k0, size_t k1, double *z, double *dh_i) const {
    const auto &K = simd::kernels();
    double loss = 0.0;
    for (size_t k = k0; k < k1; ++k) {
      const size_t mu = v.order[k];
      const int32_t t = b.tokens[mu * L + i];
      double *zr = z + (k - k0) * m.Cp;
      if (t < 0) {
        std::fill(zr, zr + m.Cp, 0.0);
        continue;
      }
      const double w = b.weights ? b.weights[mu] : 1.0;
      double mx = zr[0];
      for (int a = 1; a < C; ++a) mx = std::max(mx, zr[a]);
      const double zt = zr[t];
      const double s = K.exp_shift_sum(zr, (size_t)C, mx);
      loss += w * (std::log(s) + mx - zt);
      if (!grad) continue;
      const double ws = w * scale;
      for (int a = 0; a < C; ++a) zr[a] *= ws / s;
      zr[t] -= ws;
      for (int a = 0; a < C; ++a) dh_i[a] += zr[a];
    }
    return loss;
  }

  // Without a plan: every visit's residual into its L rows. With one: prefix sums P of the residuals; a site
  // whose token changes at visit k hands P to its old row and takes it from its new one; the block's last
  // sequence's rows get the final P.
  void scatter(double *Gt_i, size_t k0, size_t k1, const double *z, double *P) const {
    const auto &K = simd::kernels();
    if (!v.chained) {
      for (size_t k = k0; k < k1; ++k)
        K.scatter_rows(Gt_i, m.offs.data() + v.order[k] * L, (size_t)L, m.Cp, z + (k - k0) * m.Cp);
      return;
    }
    std::fill(P, P + m.Cp, 0.0);
    for (size_t k = k0; k < k1; ++k) {
      if (k > k0)
        K.scatter_diff(Gt_i, v.from.data() + v.begin[k], v.to.data() + v.begin[k], v.begin[k + 1] - v.begin[k],
                       m.Cp, P);
      const double *r = z + (k - k0) * m.Cp;
      for (size_t a = 0; a < m.Cp; ++a) P[a] += r[a];
    }
    K.scatter_rows(Gt_i, m.offs.data() + v.order[k1 - 1] * L, (size_t)L, m.Cp, P);
  }

  double run(int i, double *Gt_i, double *dh_i, std::vector<double> &z) const {
    const double *Jt_i = m.Jt.data() + (size_t)i * L * m.rowlen;
    double *P = z.data() + kSeqChunk * m.Cp;
    double loss = 0.0;
    for (size_t k0 = 0; k0 < b.M; k0 += kSeqChunk) {
      const size_t k1 = std::min(b.M, k0 + kSeqChunk);
      gather(i, Jt_i, k0, k1, z.data());
      loss += residuals(i, k0, k1, z.data(), dh_i);
      if (grad) scatter(Gt_i, k0, k1, z.data(), P);
    }
    return loss;
  }
};

}  // namespace

// The pass over all sites (each worker owns whole sites); returns −Σ w log p (sites added in order).
static double all_sites(MsaModel::Impl &m, int L, int C, const MsaBatch &b, const double *h, double scale, bool grad) {
  if (grad) {
    std::fill(m.Gt.begin(), m.Gt.end(), 0.0);
    std::fill(m.dh.begin(), m.dh.end(), 0.0);
  }
  Visits v;
  make_visits(b, L, m.offs, v);
  const SitePass pass{m, v, L, C, b, h, scale, grad};
  run_parallel(m.pf, (size_t)L, [&](size_t i0, size_t i1) {
    std::vector<double> z((kSeqChunk + 1) * m.Cp);
    for (size_t i = i0; i < i1; ++i)
      m.site_loss[i] = pass.run((int)i, m.Gt.data() + i * L * m.rowlen, m.dh.data() + i * C, z);
  });
  double loss = 0.0;
  for (int i = 0; i < L; ++i) loss += m.site_loss[i];
  return loss;
}

// The weight of the scored tokens, N = Σ_μ w_μ · #{i : s_μi ≥ 0}.
static double scored_weight(const MsaBatch &b, int L) {
  double N = 0.0;
  for (size_t mu = 0; mu < b.M; ++mu) {
    size_t n = 0;
    for (int i = 0; i < L; ++i) n += b.tokens[mu * L + i] >= 0;
    N += (b.weights ? b.weights[mu] : 1.0) * (double)n;
  }
  return N;
}

double MsaModel::mean_nll(const double *theta, const MsaBatch &b) {
  Impl &m = *impl_;
  const double N = scored_weight(b, L_);
  if (!(N > 0)) return NAN;
  build_couplings(m, kind_, L_, C_, H_, theta + fields_size(), symmetric_, logit_scale_);
  make_offsets(b, L_, C_, m.Cp, m.rowlen, m.offs);
  return all_sites(m, L_, C_, b, fields_ ? theta : nullptr, 1.0 / N, false) / N;
}

// Σ_{i≠j} ‖J_ij‖² over the real colours (the padding and the missing row are zero).
static double couplings_norm2(const MsaModel::Impl &m) {
  double s = 0.0;
  for (double x : m.Jt) s += x * x;
  return s;
}

// Gradient of the coupling part: Gt (+ λ_e J / N) → θ's coupling entries.
static void contract_gradient(MsaModel::Impl &m, MsaKind kind, int L, int C, int H, bool sym, double ls,
                              double lam, double *g) {
  const size_t LL = (size_t)L * L;
  for (int i = 0; i < L; ++i) std::fill_n(m.Gt.data() + ((size_t)i * L + i) * m.rowlen, m.rowlen, 0.0);
  cblas_daxpy((int)m.Gt.size(), lam, m.Jt.data(), 1, m.Gt.data(), 1);
  if (sym) symmetrise_blocks(m.Gt, L, C, m.Cp, m.rowlen);  // the symmetrisation is its own adjoint
  if (kind == MsaKind::Potts) {
    double *e = g;
    for (int i = 0; i < L; ++i)
      for (int j = i + 1; j < L; ++j, e += (size_t)C * C) {
        const double *ij = m.Gt.data() + ((size_t)i * L + j) * m.rowlen;
        const double *ji = m.Gt.data() + ((size_t)j * L + i) * m.rowlen;
        for (int a = 0; a < C; ++a)
          for (int b = 0; b < C; ++b) e[(size_t)a * C + b] = ij[(size_t)b * m.Cp + a] + ji[(size_t)a * m.Cp + b];
      }
    return;
  }
  // dA = Vt · Gtᵀ (H×L²), dVt = Am · Gt (H×rowlen); then dW through each row's softmax.
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, H, (int)LL, (int)m.rowlen, 1.0, m.Vt.data(), (int)m.rowlen,
              m.Gt.data(), (int)m.rowlen, 0.0, m.dAm.data(), (int)LL);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, H, (int)m.rowlen, (int)LL, 1.0, m.Am.data(), (int)LL,
              m.Gt.data(), (int)m.rowlen, 0.0, m.dVt.data(), (int)m.rowlen);
  for (int h = 0; h < H; ++h) {
    double *dW = g + (size_t)h * LL;
    const double *A = m.Am.data() + (size_t)h * LL, *dA = m.dAm.data() + (size_t)h * LL;
    for (int i = 0; i < L; ++i) {
      double dot = 0.0;
      for (int j = 0; j < L; ++j) dot += A[(size_t)i * L + j] * dA[(size_t)i * L + j];
      for (int j = 0; j < L; ++j) {
        const size_t k = (size_t)i * L + j;
        dW[k] = j == i ? 0.0 : ls * A[k] * (dA[k] - dot);
      }
    }
    double *dV = g + (size_t)H * LL + (size_t)h * C * C;
    const double *dvt = m.dVt.data() + (size_t)h * m.rowlen;
    for (int a = 0; a < C; ++a)
      for (int b = 0; b < C; ++b) dV[(size_t)a * C + b] = dvt[(size_t)b * m.Cp + a];
  }
}

double MsaModel::objective(const double *theta, const MsaBatch &b, double lambda_h, double lambda_e, double *grad) {
  Impl &m = *impl_;
  const double N = scored_weight(b, L_);
  if (!(N > 0)) return NAN;
  const double *h = fields_ ? theta : nullptr;
  build_couplings(m, kind_, L_, C_, H_, theta + fields_size(), symmetric_, logit_scale_);
  make_offsets(b, L_, C_, m.Cp, m.rowlen, m.offs);
  double f = all_sites(m, L_, C_, b, h, 1.0 / N, grad != nullptr);
  f += 0.5 * lambda_e * couplings_norm2(m);
  const size_t nh = fields_size();
  for (size_t k = 0; k < nh; ++k) f += lambda_h * h[k] * h[k];
  if (grad) {
    for (size_t k = 0; k < nh; ++k) grad[k] = m.dh[k] + 2.0 * lambda_h * h[k] / N;
    contract_gradient(m, kind_, L_, C_, H_, symmetric_, logit_scale_, lambda_e / N, grad + nh);
  }
  return f / N;
}

void MsaModel::couplings(const double *theta, double *J) const {
  Impl &m = *impl_;
  build_couplings(m, kind_, L_, C_, H_, theta + fields_size(), symmetric_, logit_scale_);
  for (size_t ij = 0; ij < (size_t)L_ * L_; ++ij)
    for (int a = 0; a < C_; ++a)
      for (int b = 0; b < C_; ++b) J[(ij * C_ + a) * C_ + b] = m.Jt[ij * m.rowlen + (size_t)b * m.Cp + a];
}

void MsaModel::attention(const double *theta, double *A) const {
  const size_t LL = (size_t)L_ * L_;
  for (int h = 0; h < H_; ++h) row_softmax(theta + fields_size() + (size_t)h * LL, L_, logit_scale_, A + (size_t)h * LL);
}

void MsaModel::init(double *theta, const MsaBatch &b, const am_rng &rng, double init_scale) const {
  std::fill(theta, theta + n_params(), 0.0);
  if (fields_) {
    // plmc's start: log(f_i(a)·Neff + 1) with f_i the weighted frequencies among the site's present tokens.
    double neff = 0.0;
    for (size_t mu = 0; mu < b.M; ++mu) neff += b.weights ? b.weights[mu] : 1.0;
    for (int i = 0; i < L_; ++i) {
      std::vector<double> f(C_, 0.0);
      double tot = 0.0;
      for (size_t mu = 0; mu < b.M; ++mu) {
        const int32_t t = b.tokens[mu * L_ + i];
        if (t < 0) continue;
        const double w = b.weights ? b.weights[mu] : 1.0;
        f[t] += w;
        tot += w;
      }
      double *h = theta + (size_t)i * C_, mean = 0.0;
      for (int a = 0; a < C_; ++a) mean += (h[a] = std::log((tot > 0 ? f[a] / tot : 1.0 / C_) * neff + 1.0));
      for (int a = 0; a < C_; ++a) h[a] -= mean / C_;
    }
  }
  if (kind_ == MsaKind::Factored) {
    am_rng r = rng;
    double *V = theta + fields_size() + (size_t)H_ * L_ * L_;
    am_rng_fill_normal(&r, V, (size_t)H_ * C_ * C_);
    for (size_t k = 0; k < (size_t)H_ * C_ * C_; ++k) V[k] *= init_scale;
  }
}

namespace {

// Hamming distance between two rows of bytes.
size_t byte_distance(const uint8_t *x, const uint8_t *y, int L) {
  size_t d = 0;
  for (int n = 0; n < L; ++n) d += x[n] != y[n];
  return d;
}

// The nearest of the candidates cand[0..n) to row `cur` (ties: the lower sequence index), on the loop pf.
size_t nearest(const std::vector<uint8_t> &rows, int L, size_t cur, const std::vector<size_t> &cand, size_t n,
               const ParallelFor &pf) {
  constexpr size_t kParts = 8;  // fixed split: the answer cannot depend on the thread count
  size_t best_d[kParts], best_i[kParts];
  const auto part = [&](size_t p0, size_t p1) {
    for (size_t p = p0; p < p1; ++p) {
      best_d[p] = SIZE_MAX;
      best_i[p] = SIZE_MAX;
      for (size_t c = n * p / kParts; c < n * (p + 1) / kParts; ++c) {
        const size_t d = byte_distance(rows.data() + cur * L, rows.data() + cand[c] * L, L);
        if (d < best_d[p] || (d == best_d[p] && cand[c] < best_i[p])) best_d[p] = d, best_i[p] = cand[c];
        if (d == 0) break;  // a copy: the candidates go up in index, so none later in this part can beat it
      }
    }
  };
  if (n * (size_t)L > 65536) run_parallel(pf, kParts, part);  // threads only for work that pays for their start
  else part(0, kParts);
  size_t bd = SIZE_MAX, bi = SIZE_MAX;
  for (size_t p = 0; p < kParts; ++p)
    if (best_d[p] < bd || (best_d[p] == bd && best_i[p] < bi)) bd = best_d[p], bi = best_i[p];
  return bi;
}

}  // namespace

MsaPlan make_msa_plan(const int32_t *tokens, size_t M, int L, const ParallelFor &pf, size_t window,
                      const PlanProgress &progress) {
  MsaPlan plan;
  const auto t0 = std::chrono::steady_clock::now();
  auto last = t0;
  std::vector<uint8_t> rows(M * (size_t)L);
  for (size_t k = 0; k < rows.size(); ++k) rows[k] = (uint8_t)(tokens[k] < 0 ? 0 : 1 + (tokens[k] % 255));
  window = std::max<size_t>(window, 1);
  for (size_t w0 = 0; w0 < M; w0 += window) {
    const size_t w1 = std::min(M, w0 + window);
    std::vector<size_t> cand;
    for (size_t s = w0 + 1; s < w1; ++s) cand.push_back(s);
    size_t cur = w0;
    plan.order.push_back(cur);
    for (size_t n = cand.size(); n > 0; --n) {
      if (progress && (n & 63) == 0) {  // a report (and a chance to cancel) about every quarter of a second
        const auto now = std::chrono::steady_clock::now();
        if (now - last > std::chrono::milliseconds(250)) {
          last = now;
          if (progress(double(plan.order.size()), double(M))) return MsaPlan{};
        }
      }
      const size_t next = nearest(rows, L, cur, cand, n, pf);
      const size_t at = (size_t)(std::find(cand.begin(), cand.begin() + n, next) - cand.begin());
      cand.erase(cand.begin() + at);  // keeps the candidates in index order
      plan.order.push_back(cur = next);
    }
  }
  plan.diff_begin.assign(M + 1, 0);
  for (size_t k = 0; k < M; ++k) {
    plan.diff_begin[k] = plan.diff_site.size();
    if (k == 0) continue;
    const int32_t *a = tokens + plan.order[k - 1] * L, *b = tokens + plan.order[k] * L;
    for (int j = 0; j < L; ++j)
      if (a[j] != b[j]) plan.diff_site.push_back(j);
  }
  plan.diff_begin[M] = plan.diff_site.size();
  return plan;
}

}  // namespace am::msa
