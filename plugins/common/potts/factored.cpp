// potts_core — factored attention loss and gradient through BLAS (see factored.h).
#include "factored.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace potts {

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

FactoredModel::FactoredModel(int L, int C, int heads, size_t chunk) : L_(L), C_(C), H_(heads), chunk_(chunk) {
  A_.resize((size_t)H_ * L_ * L_);
  Yt_.resize((size_t)H_ * chunk_ * C_ * L_);
  Zt_.resize(chunk_ * C_ * L_);
  Ht_.resize(chunk_ * C_ * L_);
  dA_.resize((size_t)H_ * L_ * L_);
}

// Builds Yt^h [B·C × L] (Yt[(μC + a), j] = V^h[a, s^μ_j], column-major, ld = B·C) and
// Zt = Σ_h Yt^h A^hᵀ ([B·C × L]: Zt[(μC + a), i] = z^μ_i(a)). A_ must hold the attention matrices.
void FactoredModel::forward_chunk(const double *theta, const int32_t *tokens, size_t B) {
  const size_t BC = B * C_;
  for (int h = 0; h < H_; ++h) {
    double *Yt = Yt_.data() + (size_t)h * chunk_ * C_ * L_;
    const double *Vh = V(theta, h);
    for (int j = 0; j < L_; ++j) {
      double *col = Yt + BC * j;
      for (size_t mu = 0; mu < B; ++mu)
        std::memcpy(col + mu * C_, Vh + (size_t)C_ * tokens[mu * L_ + j], sizeof(double) * C_);
    }
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)BC, L_, L_, 1.0, Yt, (int)BC,
                A_.data() + (size_t)h * L_ * L_, L_, h == 0 ? 0.0 : 1.0, Zt_.data(), (int)BC);
  }
}

void FactoredModel::logits(const double *theta, const int32_t *tokens, size_t M, double *z) {
  for (int h = 0; h < H_; ++h) attention_from_W(W(theta, h), L_, A_.data() + (size_t)h * L_ * L_);
  for (size_t m0 = 0; m0 < M; m0 += chunk_) {
    const size_t B = std::min(chunk_, M - m0), BC = B * C_;
    forward_chunk(theta, tokens + m0 * L_, B);
    for (size_t mu = 0; mu < B; ++mu)
      for (int i = 0; i < L_; ++i)
        for (int a = 0; a < C_; ++a) z[((m0 + mu) * L_ + i) * C_ + a] = Zt_[mu * C_ + a + BC * i];
  }
}

double FactoredModel::loss(const double *theta, const int32_t *tokens, size_t M, double *grad, double l2) {
  const size_t LL = (size_t)L_ * L_;
  for (int h = 0; h < H_; ++h) attention_from_W(W(theta, h), L_, A_.data() + (size_t)h * LL);
  if (grad) {
    std::fill(grad, grad + n_params(), 0.0);
    std::fill(dA_.begin(), dA_.end(), 0.0);
  }
  const double scale = 1.0 / ((double)M * L_);
  double total = 0.0;
  std::vector<double> p(C_);
  for (size_t m0 = 0; m0 < M; m0 += chunk_) {
    const size_t B = std::min(chunk_, M - m0), BC = B * C_;
    const int32_t *tok = tokens + m0 * L_;
    forward_chunk(theta, tok, B);
    // cross-entropy per (μ, i); Zt becomes Gt = (softmax − onehot)/(M L)
    double part = 0.0;
    for (int i = 0; i < L_; ++i) {
      double *zc = Zt_.data() + BC * i;
      for (size_t mu = 0; mu < B; ++mu) {
        double *z = zc + mu * C_;
        double mx = z[0];
        for (int a = 1; a < C_; ++a) mx = std::max(mx, z[a]);
        double se = 0.0;
        for (int a = 0; a < C_; ++a) se += (p[a] = std::exp(z[a] - mx));
        const int s = tok[mu * L_ + i];
        part += mx + std::log(se) - z[s];
        if (grad) {
          const double inv = scale / se;
          for (int a = 0; a < C_; ++a) z[a] = p[a] * inv;
          z[s] -= scale;
        }
      }
    }
    total += part;
    if (!grad) continue;
    for (int h = 0; h < H_; ++h) {
      const double *Yt = Yt_.data() + (size_t)h * chunk_ * C_ * L_;
      const double *Ah = A_.data() + (size_t)h * LL;
      // dA^h += Gtᵀ Yt^h
      cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, L_, L_, (int)BC, 1.0, Zt_.data(), (int)BC, Yt, (int)BC,
                  1.0, dA_.data() + (size_t)h * LL, L_);
      // Ht = Gt A^h ; dV^h[:, s_j] += Ht[(μC + :), j]
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)BC, L_, L_, 1.0, Zt_.data(), (int)BC, Ah, L_, 0.0,
                  Ht_.data(), (int)BC);
      double *dV = V(grad, h);
      for (int j = 0; j < L_; ++j) {
        const double *hc = Ht_.data() + BC * j;
        for (size_t mu = 0; mu < B; ++mu) {
          double *dst = dV + (size_t)C_ * tok[mu * L_ + j];
          const double *src = hc + mu * C_;
          for (int a = 0; a < C_; ++a) dst[a] += src[a];
        }
      }
    }
  }
  double f = total * scale;
  if (grad) {
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

}  // namespace potts
