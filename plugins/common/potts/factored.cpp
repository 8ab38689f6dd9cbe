// potts_core — factored attention loss and gradient through BLAS (see factored.h).
#include "factored.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "simd/vec.h"

namespace am::potts {

void attention_from_W(const double *W, int L, double *A) {
  for (int i = 0; i < L; ++i) {
    double mx = -INFINITY;
    for (int j = 0; j < L; ++j)
      if (j != i) mx = std::max(mx, W[i + (size_t)L * j]);
    double z = 0.0;
    for (int j = 0; j < L; ++j) {
      const double e = (j == i) ? 0.0 : std::exp(W[i + (size_t)L * j] - mx);
      A[i + (size_t)L * j] = e;
      z += e;
    }
    for (int j = 0; j < L; ++j) A[i + (size_t)L * j] /= z;
  }
}

struct FactoredModel::Work {
  std::vector<double> Yt, Zt, Ht, rowsum, dAt;
};

namespace {
// Automatic chunk: each work matrix [chunk·C × L] about 16k doubles (the three stay in the L2 cache), 8..256
// sequences (measured at L = C = 20, M = 3000, one thread: 6.5 ms per loss+gradient for 8..48 sequences, 8.4 ms
// for 163, 9.4 ms for 256).
size_t chunk_of(int L, int C, size_t chunk) {
  return chunk > 0 ? chunk : std::max<size_t>(8, std::min<size_t>(256, 16384 / ((size_t)C * L)));
}
// Reduction block: a whole number of chunks, ≥ 256 sequences.
size_t block_of(size_t chunk) { return chunk * ((256 + chunk - 1) / chunk); }
}  // namespace

double FactoredModel::work_bytes(int L, int C, int heads, size_t M, int workers, size_t chunk) {
  const double LL = (double)L * L, H = heads, ch = (double)chunk_of(L, C, chunk);
  const double nb = std::ceil((double)M / (double)block_of(chunk_of(L, C, chunk)));
  const double used = std::max(1.0, std::min<double>(std::max(1, workers), nb));  // concurrent Work objects
  const double work = H * ch * C * L + 2.0 * ch * C * L + ch * L + H * LL;      // Yt, Zt, Ht, rowsum, dAt
  return 8.0 * (3.0 * H * LL + used * work + nb * H * (LL + (double)C * C) + nb);  // A_, At_, dA_; part_, part_loss_
}

FactoredModel::FactoredModel(int L, int C, int heads, size_t chunk) : L_(L), C_(C), H_(heads), counts_(L > C) {
  chunk_ = chunk_of(L, C, chunk);
  block_ = block_of(chunk_);
  A_.resize((size_t)H_ * L_ * L_);
  At_.resize((size_t)H_ * L_ * L_);
  dA_.resize((size_t)H_ * L_ * L_);
}

FactoredModel::~FactoredModel() = default;

std::unique_ptr<FactoredModel::Work> FactoredModel::acquire() {
  {
    std::lock_guard<std::mutex> lk(pool_mu_);
    if (!pool_.empty()) {
      auto w = std::move(pool_.back());
      pool_.pop_back();
      return w;
    }
  }
  auto w = std::make_unique<Work>();
  w->Yt.resize((size_t)H_ * chunk_ * C_ * L_);
  w->Zt.resize(chunk_ * C_ * L_);
  w->Ht.resize(chunk_ * C_ * L_);
  w->rowsum.resize(chunk_ * L_);
  w->dAt.resize((size_t)H_ * L_ * L_);
  return w;
}

void FactoredModel::release(std::unique_ptr<Work> w) {
  std::lock_guard<std::mutex> lk(pool_mu_);
  pool_.push_back(std::move(w));
}

// Builds Yt^h [B·C × L] (Yt[(μC + a), j] = V^h[a, s^μ_j], column-major, ld = B·C) and
// Zt = Σ_h Yt^h A^hᵀ ([B·C × L]: Zt[(μC + a), i] = z^μ_i(a)). A_ must hold the attention matrices.
void FactoredModel::forward_chunk(Work &w, const double *theta, const int32_t *tokens, size_t B) const {
  const size_t BC = B * C_;
  for (int h = 0; h < H_; ++h) {
    double *Yt = w.Yt.data() + (size_t)h * chunk_ * C_ * L_;
    const double *Vh = V(theta, h);
    for (int j = 0; j < L_; ++j) {
      double *col = Yt + BC * j;
      for (size_t mu = 0; mu < B; ++mu)
        std::memcpy(col + mu * C_, Vh + (size_t)C_ * tokens[mu * L_ + j], sizeof(double) * C_);
    }
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)BC, L_, L_, 1.0, Yt, (int)BC,
                A_.data() + (size_t)h * L_ * L_, L_, h == 0 ? 0.0 : 1.0, w.Zt.data(), (int)BC);
  }
}

