// msa_core — the alignment pseudo-likelihood of msa_model.h.
//
// Layout: the couplings of a site i are kept as Jt[i][j][b][a] — for context site j, one row of Cp doubles per
// colour b of site j (a = the colour of site i, padded from C to Cp, a multiple of the vector width). Row b = C is
// all zeros: a missing token points there, so the conditionals need no branch. Site i's conditional logits for
// sequence μ are then h_i + Σ_j Jt[i][j][s_μj] (one row gather per j) and the coupling gradient is the transpose
// (one row scatter per j) into Gt with the same layout.
// Potts: the whole tables Jt, Gt (L·L·rowlen each); each worker owns whole sites, the per-site losses are added in
// site order.
// Factored (block-streamed, never the whole table): per block of sites I,
// Jt_I[(i, j)][(b, a)] = Σ_k Ac^k_ij Vc^k[(b, a)] (one (|I|·L × K) by (K × rowlen) dgemm), the block's
// conditionals and residuals Gt_I, then dAc[:, I] = Vc Gt_Iᵀ and dVc += Ac[:, I] Gt_I (two more dgemms) — Jt_I
// and Gt_I stay in the cache, the model holds O(H·(L² + C²)).
// K = H heads (Ac^h = A^h, Vc^h = Vt^h), or 2H with the symmetric couplings (J_ij(a,b) + J_ji(b,a))/2: the heads
// A^h with Vt^h/2 and A^hᵀ with Vt^hᵀ/2. Blocks are dealt to a fixed number of groups (each a contiguous run of
// blocks with its own dVc partial, added in group order): the same bits for every thread count.
#include "msa_model.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>

#include "simd/vec.h"

