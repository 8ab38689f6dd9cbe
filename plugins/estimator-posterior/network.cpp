// attnmech posterior — network log posterior and gradient (see network.h).
#include "network.h"

#include <cblas.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace am::posterior {

namespace {
// C = alpha op(A) op(B) + beta C (column-major), dispatching the thin shapes of this network to
// level-2 BLAS (GEMM with one column or a rank-1 update is slower than GEMV/GER in OpenBLAS).
void gemm(bool ta, bool tb, size_t m, size_t n, size_t k, double alpha, const double *A, size_t lda, const double *B,
          size_t ldb, double beta, double *C, size_t ldc) {
  const int M = static_cast<int>(m), N = static_cast<int>(n), K = static_cast<int>(k);
  if (n == 1 && !tb) {  // C[:,0] = alpha op(A) B[:,0] + beta C[:,0]
    cblas_dgemv(CblasColMajor, ta ? CblasTrans : CblasNoTrans, ta ? K : M, ta ? M : K, alpha, A,
                static_cast<int>(lda), B, 1, beta, C, 1);
    return;
  }
  if (k == 1 && !ta && tb && beta == 1.0) {  // C += alpha a bᵀ with a = A[:,0], b = B[:,0]
    cblas_dger(CblasColMajor, M, N, alpha, A, 1, B, 1, C, static_cast<int>(ldc));
    return;
  }
  cblas_dgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A,
              static_cast<int>(lda), B, static_cast<int>(ldb), beta, C, static_cast<int>(ldc));
}

// The backward step of one weight block V (m × n, col-major) with a thin right factor (D ≤ kFuseMax):
//   dV  = alpha B Gᵀ + beta V        (written, ld m)     B: m × D (ld m), G: n × D (ld ldg)
//   dB += alpha V G                  (accumulated, ld m)
// in one pass over V (each column of V is read once and its gradient written once), instead of a
// copy, a GEMM that reads and writes dV and a second GEMM that reads V again: the block is
// memory-bound for large widths. Plain loops over contiguous columns (auto-vectorised).
const size_t kFuseMax = 8;
void fused_backward(size_t m, size_t n, size_t D, double alpha, double beta, const double *V, const double *B,
                    const double *G, size_t ldg, double *dV, double *dB) {
  double g[kFuseMax];
  for (size_t j = 0; j < n; ++j) {
    const double *v = V + j * m;
    double *o = dV + j * m;
    for (size_t k = 0; k < D; ++k) g[k] = alpha * G[j + k * ldg];
    for (size_t i = 0; i < m; ++i) o[i] = beta * v[i];
    for (size_t k = 0; k < D; ++k) {
      const double gk = g[k];
      const double *b = B + k * m;
      double *db = dB + k * m;
      for (size_t i = 0; i < m; ++i) {
        o[i] += b[i] * gk;
        db[i] += v[i] * gk;
      }
    }
  }
}
}  // namespace

std::string widths_to_integers(const double *widths, size_t count, std::vector<size_t> &out) {
  out.assign(count, 0);
  for (size_t l = 0; l < count; ++l) {
    const double w = widths[l];
    if (!(w >= 1) || !std::isfinite(w) || std::fabs(w - std::round(w)) > 1e-9 * std::max(1.0, std::fabs(w))) {
      char buf[200];
      std::snprintf(buf, sizeof buf,
                    "posterior: width W_%zu = %g is not a whole number >= 1 (the sampler needs integer layer widths)",
                    l, w);
      return buf;
    }
    out[l] = static_cast<size_t>(std::llround(w));
  }
  return std::string();
}

Network::Network(const NetworkSpec &spec, size_t P, const double *xi, const double *y) : spec_(spec), P_(P) {
  const size_t L = spec_.L;
  if (L < 1 || spec_.heads.size() != L || spec_.widths.size() != L + 1 || spec_.variances.size() != L + 2)
    throw std::invalid_argument("posterior: inconsistent network specification");
  H_ = 1;
  for (size_t h : spec_.heads) H_ *= h;
  D_.assign(L + 2, 1);
  for (size_t l = L; l >= 1; --l) D_[l] = spec_.heads[l - 1] * D_[l + 1];
  off_v_.assign(L + 2, 0);
  size_t off = spec_.widths[0] * spec_.N0;
  for (size_t l = 1; l <= L; ++l) {
    off_v_[l] = off;
    off += spec_.heads[l - 1] * spec_.widths[l] * spec_.widths[l - 1];
  }
  off_a_ = off;
  dim_ = off + spec_.widths[L];
  xi_.assign(xi, xi + P * spec_.N0 * H_);
  y_.assign(y, y + P);
  fscale_ = 1.0 / std::sqrt(spec_.variances[0] * static_cast<double>(spec_.widths[0]));
}

size_t Network::offset_v(size_t l, size_t h) const {
  return off_v_[l] + h * spec_.widths[l] * spec_.widths[l - 1];
}

