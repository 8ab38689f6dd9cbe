// potts_core — uncollapsed factored attention with perturbation a (see mixed.h).
#include "mixed.h"

#include <algorithm>
#include <cmath>

namespace am::potts {

MixedModel::MixedModel(int L, int C, int d, double a) : L_(L), C_(C), d_(d), a_(a) {
  oP_ = 0;
  oE_ = oP_ + (size_t)L * d;
  oQ_ = oE_ + (size_t)(C + 1) * d;
  oK_ = oQ_ + (size_t)d * d;
  oV_ = oK_ + (size_t)d * d;
  oO_ = oV_ + (size_t)d * d;
  off_end_ = oO_ + (size_t)C * d;
  const size_t LC = (size_t)L * C;
  q_.resize((size_t)L * d);
  qin_.resize((size_t)L * d);
  k_.resize(LC * d);
  kin_.resize(LC * d);
  v_.resize(LC * d);
  vin_.resize(LC * d);
  o_.resize(LC * C);
  T_.resize((size_t)L * LC);
  dT_.resize((size_t)L * LC);
  dO_.resize(LC * C);
}

void MixedModel::init(double *theta, am_rng *rng, double scale) const {
  am_rng_fill_normal(rng, theta, off_end_);
  for (size_t k = 0; k < off_end_; ++k) theta[k] *= scale;
}

// Row-major matrices: P[i*d + k], E[c*d + k], W_Q/W_K/W_V[r*d + k] (out r, in k), W_O[a*d + k].
static void matvec(const double *Wm, const double *x, int rows, int cols, double *y) {
  for (int r = 0; r < rows; ++r) {
    double s = 0.0;
    for (int k = 0; k < cols; ++k) s += Wm[(size_t)r * cols + k] * x[k];
    y[r] = s;
  }
}

void MixedModel::tables(const double *theta) {
  const int L = L_, C = C_, d = d_;
  const double *P = theta + oP_, *E = theta + oE_, *WQ = theta + oQ_, *WK = theta + oK_, *WV = theta + oV_,
               *WO = theta + oO_;
  for (int i = 0; i < L; ++i) {
    for (int k = 0; k < d; ++k) qin_[(size_t)i * d + k] = P[(size_t)i * d + k] + a_ * E[(size_t)C * d + k];
    matvec(WQ, &qin_[(size_t)i * d], d, d, &q_[(size_t)i * d]);
  }
  for (int j = 0; j < L; ++j)
    for (int c = 0; c < C; ++c) {
      const size_t r = (size_t)j * C + c;
      for (int k = 0; k < d; ++k) {
        kin_[r * d + k] = P[(size_t)j * d + k] + a_ * E[(size_t)c * d + k];
        vin_[r * d + k] = E[(size_t)c * d + k] + a_ * P[(size_t)j * d + k];
      }
      matvec(WK, &kin_[r * d], d, d, &k_[r * d]);
      matvec(WV, &vin_[r * d], d, d, &v_[r * d]);
      matvec(WO, &v_[r * d], C, d, &o_[r * C]);
    }
  const size_t LC = (size_t)L * C;
  for (int i = 0; i < L; ++i)
    for (size_t r = 0; r < LC; ++r) {
      double s = 0.0;
      for (int k = 0; k < d; ++k) s += q_[(size_t)i * d + k] * k_[r * d + k];
      T_[(size_t)i * LC + r] = s;
    }
}

void MixedModel::collapsed(const double *theta, double *W, double *V) const {
  MixedModel tmp(*this);
  tmp.a_ = 0.0;
  tmp.tables(theta);
  const size_t LC = (size_t)L_ * C_;
  for (int i = 0; i < L_; ++i)
    for (int j = 0; j < L_; ++j) W[i + (size_t)L_ * j] = tmp.T_[(size_t)i * LC + (size_t)j * C_];
  for (int a = 0; a < C_; ++a)
    for (int b = 0; b < C_; ++b) V[a + (size_t)C_ * b] = tmp.o_[(size_t)b * C_ + a];
}

void MixedModel::mean_attention(const double *theta, const int32_t *tokens, size_t M, double *Abar) {
  tables(theta);
  const int L = L_, C = C_;
  const size_t LC = (size_t)L * C;
  std::vector<double> A(L);
  std::fill(Abar, Abar + (size_t)L * L, 0.0);
  for (size_t mu = 0; mu < M; ++mu) {
    const int32_t *s = tokens + mu * L;
    for (int i = 0; i < L; ++i) {
      double mx = -INFINITY;
      for (int j = 0; j < L; ++j)
        if (j != i) mx = std::max(mx, A[j] = T_[(size_t)i * LC + (size_t)j * C + s[j]]);
      double z = 0.0;
      for (int j = 0; j < L; ++j) z += (A[j] = (j == i) ? 0.0 : std::exp(A[j] - mx));
      for (int j = 0; j < L; ++j) Abar[i + (size_t)L * j] += A[j] / z / (double)M;
    }
  }
}

// The negative log conditional of site i of sequence s (z_i from the attention over j ≠ i); with grad, its
// contribution (scaled by `scale` = 1/(M L)) to dT and dO.
double MixedModel::site_loss(const int32_t *s, int i, double scale, bool grad, SiteScratch &w) {
  const int L = L_, C = C_;
  const size_t LC = (size_t)L * C;
  std::vector<double> &A = w.A, &dA = w.dA, &z = w.z, &p = w.p;
  const double *Ti = &T_[(size_t)i * LC];
  double mx = -INFINITY;
  for (int j = 0; j < L; ++j)
    if (j != i) mx = std::max(mx, A[j] = Ti[(size_t)j * C + s[j]]);
  double zs = 0.0;
  for (int j = 0; j < L; ++j) zs += (A[j] = (j == i) ? 0.0 : std::exp(A[j] - mx));
  std::fill(z.begin(), z.end(), 0.0);
  for (int j = 0; j < L; ++j) {
    if (j == i) continue;
    A[j] /= zs;
    const double *oj = &o_[((size_t)j * C + s[j]) * C];
    for (int a = 0; a < C; ++a) z[a] += A[j] * oj[a];
  }
  double zm = z[0];
  for (int a = 1; a < C; ++a) zm = std::max(zm, z[a]);
  double se = 0.0;
  for (int a = 0; a < C; ++a) se += (p[a] = std::exp(z[a] - zm));
  const double term = zm + std::log(se) - z[s[i]];
  if (!grad) return term;
  for (int a = 0; a < C; ++a) p[a] *= scale / se;  // G = (softmax − onehot)/(M L)
  p[s[i]] -= scale;
  double t = 0.0;
  for (int j = 0; j < L; ++j) {
    if (j == i) {
      dA[j] = 0.0;
      continue;
    }
    const size_t r = (size_t)j * C + s[j];
    const double *oj = &o_[r * C];
    double *doj = &dO_[r * C];
    double g = 0.0;
    for (int a = 0; a < C; ++a) {
      g += p[a] * oj[a];
      doj[a] += A[j] * p[a];
    }
    dA[j] = g;
    t += A[j] * g;
  }
  double *dTi = &dT_[(size_t)i * LC];
  for (int j = 0; j < L; ++j)
    if (j != i) dTi[(size_t)j * C + s[j]] += A[j] * (dA[j] - t);
  return term;
}

// Queries: dq_i = Σ_r dT[i,r] k_r, then through q_i = W_Q (p_i + a E[MASK]).
void MixedModel::query_gradients(const double *theta, double *grad) const {
  const int L = L_, C = C_, d = d_;
  const size_t LC = (size_t)L * C;
  const double *WQ = theta + oQ_;
  double *gP = grad + oP_, *gE = grad + oE_, *gQ = grad + oQ_;
  std::vector<double> dq(d), din(d);
  for (int i = 0; i < L; ++i) {
    std::fill(dq.begin(), dq.end(), 0.0);
    for (size_t r = 0; r < LC; ++r) {
      const double w = dT_[(size_t)i * LC + r];
      if (w == 0.0) continue;
      for (int k = 0; k < d; ++k) dq[k] += w * k_[r * d + k];
    }
    std::fill(din.begin(), din.end(), 0.0);
    for (int rr = 0; rr < d; ++rr)
      for (int k = 0; k < d; ++k) {
        gQ[(size_t)rr * d + k] += dq[rr] * qin_[(size_t)i * d + k];
        din[k] += WQ[(size_t)rr * d + k] * dq[rr];
      }
    for (int k = 0; k < d; ++k) {
      gP[(size_t)i * d + k] += din[k];
      gE[(size_t)C * d + k] += a_ * din[k];
    }
  }
}

// Key of (j, c): dk_r = Σ_i dT[i,r] q_i, then through k_r = W_K (p_j + a E[c]). din: scratch of d.
void MixedModel::key_gradients(const double *theta, int j, int c, double *grad, std::vector<double> &dk,
                               std::vector<double> &din) const {
  const int L = L_, C = C_, d = d_;
  const size_t LC = (size_t)L * C, r = (size_t)j * C + c;
  const double *WK = theta + oK_;
  double *gP = grad + oP_, *gE = grad + oE_, *gK = grad + oK_;
  std::fill(dk.begin(), dk.end(), 0.0);
  for (int i = 0; i < L; ++i) {
    const double w = dT_[(size_t)i * LC + r];
    if (w == 0.0) continue;
    for (int k = 0; k < d; ++k) dk[k] += w * q_[(size_t)i * d + k];
  }
  std::fill(din.begin(), din.end(), 0.0);
  for (int rr = 0; rr < d; ++rr)
    for (int k = 0; k < d; ++k) {
      gK[(size_t)rr * d + k] += dk[rr] * kin_[r * d + k];
      din[k] += WK[(size_t)rr * d + k] * dk[rr];
    }
  for (int k = 0; k < d; ++k) {
    gP[(size_t)j * d + k] += din[k];
    gE[(size_t)c * d + k] += a_ * din[k];
  }
}

// Value of (j, c): o = W_O v, v = W_V (E[c] + a p_j), from dO. din: scratch of d.
void MixedModel::value_gradients(const double *theta, int j, int c, double *grad, std::vector<double> &dv,
                                 std::vector<double> &din) const {
  const int C = C_, d = d_;
  const size_t r = (size_t)j * C + c;
  const double *WV = theta + oV_, *WO = theta + oO_;
  double *gP = grad + oP_, *gE = grad + oE_, *gV = grad + oV_, *gO = grad + oO_;
  const double *dor = &dO_[r * C];
  std::fill(dv.begin(), dv.end(), 0.0);
  for (int a = 0; a < C; ++a)
    for (int k = 0; k < d; ++k) {
      gO[(size_t)a * d + k] += dor[a] * v_[r * d + k];
      dv[k] += WO[(size_t)a * d + k] * dor[a];
    }
  std::fill(din.begin(), din.end(), 0.0);
  for (int rr = 0; rr < d; ++rr)
    for (int k = 0; k < d; ++k) {
      gV[(size_t)rr * d + k] += dv[rr] * vin_[r * d + k];
      din[k] += WV[(size_t)rr * d + k] * dv[rr];
    }
  for (int k = 0; k < d; ++k) {
    gE[(size_t)c * d + k] += din[k];
    gP[(size_t)j * d + k] += a_ * din[k];
  }
}

double MixedModel::loss(const double *theta, const int32_t *tokens, size_t M, double *grad, double l2) {
  const int L = L_, C = C_, d = d_;
  tables(theta);
  if (grad) {
    std::fill(dT_.begin(), dT_.end(), 0.0);
    std::fill(dO_.begin(), dO_.end(), 0.0);
  }
  const double scale = 1.0 / ((double)M * L);
  SiteScratch w{std::vector<double>(L), std::vector<double>(L), std::vector<double>(C), std::vector<double>(C)};
  double total = 0.0;
  for (size_t mu = 0; mu < M; ++mu)
    for (int i = 0; i < L; ++i) total += site_loss(tokens + mu * L, i, scale, grad != nullptr, w);
  double f = total * scale;
  if (grad) {
    std::fill(grad, grad + off_end_, 0.0);
    query_gradients(theta, grad);
    std::vector<double> dkv(d), din(d);
    for (int j = 0; j < L; ++j)
      for (int c = 0; c < C; ++c) {
        key_gradients(theta, j, c, grad, dkv, din);
        value_gradients(theta, j, c, grad, dkv, din);
      }
  }
  if (l2 > 0.0) {
    double r = 0.0;
    for (size_t k = 0; k < off_end_; ++k) {
      r += theta[k] * theta[k];
      if (grad) grad[k] += l2 * theta[k];
    }
    f += 0.5 * l2 * r;
  }
  return f;
}

}  // namespace am::potts