namespace am::msa {

namespace simd = potts::simd;  // the vector kernels the Potts code shares
using potts::run_parallel;

namespace {
constexpr size_t kSeqChunk = 1024;  // sequences per gather/scatter pass: each pass keeps one site's rows in L2
}

// Sites per block of the factored pass and the number of groups the blocks are dealt to (fixed: the groups, not
// the workers, own the dVc partials, so the sums do not depend on the thread count).
// Jt_I + Gt_I of a block within about one core's L2 (1 MB on the 2-core test machine). Measured at DHFR's size
// (bench_msa_loss --site-block): 1, 2 and 4 sites per block within 3 % of each other; the dgemms are near their
// rate from one site (L rows) on, and the gathers, not the block, set the time.
constexpr size_t kBlockBytes = size_t(1) << 20;
constexpr size_t kGroups = 32;

struct MsaModel::Impl {
  size_t Cp = 0, rowlen = 0;    // padded colours; doubles of one (i, j) block = (C + 1)·Cp
  ParallelFor pf;
  std::vector<double> Jt, Gt;   // Potts: L·L·rowlen each
  size_t K = 0;                 // factored: the heads of the product (H, or 2H symmetric)
  size_t site_block = 0;        // factored: sites per block (0 = automatic, block_sites)
  std::vector<double> Ac, dAc;  // factored: K × L² row-major, Ac[k·L² + i·L + j] (and its gradient)
  std::vector<double> Vc;       // K × rowlen row-major
  std::vector<double> dVc;      // kGroups × K × rowlen: each group's partial of dVc
  std::vector<int> offs;        // M·L row offsets of the batch (j·rowlen + b·Cp)
  std::vector<double> site_loss, site_norm, dh;
};

namespace {
// Doubles per padded colour row (C rounded up to the vector width) and per (i, j) block: (C + 1)·Cp.
size_t padded_colours(int C) {
  const size_t W = simd::kernels().width;
  return (size_t)C + (W - (size_t)C % W) % W;
}
// Sites per block: Jt_I and Gt_I (2·|I|·L·rowlen doubles) within kBlockBytes, at least one site.
size_t block_sites(int L, size_t rowlen, size_t forced) {
  if (forced > 0) return std::min(forced, (size_t)std::max(L, 1));
  return std::max<size_t>(1, kBlockBytes / (2 * 8 * (size_t)std::max(L, 1) * rowlen));
}
size_t groups_of(int L, size_t B) { return std::min(kGroups, ((size_t)L + B - 1) / B); }
}  // namespace

double MsaModel::work_bytes(MsaKind kind, int L, int C, int heads, size_t M_max, bool symmetric) {
  const double LL = (double)L * L, rowlen = ((double)C + 1) * (double)padded_colours(C);
  double doubles = 2.0 * L + (double)L * C;  // site_loss, site_norm, dh
  if (kind == MsaKind::Potts) doubles += 2.0 * LL * rowlen;  // Jt, Gt
  if (kind == MsaKind::Factored) {
    const double K = (symmetric ? 2.0 : 1.0) * heads;
    const double G = (double)groups_of(L, block_sites(L, (size_t)rowlen, 0));
    doubles += 2.0 * K * LL + K * rowlen + G * K * rowlen;  // Ac, dAc, Vc, dVc
  }
  return 8.0 * doubles + 4.0 * (double)M_max * L;  // + offs (int per token)
}

double MsaModel::call_bytes(MsaKind kind, int L, int C, size_t M, double D, int workers) {
  // Visits: order and begin (size_t per visit), from and to (int per changed site); per worker: z (kSeqChunk + 1
  // rows) and, factored, the block's Jt_I and Gt_I.
  const size_t Cp = padded_colours(C), rowlen = ((size_t)C + 1) * Cp;
  double per = (double)(kSeqChunk + 1) * (double)Cp;
  if (kind == MsaKind::Factored) per += 2.0 * (double)block_sites(L, rowlen, 0) * L * (double)rowlen;
  return 16.0 * (double)M + 8.0 * D + 8.0 * per * std::max(1, workers);
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
  if (kind_ == MsaKind::Potts) {
    m.Jt.assign(LL * m.rowlen, 0.0);
    m.Gt.assign(LL * m.rowlen, 0.0);
  }
  m.site_loss.assign(L, 0.0);
  m.site_norm.assign(L, 0.0);
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
void MsaModel::set_site_block(size_t sites) { impl_->site_block = sites; }
size_t MsaModel::site_block() const { return block_sites(L_, impl_->rowlen, impl_->site_block); }

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

// The C×C part of a padded block (rows b, lanes a) transposed: dst[b·Cp + a] = f·src[a·Cp + b].
void transpose_block(const double *src, int C, size_t Cp, double f, double *dst) {
  for (int b = 0; b < C; ++b)
    for (int a = 0; a < C; ++a) dst[(size_t)b * Cp + a] = f * src[(size_t)a * Cp + b];
}

}  // namespace

// Factored: the product's heads Ac (A^h, and A^hᵀ when symmetric) and values Vc (Vt^h[b][a] = V^h_ab, halved and
// with its transpose when symmetric); the missing row and the padding stay 0.
static void build_heads(MsaModel::Impl &m, int L, int C, int H, const double *coup, bool sym, double ls) {
  const size_t LL = (size_t)L * L;
  m.K = (size_t)H * (sym ? 2 : 1);
  m.Ac.resize(m.K * LL);
  m.Vc.assign(m.K * m.rowlen, 0.0);
  const double f = sym ? 0.5 : 1.0;
  run_parallel(m.pf, (size_t)H, [&](size_t h0, size_t h1) {  // heads are independent: the same bits on any split
    for (size_t h = h0; h < h1; ++h) {
      double *A = m.Ac.data() + (size_t)h * LL;
      row_softmax(coup + (size_t)h * LL, L, ls, A);
      const double *V = coup + (size_t)H * LL + (size_t)h * C * C;
      double *vt = m.Vc.data() + (size_t)h * m.rowlen;
      for (int b = 0; b < C; ++b)
        for (int a = 0; a < C; ++a) vt[(size_t)b * m.Cp + a] = f * V[(size_t)a * C + b];
      if (!sym) continue;
      double *At = m.Ac.data() + (size_t)(H + h) * LL;
      for (int i = 0; i < L; ++i)
        for (int j = 0; j < L; ++j) At[(size_t)i * L + j] = A[(size_t)j * L + i];
      transpose_block(vt, C, m.Cp, 1.0, m.Vc.data() + (size_t)(H + h) * m.rowlen);
    }
  });
}

// Factored: Jt_I of the sites [i0, i1) (|I|·L rows of rowlen) = Ac[:, I]ᵀ Vc.
static void block_couplings(const MsaModel::Impl &m, int L, size_t i0, size_t i1, double *JtI) {
  const size_t LL = (size_t)L * L;
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)((i1 - i0) * L), (int)m.rowlen, (int)m.K, 1.0,
              m.Ac.data() + i0 * L, (int)LL, m.Vc.data(), (int)m.rowlen, 0.0, JtI, (int)m.rowlen);
}