void FactoredModel::logits(const double *theta, const int32_t *tokens, size_t M, double *z) {
  for (int h = 0; h < H_; ++h) attention_from_W(W(theta, h), L_, A_.data() + (size_t)h * L_ * L_);
  auto w = acquire();
  for (size_t m0 = 0; m0 < M; m0 += chunk_) {
    const size_t B = std::min(chunk_, M - m0), BC = B * C_;
    forward_chunk(*w, theta, tokens + m0 * L_, B);
    for (size_t mu = 0; mu < B; ++mu)
      for (int i = 0; i < L_; ++i)
        for (int a = 0; a < C_; ++a) z[((m0 + mu) * L_ + i) * C_ + a] = w->Zt[mu * C_ + a + BC * i];
  }
  release(std::move(w));
}

double FactoredModel::block(Work &w, const double *theta, const int32_t *tokens, size_t m0, size_t m1, double scale,
                            double *dA, double *dV) const {
  const size_t LL = (size_t)L_ * L_, CC = (size_t)C_ * C_;
  double total = 0.0;
  if (dV) std::fill(dV, dV + (size_t)H_ * CC, 0.0);
  for (size_t c0 = m0; c0 < m1; c0 += chunk_) {
    const size_t B = std::min(chunk_, m1 - c0), BC = B * C_;
    const int32_t *tok = tokens + c0 * L_;
    forward_chunk(w, theta, tok, B);
    // cross-entropy per (μ, i): shift each row of C logits by its maximum, one vectorised exp over the column,
    // then the row sums; Zt becomes Gt = (softmax − onehot)·scale
    double part = 0.0;
    for (int i = 0; i < L_; ++i) xent_rows(w, w.Zt.data() + BC * i, B, tok + i, L_, scale, dA != nullptr, &part);
    total += part;
    if (!dA) continue;
    for (int h = 0; h < H_; ++h) {
      const double *Yt = w.Yt.data() + (size_t)h * chunk_ * C_ * L_;
      const double *Ah = A_.data() + (size_t)h * LL;
      // dA^h += Gtᵀ Yt^h
      cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, L_, L_, (int)BC, 1.0, w.Zt.data(), (int)BC, Yt, (int)BC,
                  c0 == m0 ? 0.0 : 1.0, dA + (size_t)h * LL, L_);
      // Ht = Gt A^h ; dV^h[:, s_j] += Ht[(μC + :), j]
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)BC, L_, L_, 1.0, w.Zt.data(), (int)BC, Ah, L_, 0.0,
                  w.Ht.data(), (int)BC);
      double *dVh = dV + (size_t)h * CC;
      for (int j = 0; j < L_; ++j) {
        const double *hc = w.Ht.data() + BC * j;
        for (size_t mu = 0; mu < B; ++mu) {
          double *dst = dVh + (size_t)C_ * tok[mu * L_ + j];
          const double *src = hc + mu * C_;
          for (int a = 0; a < C_; ++a) dst[a] += src[a];
        }
      }
    }
  }
  return total;
}