void Network::init_work(Work &wk) const {
  const size_t L = spec_.L;
  wk.w.assign(L + 2, {});
  wk.dw.assign(L + 2, {});
  for (size_t l = 1; l <= L + 1; ++l) {
    wk.w[l].assign(spec_.widths[l - 1] * D_[l], 0.0);
    wk.dw[l].assign(spec_.widths[l - 1] * D_[l], 0.0);
  }
  wk.Z.assign(spec_.N0 * H_, 0.0);
  wk.dZ.assign(spec_.N0 * H_, 0.0);
  wk.f.assign(P_, 0.0);
  wk.r.assign(P_, 0.0);
}

void Network::effective_weights(const double *theta, Work &wk) const {
  const size_t L = spec_.L;
  const auto &W = spec_.widths;
  std::copy(theta + off_a_, theta + off_a_ + W[L], wk.w[L + 1].begin());
  for (size_t l = L; l >= 1; --l) {
    const size_t Wl = W[l], Wp = W[l - 1], Dn = D_[l + 1];
    const double alpha = 1.0 / std::sqrt(static_cast<double>(Wl));
    for (size_t h = 0; h < spec_.heads[l - 1]; ++h) {
      // w^(l)[:, h block] = V_hᵀ w^(l+1) / √W_l      (W_{l−1} × D_{l+1})
      gemm(true, false, Wp, Dn, Wl, alpha, theta + offset_v(l, h), Wl, wk.w[l + 1].data(), Wl, 0.0,
           wk.w[l].data() + h * Dn * Wp, Wp);
    }
  }
}

double Network::log_posterior(const double *theta, double *grad, Work &wk) const {
  const size_t L = spec_.L, N0 = spec_.N0;
  const auto &W = spec_.widths;
  const auto &s = spec_.variances;
  const int n0h = static_cast<int>(N0 * H_), P = static_cast<int>(P_);
  effective_weights(theta, wk);
  // Z = V_0ᵀ w   (N0 × H)
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, static_cast<int>(N0), static_cast<int>(H_),
              static_cast<int>(W[0]), 1.0, theta, static_cast<int>(W[0]), wk.w[1].data(), static_cast<int>(W[0]), 0.0,
              wk.Z.data(), static_cast<int>(N0));
  // f = Ξ vec(Z) / √(s_0 W_0)
  cblas_dgemv(CblasColMajor, CblasNoTrans, P, n0h, fscale_, xi_.data(), P, wk.Z.data(), 1, 0.0, wk.f.data(), 1);
  const double T = spec_.temperature;
  double loss = 0;
  for (size_t mu = 0; mu < P_; ++mu) {
    const double e = wk.f[mu] - y_[mu];
    loss += e * e;
    wk.r[mu] = -e / T;  // d log p / d f
  }
  double logp = -0.5 * loss / T;
  // prior: log-density part here; its gradient −θ/s is folded into the backward pass below
  auto prior_block = [&](size_t off, size_t n, double var) {
    const double ss = cblas_ddot(static_cast<int>(n), theta + off, 1, theta + off, 1);
    logp -= 0.5 * ss / var;
  };
  prior_block(0, W[0] * N0, s[0]);
  for (size_t l = 1; l <= L; ++l) prior_block(off_v_[l], spec_.heads[l - 1] * W[l] * W[l - 1], s[l]);
  prior_block(off_a_, W[L], s[L + 1]);
  if (!grad) return logp;

  // dZ = Ξᵀ r / √(s_0 W_0)
  cblas_dgemv(CblasColMajor, CblasTrans, P, n0h, fscale_, xi_.data(), P, wk.r.data(), 1, 0.0, wk.dZ.data(), 1);
  // dV_0 = w dZᵀ − V_0/s_0 (W_0 × N0) and dw^(1) = V_0 dZ (W_0 × H)
  if (H_ <= kFuseMax) {
    std::fill(wk.dw[1].begin(), wk.dw[1].end(), 0.0);
    fused_backward(W[0], N0, H_, 1.0, -1.0 / s[0], theta, wk.w[1].data(), wk.dZ.data(), N0, grad, wk.dw[1].data());
  } else {
    std::copy(theta, theta + W[0] * N0, grad);
    gemm(false, true, W[0], N0, H_, 1.0, wk.w[1].data(), W[0], wk.dZ.data(), N0, -1.0 / s[0], grad, W[0]);
    gemm(false, false, W[0], H_, N0, 1.0, theta, W[0], wk.dZ.data(), N0, 0.0, wk.dw[1].data(), W[0]);
  }
  backward_layers(theta, grad, wk);
  return logp;
}

double Network::log_prior_layers(const double *theta) const {
  const size_t L = spec_.L;
  const auto &W = spec_.widths;
  const auto &s = spec_.variances;
  double logp = 0;
  auto prior_block = [&](size_t off, size_t n, double var) {
    const double ss = cblas_ddot(static_cast<int>(n), theta + off, 1, theta + off, 1);
    logp -= 0.5 * ss / var;
  };
  for (size_t l = 1; l <= L; ++l) prior_block(off_v_[l], spec_.heads[l - 1] * W[l] * W[l - 1], s[l]);
  prior_block(off_a_, W[L], s[L + 1]);
  return logp;
}