// Potts: Jt from e_ij and its transpose into both blocks.
static void build_couplings(MsaModel::Impl &m, int L, int C, const double *coup) {
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

  double run(int i, const double *Jt_i, double *Gt_i, double *dh_i, std::vector<double> &z) const {
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

// Potts: the pass over all sites (each worker owns whole sites); returns −Σ w log p (sites added in order).
static double all_sites(MsaModel::Impl &m, int L, const SitePass &pass) {
  if (pass.grad) std::fill(m.Gt.begin(), m.Gt.end(), 0.0);
  run_parallel(m.pf, (size_t)L, [&](size_t i0, size_t i1) {
    std::vector<double> z((kSeqChunk + 1) * m.Cp);
    for (size_t i = i0; i < i1; ++i)
      m.site_loss[i] = pass.run((int)i, m.Jt.data() + i * L * m.rowlen, m.Gt.data() + i * L * m.rowlen,
                                m.dh.data() + i * pass.C, z);
  });
  double loss = 0.0;
  for (int i = 0; i < L; ++i) loss += m.site_loss[i];
  return loss;
}

// Factored: one block of sites [i0, i1) with the scratch JtI, GtI: the couplings, each site's loss and ‖J_i·‖²
// (site_loss, site_norm); with grad (lam = λ_e/N: the penalty's gradient is lam·J) dAc[:, I] and the group's
// partial dVg (first: overwritten, else added to).
static void factored_block(MsaModel::Impl &m, int L, const SitePass &pass, double lam, size_t i0, size_t i1,
                           double *JtI, double *GtI, double *dVg, bool first, std::vector<double> &z) {
  const size_t LL = (size_t)L * L, n = (i1 - i0) * L * m.rowlen, site = (size_t)L * m.rowlen;
  block_couplings(m, L, i0, i1, JtI);
  if (pass.grad) std::fill(GtI, GtI + n, 0.0);
  for (size_t i = i0; i < i1; ++i) {
    const double *J = JtI + (i - i0) * site;
    double s = 0.0;
    for (size_t k = 0; k < site; ++k) s += J[k] * J[k];
    m.site_norm[i] = s;
    m.site_loss[i] = pass.run((int)i, J, GtI + (i - i0) * site, m.dh.data() + i * pass.C, z);
  }
  if (!pass.grad) return;
  for (size_t i = i0; i < i1; ++i) std::fill_n(GtI + (i - i0) * site + i * m.rowlen, m.rowlen, 0.0);  // J_ii ≡ 0
  cblas_daxpy((int)n, lam, JtI, 1, GtI, 1);
  const int K = (int)m.K, R = (int)((i1 - i0) * L);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, K, R, (int)m.rowlen, 1.0, m.Vc.data(), (int)m.rowlen, GtI,
              (int)m.rowlen, 0.0, m.dAc.data() + i0 * L, (int)LL);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, (int)m.rowlen, R, 1.0, m.Ac.data() + i0 * L, (int)LL,
              GtI, (int)m.rowlen, first ? 0.0 : 1.0, dVg, (int)m.rowlen);
}

// Factored: every block, dealt to groups of consecutive blocks on the host's loop (each worker its own scratch);
// returns −Σ w log p, and ‖J‖² into *norm2 (both added in site order).
static double factored_sites(MsaModel::Impl &m, int L, const SitePass &pass, double lam, double *norm2) {
  const size_t B = block_sites(L, m.rowlen, m.site_block), nb = ((size_t)L + B - 1) / B, G = groups_of(L, B);
  if (pass.grad) {
    m.dAc.resize(m.K * (size_t)L * L);
    m.dVc.resize(G * m.K * m.rowlen);
  }
  run_parallel(m.pf, G, [&](size_t g0, size_t g1) {
    std::vector<double> z((kSeqChunk + 1) * m.Cp), JtI(B * L * m.rowlen), GtI(pass.grad ? JtI.size() : 0);
    for (size_t g = g0; g < g1; ++g)
      for (size_t blk = nb * g / G; blk < nb * (g + 1) / G; ++blk)
        factored_block(m, L, pass, lam, blk * B, std::min((size_t)L, (blk + 1) * B), JtI.data(), GtI.data(),
                       pass.grad ? m.dVc.data() + g * m.K * m.rowlen : nullptr, blk == nb * g / G, z);
  });
  double loss = 0.0, s = 0.0;
  for (int i = 0; i < L; ++i) loss += m.site_loss[i], s += m.site_norm[i];
  *norm2 = s;
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

// Potts: the gradient of the coupling part, Gt (+ lam·J, lam = λ_e/N) → θ's e_ij.
static void potts_gradient(MsaModel::Impl &m, int L, int C, double lam, double *g) {
  for (int i = 0; i < L; ++i) std::fill_n(m.Gt.data() + ((size_t)i * L + i) * m.rowlen, m.rowlen, 0.0);
  cblas_daxpy((int)m.Gt.size(), lam, m.Jt.data(), 1, m.Gt.data(), 1);
  double *e = g;
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j < L; ++j, e += (size_t)C * C) {
      const double *ij = m.Gt.data() + ((size_t)i * L + j) * m.rowlen;
      const double *ji = m.Gt.data() + ((size_t)j * L + i) * m.rowlen;
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b) e[(size_t)a * C + b] = ij[(size_t)b * m.Cp + a] + ji[(size_t)a * m.Cp + b];
    }
}