void FactoredModel::xent_rows(Work &w, double *z, size_t R, const int32_t *tok, size_t tok_stride, double scale,
                              bool grad, double *part_io) const {
  const simd::Kernels &k = simd::kernels();
  double part = *part_io;
  for (size_t r = 0; r < R; ++r) {
    double *zr = z + r * C_;
    double m = zr[0];
    for (int a = 1; a < C_; ++a) m = std::max(m, zr[a]);
    part -= zr[tok[r * tok_stride]] - m;
    for (int a = 0; a < C_; ++a) zr[a] -= m;
  }
  k.exp_inplace(z, R * C_);
  double *se = w.rowsum.data();
  for (size_t r = 0; r < R; ++r) {
    double *zr = z + r * C_;
    double t = 0.0;
    for (int a = 0; a < C_; ++a) t += zr[a];
    se[r] = t;
    if (grad) {
      const double inv = scale / t;
      for (int a = 0; a < C_; ++a) zr[a] *= inv;
      zr[tok[r * tok_stride]] -= scale;
    }
  }
  k.log_inplace(se, R);
  for (size_t r = 0; r < R; ++r) part += se[r];
  *part_io = part;
}

double FactoredModel::block_counts(Work &w, const double *theta, const int32_t *tokens, size_t m0, size_t m1,
                                   double scale, double *dA, double *dV) const {
  const size_t LL = (size_t)L_ * L_, CC = (size_t)C_ * C_;
  double total = 0.0;
  if (dV) {
    std::fill(dV, dV + (size_t)H_ * CC, 0.0);
    std::fill(w.dAt.begin(), w.dAt.end(), 0.0);
  }
  for (size_t c0 = m0; c0 < m1; c0 += chunk_) {
    const size_t B = std::min(chunk_, m1 - c0), R = B * L_;
    const int32_t *tok = tokens + c0 * L_;
    // Nt^h [C × R] (column r = (μ, i): the colour counts of row i of A^h over sequence μ); Zt = Σ_h V^h Nt^h
    for (int h = 0; h < H_; ++h) {
      double *Nt = w.Yt.data() + (size_t)h * chunk_ * C_ * L_;
      std::fill(Nt, Nt + R * C_, 0.0);
      const double *At = At_.data() + (size_t)h * LL;
      for (size_t mu = 0; mu < B; ++mu) {
        const int32_t *s = tok + mu * L_;
        for (int i = 0; i < L_; ++i) {
          double *n = Nt + C_ * (mu * L_ + i);
          const double *ai = At + (size_t)L_ * i;  // A_ii = 0: the site's own colour gets nothing
          for (int j = 0; j < L_; ++j) n[s[j]] += ai[j];
        }
      }
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, C_, (int)R, C_, 1.0, V(theta, h), C_, Nt, C_,
                  h == 0 ? 0.0 : 1.0, w.Zt.data(), C_);
    }
    double part = 0.0;
    xent_rows(w, w.Zt.data(), R, tok, 1, scale, dA != nullptr, &part);
    total += part;
    if (!dA) continue;
    for (int h = 0; h < H_; ++h) {
      const double *Nt = w.Yt.data() + (size_t)h * chunk_ * C_ * L_;
      // dV^h += G Ntᵀ ; dNt = V^hᵀ G ; dA^h_ij += Σ_μ dNt[s^μ_j, (μ, i)]
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, C_, C_, (int)R, 1.0, w.Zt.data(), C_, Nt, C_, 1.0,
                  dV + (size_t)h * CC, C_);
      cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, C_, (int)R, C_, 1.0, V(theta, h), C_, w.Zt.data(), C_, 0.0,
                  w.Ht.data(), C_);
      double *dAt = w.dAt.data() + (size_t)h * LL;
      for (size_t mu = 0; mu < B; ++mu) {
        const int32_t *s = tok + mu * L_;
        for (int i = 0; i < L_; ++i) {
          const double *g = w.Ht.data() + C_ * (mu * L_ + i);
          double *d = dAt + (size_t)L_ * i;
          for (int j = 0; j < L_; ++j) d[j] += g[s[j]];
        }
      }
    }
  }
  if (dA)
    for (int h = 0; h < H_; ++h)  // row-major → column-major
      for (int i = 0; i < L_; ++i)
        for (int j = 0; j < L_; ++j) dA[(size_t)h * LL + i + (size_t)L_ * j] = w.dAt[(size_t)h * LL + (size_t)L_ * i + j];
  return total;
}