void Network::backward_layers(const double *theta, double *grad, Work &wk) const {
  const size_t L = spec_.L;
  const auto &W = spec_.widths;
  const auto &s = spec_.variances;
  for (size_t l = 1; l <= L; ++l) {
    const size_t Wl = W[l], Wp = W[l - 1], Dn = D_[l + 1];
    const double alpha = 1.0 / std::sqrt(static_cast<double>(Wl));
    std::fill(wk.dw[l + 1].begin(), wk.dw[l + 1].end(), 0.0);
    for (size_t h = 0; h < spec_.heads[l - 1]; ++h) {
      const double *G = wk.dw[l].data() + h * Dn * Wp;  // W_{l−1} × D_{l+1}
      const double *V = theta + offset_v(l, h);
      double *gV = grad + offset_v(l, h);
      if (Dn <= kFuseMax) {
        // dV_h = w^(l+1) Gᵀ/√W_l − V_h/s_l and dw^(l+1) += V_h G/√W_l in one pass
        fused_backward(Wl, Wp, Dn, alpha, -1.0 / s[l], V, wk.w[l + 1].data(), G, Wp, gV, wk.dw[l + 1].data());
      } else {
        std::copy(V, V + Wl * Wp, gV);
        gemm(false, true, Wl, Wp, Dn, alpha, wk.w[l + 1].data(), Wl, G, Wp, -1.0 / s[l], gV, Wl);
        gemm(false, false, Wl, Dn, Wp, alpha, V, Wl, G, Wp, 1.0, wk.dw[l + 1].data(), Wl);
      }
    }
  }
  const double inv_sa = 1.0 / s[L + 1];
  for (size_t i = 0; i < W[L]; ++i) grad[off_a_ + i] = wk.dw[L + 1][i] - theta[off_a_ + i] * inv_sa;
}

void Network::predict(const double *theta, size_t Pt, const double *xi, double *f, Work &wk) const {
  const size_t N0 = spec_.N0;
  const auto &W = spec_.widths;
  effective_weights(theta, wk);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, static_cast<int>(N0), static_cast<int>(H_),
              static_cast<int>(W[0]), 1.0, theta, static_cast<int>(W[0]), wk.w[1].data(), static_cast<int>(W[0]), 0.0,
              wk.Z.data(), static_cast<int>(N0));
  cblas_dgemv(CblasColMajor, CblasNoTrans, static_cast<int>(Pt), static_cast<int>(N0 * H_), fscale_, xi,
              static_cast<int>(Pt), wk.Z.data(), 1, 0.0, f, 1);
}

void Network::order_parameter(const double *theta, double *U, Work &wk) const {
  effective_weights(theta, wk);
  const size_t W0 = spec_.widths[0];
  // U = wᵀ w / W_0 with w = W_0 × H (columns = paths)
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, static_cast<int>(H_), static_cast<int>(H_),
              static_cast<int>(W0), 1.0 / static_cast<double>(W0), wk.w[1].data(), static_cast<int>(W0),
              wk.w[1].data(), static_cast<int>(W0), 0.0, U, static_cast<int>(H_));
}

void Network::sample_prior(am_rng &rng, double *theta) const {
  const size_t L = spec_.L, N0 = spec_.N0;
  const auto &W = spec_.widths;
  const auto &s = spec_.variances;
  auto fill = [&](size_t off, size_t n, double var) {
    const double sd = std::sqrt(var);
    for (size_t i = 0; i < n; ++i) theta[off + i] = sd * am_rng_normal(&rng);
  };
  fill(0, W[0] * N0, s[0]);
  for (size_t l = 1; l <= L; ++l) fill(off_v_[l], spec_.heads[l - 1] * W[l] * W[l - 1], s[l]);
  fill(off_a_, W[L], s[L + 1]);
}

// ------------------------------------------------------------------------------ NetworkDensity
NetworkDensity::NetworkDensity(const Network &net, bool readout_only, const double *fixed_theta)
    : net_(net), readout_only_(readout_only) {
  theta_.assign(net.dim(), 0.0);
  if (fixed_theta) std::copy(fixed_theta, fixed_theta + net.dim(), theta_.begin());
  grad_.assign(net.dim(), 0.0);
  net.init_work(wk_);
}

const double *NetworkDensity::full_theta(const double *q) {
  if (!readout_only_) return q;
  std::copy(q, q + net_.readout_dim(), theta_.begin() + static_cast<std::ptrdiff_t>(net_.offset_a()));
  return theta_.data();
}

double NetworkDensity::log_density(const double *q, double *grad) {
  if (!readout_only_) return net_.log_posterior(q, grad, wk_);
  const double *th = full_theta(q);
  const double lp = net_.log_posterior(th, grad ? grad_.data() : nullptr, wk_);
  if (grad) std::copy(grad_.begin() + static_cast<std::ptrdiff_t>(net_.offset_a()), grad_.end(), grad);
  return lp;
}

}  // namespace am::posterior