// Factored: dAc and the groups' dVc partials (factored_sites) → θ's W (through each row's softmax) and V. With the
// symmetric couplings head H + h is A^hᵀ with Vt^hᵀ/2: its gradients come back transposed.
static void factored_gradient(MsaModel::Impl &m, int L, int C, int H, bool sym, double ls, double *g) {
  const size_t LL = (size_t)L * L, G = groups_of(L, block_sites(L, m.rowlen, m.site_block));
  std::vector<double> dv(m.K * m.rowlen, 0.0);
  // heads are independent (each entry's sum over the groups in group order): the same bits on any split
  run_parallel(m.pf, (size_t)H, [&](size_t h0, size_t h1) {
    std::vector<double> tv(sym ? m.rowlen : 0);
    for (size_t h = h0; h < h1; ++h) {
      for (size_t r : {h, (size_t)H + h}) {  // the groups' partials of head h's rows, in group order
        if (r >= m.K) continue;
        for (size_t p = 0; p < G; ++p)
          for (size_t k = r * m.rowlen; k < (r + 1) * m.rowlen; ++k) dv[k] += m.dVc[p * dv.size() + k];
      }
      double *dA = m.dAc.data() + (size_t)h * LL;
      const double *A = m.Ac.data() + (size_t)h * LL;
      double *dvt = dv.data() + (size_t)h * m.rowlen;
      if (sym) {
        const double *dAt = m.dAc.data() + (size_t)(H + h) * LL;
        for (int i = 0; i < L; ++i)
          for (int j = 0; j < L; ++j) dA[(size_t)i * L + j] += dAt[(size_t)j * L + i];
        transpose_block(dv.data() + (size_t)(H + h) * m.rowlen, C, m.Cp, 1.0, tv.data());
        for (int b = 0; b < C; ++b)
          for (int a = 0; a < C; ++a) {
            const size_t k = (size_t)b * m.Cp + a;
            dvt[k] = 0.5 * (dvt[k] + tv[k]);
          }
      }
      double *dW = g + (size_t)h * LL;
      for (int i = 0; i < L; ++i) {
        double dot = 0.0;
        for (int j = 0; j < L; ++j) dot += A[(size_t)i * L + j] * dA[(size_t)i * L + j];
        for (int j = 0; j < L; ++j) {
          const size_t k = (size_t)i * L + j;
          dW[k] = j == i ? 0.0 : ls * A[k] * (dA[k] - dot);
        }
      }
      double *dV = g + (size_t)H * LL + (size_t)h * C * C;
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b) dV[(size_t)a * C + b] = dvt[(size_t)b * m.Cp + a];
    }
  });
}

// −Σ w log p over the batch (and with grad the residuals into dh and the coupling gradient's work arrays), ‖J‖² into
// *norm2; lam = λ_e/N.
double MsaModel::pass(const double *theta, const MsaBatch &b, double N, double lam, bool grad, double *norm2) {
  Impl &m = *impl_;
  const double *coup = theta + fields_size();
  if (kind_ == MsaKind::Factored) build_heads(m, L_, C_, H_, coup, symmetric_, logit_scale_);
  else build_couplings(m, L_, C_, coup);
  make_offsets(b, L_, C_, m.Cp, m.rowlen, m.offs);
  if (grad) std::fill(m.dh.begin(), m.dh.end(), 0.0);
  Visits v;
  make_visits(b, L_, m.offs, v);
  const SitePass sp{m, v, L_, C_, b, fields_ ? theta : nullptr, 1.0 / N, grad};
  if (kind_ == MsaKind::Factored) return factored_sites(m, L_, sp, lam, norm2);
  double s = 0.0;
  for (double x : m.Jt) s += x * x;  // the padding and the missing row are zero
  *norm2 = s;
  return all_sites(m, L_, sp);
}