double FactoredModel::loss(const double *theta, const int32_t *tokens, size_t M, double *grad, double l2) {
  const size_t LL = (size_t)L_ * L_, CC = (size_t)C_ * C_, per = (size_t)H_ * (LL + CC);
  for (int h = 0; h < H_; ++h) {
    attention_from_W(W(theta, h), L_, A_.data() + (size_t)h * LL);
    for (int i = 0; i < L_; ++i)
      for (int j = 0; j < L_; ++j) At_[(size_t)h * LL + (size_t)L_ * i + j] = A_[(size_t)h * LL + i + (size_t)L_ * j];
  }
  const double scale = 1.0 / ((double)M * L_);
  const size_t nb = (M + block_ - 1) / block_;
  part_loss_.assign(nb, 0.0);
  if (grad) part_.resize(nb * per);
  auto run = [&](size_t b0, size_t b1) {
    auto w = acquire();
    for (size_t b = b0; b < b1; ++b) {
      double *pa = grad ? part_.data() + b * per : nullptr;
      const size_t m0 = b * block_, m1 = std::min(M, (b + 1) * block_);
      double *pv = pa ? pa + (size_t)H_ * LL : nullptr;
      part_loss_[b] = counts_ ? block_counts(*w, theta, tokens, m0, m1, scale, pa, pv)
                              : block(*w, theta, tokens, m0, m1, scale, pa, pv);
    }
    release(std::move(w));
  };
  if (pf_ && nb > 1)
    pf_(nb, [&](size_t b0, size_t b1, int) { run(b0, b1); });
  else
    run(0, nb);
  double total = 0.0;  // partial sums added in block order: independent of the split of the loop
  for (size_t b = 0; b < nb; ++b) total += part_loss_[b];
  double f = total * scale;
  if (grad) {
    std::fill(dA_.begin(), dA_.end(), 0.0);
    std::fill(grad, grad + n_params(), 0.0);
    for (size_t b = 0; b < nb; ++b) {
      const double *pa = part_.data() + b * per;
      for (size_t t = 0; t < (size_t)H_ * LL; ++t) dA_[t] += pa[t];
      double *gv = V(grad, 0);
      const double *pv = pa + (size_t)H_ * LL;
      for (size_t t = 0; t < (size_t)H_ * CC; ++t) gv[t] += pv[t];
    }
    for (int h = 0; h < H_; ++h) {
      const double *Ah = A_.data() + (size_t)h * LL, *dA = dA_.data() + (size_t)h * LL;
      double *dW = W(grad, h);
      for (int i = 0; i < L_; ++i) {
        double t = 0.0;
        for (int k = 0; k < L_; ++k) t += Ah[i + (size_t)L_ * k] * dA[i + (size_t)L_ * k];
        for (int j = 0; j < L_; ++j)
          dW[i + (size_t)L_ * j] = (j == i) ? 0.0 : Ah[i + (size_t)L_ * j] * (dA[i + (size_t)L_ * j] - t);
      }
    }
  }
  if (l2 > 0.0) {
    double r = 0.0;
    for (int h = 0; h < H_; ++h) {
      const double *Wh = W(theta, h);
      for (int i = 0; i < L_; ++i)
        for (int j = 0; j < L_; ++j)
          if (i != j) {
            const double w = Wh[i + (size_t)L_ * j];
            r += w * w;
            if (grad) W(grad, h)[i + (size_t)L_ * j] += l2 * w;
          }
      const double *Vh = V(theta, h);
      for (size_t k = 0; k < (size_t)C_ * C_; ++k) {
        r += Vh[k] * Vh[k];
        if (grad) V(grad, h)[k] += l2 * Vh[k];
      }
    }
    f += 0.5 * l2 * r;
  }
  return f;
}

}  // namespace am::potts