double MsaModel::mean_nll(const double *theta, const MsaBatch &b) {
  const double N = scored_weight(b, L_);
  if (!(N > 0)) return NAN;
  double norm2 = 0.0;
  return pass(theta, b, N, 0.0, false, &norm2) / N;
}

double MsaModel::objective(const double *theta, const MsaBatch &b, double lambda_h, double lambda_e, double *grad) {
  Impl &m = *impl_;
  const double N = scored_weight(b, L_);
  if (!(N > 0)) return NAN;
  const double *h = fields_ ? theta : nullptr;
  double norm2 = 0.0;
  double f = pass(theta, b, N, lambda_e / N, grad != nullptr, &norm2);
  f += 0.5 * lambda_e * norm2;
  const size_t nh = fields_size();
  for (size_t k = 0; k < nh; ++k) f += lambda_h * h[k] * h[k];
  if (grad) {
    for (size_t k = 0; k < nh; ++k) grad[k] = m.dh[k] + 2.0 * lambda_h * h[k] / N;
    if (kind_ == MsaKind::Factored) factored_gradient(m, L_, C_, H_, symmetric_, logit_scale_, grad + nh);
    else potts_gradient(m, L_, C_, lambda_e / N, grad + nh);
  }
  return f / N;
}

void MsaModel::couplings(const double *theta, double *J) const {
  Impl &m = *impl_;
  const size_t LL = (size_t)L_ * L_;
  auto put = [&](const double *Jt, size_t ij0, size_t ij1) {  // rows (i, j) of the padded layout → J
    for (size_t ij = ij0; ij < ij1; ++ij)
      for (int a = 0; a < C_; ++a)
        for (int b = 0; b < C_; ++b) J[(ij * C_ + a) * C_ + b] = Jt[(ij - ij0) * m.rowlen + (size_t)b * m.Cp + a];
  };
  if (kind_ == MsaKind::Potts) {
    build_couplings(m, L_, C_, theta + fields_size());
    put(m.Jt.data(), 0, LL);
    return;
  }
  build_heads(m, L_, C_, H_, theta + fields_size(), symmetric_, logit_scale_);
  std::vector<double> JtI((size_t)L_ * m.rowlen);
  for (size_t i = 0; i < (size_t)L_; ++i) {
    block_couplings(m, L_, i, i + 1, JtI.data());
    put(JtI.data(), i * L_, (i + 1) * L_);
  }
}

std::function<void(int, double *)> MsaModel::pair_rows(const double *theta) {
  Impl &m = *impl_;
  build_heads(m, L_, C_, H_, theta + fields_size(), symmetric_, logit_scale_);
  const size_t CC = (size_t)C_ * C_, H = (size_t)H_;
  auto Y = std::make_shared<std::vector<double>>(2 * H * CC);  // [V^h/2 ; V^hᵀ/2], rows of C² (a·C + b)
  const double *V = theta + fields_size() + H * L_ * L_;
  for (size_t h = 0; h < H; ++h)
    for (int a = 0; a < C_; ++a)
      for (int b = 0; b < C_; ++b) {
        (*Y)[h * CC + (size_t)a * C_ + b] = 0.5 * V[h * CC + (size_t)a * C_ + b];
        (*Y)[(H + h) * CC + (size_t)a * C_ + b] = 0.5 * V[h * CC + (size_t)b * C_ + a];
      }
  return [this, Y, H, CC](int i, double *out) {
    const Impl &mm = *impl_;
    const size_t L = (size_t)L_, LL = L * L, n = L - (size_t)i - 1;
    if (n == 0) return;
    std::vector<double> X(n * 2 * H);  // row j − i − 1: A^h_ij, then A^h_ji
    for (size_t j = i + 1; j < L; ++j)
      for (size_t h = 0; h < H; ++h) {
        X[(j - i - 1) * 2 * H + h] = mm.Ac[h * LL + (size_t)i * L + j];
        X[(j - i - 1) * 2 * H + H + h] = mm.Ac[h * LL + j * L + (size_t)i];
      }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)CC, (int)(2 * H), 1.0, X.data(), (int)(2 * H),
                Y->data(), (int)CC, 0.0, out, (int)CC);
  };
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
