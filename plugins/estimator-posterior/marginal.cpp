// attnmech posterior — the posterior with V_0 integrated out (see marginal.h).
#include "marginal.h"

#include "simd/spd_kernels.h"

#include <cblas.h>
#include <lapack.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace am::posterior {

namespace {
const double kInf = std::numeric_limits<double>::infinity();
inline int I(size_t n) { return static_cast<int>(n); }
}  // namespace

// The factor and the inverse come from the small SPD kernels (simd/spd_kernels.h: register tiles, no BLAS call
// overheads), the solves from LAPACK's Fortran routines directly: LAPACKE would scan the matrix for NaNs on every
// call, thousands of times a second here. The one case the scan caught, a non-finite K, is caught on the factor's
// pivots (factor()).
//
// Only lower triangles are stored and read: S_k packed (half the bytes the two passes per evaluation stream), K_ and
// its inverse in the lower triangle of a ldk_ × P array (ldk_ = P rounded up to 8) whose upper triangle and padding
// rows stay zero, as the kernels need.

double PairKernels::bytes(size_t P, size_t H) {
  return 8.0 * static_cast<double>(H * (H + 1) / 2) * static_cast<double>(P * (P + 1) / 2);
}

PairKernels::PairKernels(const Network &net) : P_(net.P()), np_(net.P() * (net.P() + 1) / 2) {
  const size_t H = net.paths(), N0 = net.spec().N0, P = P_;
  for (size_t j = 0; j < H; ++j)
    for (size_t i = 0; i <= j; ++i) {
      pi_.push_back(i);
      pj_.push_back(j);
    }
  S_.assign(pi_.size() * np_, 0.0);
  std::vector<double> full(P * P);
  const double *xi = net.xi();
  for (size_t k = 0; k < pi_.size(); ++k) {
    const double *A = xi + pi_[k] * P * N0, *B = xi + pj_[k] * P * N0;  // Ξ_π, Ξ_π' (P × N0, ld P)
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, I(P), I(P), I(N0), 1.0, A, I(P), B, I(P), 0.0, full.data(),
                I(P));
    if (pi_[k] != pj_[k])
      cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, I(P), I(P), I(N0), 1.0, B, I(P), A, I(P), 1.0,
                  full.data(), I(P));
    double *S = S_.data() + k * np_;
    for (size_t j = 0; j < P; S += P - j, ++j)  // column j, rows j..P−1
      std::copy(full.data() + j * (P + 1), full.data() + (j + 1) * P, S);
  }
}

MarginalDensity::MarginalDensity(const Network &net, const PairKernels &kernels, const simd::SpdKernels *spd)
    : net_(net),
      C_(kernels),
      spd_(spd ? *spd : simd::spd_kernels()),
      v0_size_(net.spec().widths[0] * net.spec().N0),
      P_(net.P()),
      H_(net.paths()),
      ldk_(simd::spd_padded(net.P())) {
  theta_.assign(net.dim(), 0.0);
  grad_.assign(net.dim(), 0.0);
  U_.assign(H_ * H_, 0.0);
  // K_ holds ldk_ × P doubles from a 64-byte boundary (k_): whole vectors of a column never straddle cache lines.
  K_.assign(ldk_ * P_ + 8, 0.0);
  const auto addr = reinterpret_cast<std::uintptr_t>(K_.data());
  k_ = K_.data() + ((64 - addr % 64) % 64) / sizeof(double);
  spd_work_.assign(simd::spd_work_size(P_), 0.0);
  alpha_.assign(P_, 0.0);
  G_.assign(H_ * H_, 0.0);
  beta_.assign(P_, 0.0);
  B_.assign(net.spec().N0 * H_, 0.0);
  f_.assign(P_, 0.0);
  u_.assign(kernels.pairs(), 0.0);
  net.init_work(wk_);
}

bool MarginalDensity::factor() {
  const size_t W0 = net_.spec().widths[0], P = P_, ld = ldk_;
  net_.effective_weights(theta_.data(), wk_);
  // U = wᵀw/W_0 (H × H)
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, I(H_), I(H_), I(W0), 1.0 / static_cast<double>(W0),
              wk_.w[1].data(), I(W0), wk_.w[1].data(), I(W0), 0.0, U_.data(), I(H_));
  // lower triangle of K = T I + Σ_k U_{π_k π'_k} S_k: one pass over the packed S_k, written into K's columns
  for (size_t k = 0; k < C_.pairs(); ++k) u_[k] = U_[C_.pi(k) + H_ * C_.pj(k)];
  spd_.combine(P, C_.pairs(), C_.S(0), u_.data(), net_.spec().temperature, k_, ld);
  // A NaN or infinity in K's lower triangle reaches a pivot (through its row's sum of squares): refused there. The
  // factor's products may then have left NaNs in the padding rows, which the kernels need zero: cleared.
  if (spd_.cholesky(P, k_, ld) == 0) return true;
  std::fill(k_, k_ + ld * P, 0.0);
  return false;
}

void MarginalDensity::solve(double *v) const {
  const lapack_int n = I(P_), ld = I(ldk_), one = 1;
  lapack_int info = 0;
  LAPACK_dpotrs("L", &n, &one, k_, &ld, v, &n, &info);
}

void MarginalDensity::trace_terms() {
  // Q = α αᵀ − K⁻¹ with its diagonal halved: ⟨Q, S_k⟩/2 = Σ_{i>j} Q_ij S_ij + ½ Σ_i Q_ii S_ii, one pass over the
  // packed S_k with Q's entries made on the way from α and the inverse's columns.
  spd_.traces(P_, C_.pairs(), C_.S(0), alpha_.data(), k_, ldk_, u_.data());
}

double MarginalDensity::log_density(const double *q, double *grad) {
  const size_t P = P_, off = v0_size_, W0 = net_.spec().widths[0];
  std::copy(q, q + dim(), theta_.begin() + static_cast<std::ptrdiff_t>(off));
  if (!factor()) return -kInf;
  const double *y = net_.y();
  double logdet = 0;
  for (size_t i = 0; i < P; ++i) logdet += std::log(k_[i * (ldk_ + 1)]);
  logdet *= 2;
  const double prior = net_.log_prior_layers(theta_.data());
  if (!grad) {
    std::copy(y, y + P, alpha_.begin());
    solve(alpha_.data());
    return -0.5 * cblas_ddot(I(P), y, 1, alpha_.data(), 1) - 0.5 * logdet + prior;
  }
  // The trace terms need the entries of K⁻¹, which come from the Cholesky factor (in place), not from a general
  // inverse; with them α = K⁻¹ y is one symmetric GEMV (the inverse's entries are within P·κ·ε of K⁻¹'s, as a
  // solve's α is: spd.h).
  spd_.inverse(P, k_, ldk_, spd_work_.data());
  cblas_dsymv(CblasColMajor, CblasLower, I(P), 1.0, k_, I(ldk_), y, 1, 0.0, alpha_.data(), 1);
  const double logp = -0.5 * cblas_ddot(I(P), y, 1, alpha_.data(), 1) - 0.5 * logdet + prior;
  trace_terms();
  std::fill(G_.begin(), G_.end(), 0.0);
  for (size_t k = 0; k < C_.pairs(); ++k) {
    const double g = u_[k];
    const size_t a = C_.pi(k), b = C_.pj(k);
    // ∂U_ππ/∂w_π = 2 w_π/W_0; a pair π < π' enters as one value U_ππ' = U_π'π with ∂/∂w_π = w_π'/W_0
    if (a == b) {
      G_[a + H_ * a] = 2.0 * g;
    } else {
      G_[a + H_ * b] = g;
      G_[b + H_ * a] = g;
    }
  }
  // dw^(1) = w G / W_0
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, I(W0), I(H_), I(H_), 1.0 / static_cast<double>(W0),
              wk_.w[1].data(), I(W0), G_.data(), I(H_), 0.0, wk_.dw[1].data(), I(W0));
  net_.backward_layers(theta_.data(), grad_.data(), wk_);
  std::copy(grad_.begin() + static_cast<std::ptrdiff_t>(off), grad_.end(), grad);
  return logp;
}

const double *MarginalDensity::complete(const double *q, am_rng &rng) {
  const size_t P = P_, off = v0_size_, W0 = net_.spec().widths[0], N0 = net_.spec().N0;
  const double s0 = net_.spec().variances[0], T = net_.spec().temperature;
  std::copy(q, q + dim(), theta_.begin() + static_cast<std::ptrdiff_t>(off));
  if (!factor()) return nullptr;
  // V_0' from the prior, then its train outputs
  am_rng_fill_normal(&rng, theta_.data(), off);
  const double sd0 = std::sqrt(s0);
  for (size_t i = 0; i < off; ++i) theta_[i] *= sd0;
  net_.predict(theta_.data(), P, net_.xi(), f_.data(), wk_);  // also refreshes wk_.w
  // β = (K_U + T I)⁻¹ (y − f' − ε)
  am_rng_fill_normal(&rng, beta_.data(), P);
  const double sdT = std::sqrt(T);
  const double *y = net_.y();
  for (size_t i = 0; i < P; ++i) beta_[i] = y[i] - f_[i] - sdT * beta_[i];
  solve(beta_.data());
  // B = Ξᵀ β (N0 × H) and V_0 = V_0' + s_0 f_scale w Bᵀ
  cblas_dgemv(CblasColMajor, CblasTrans, I(P), I(N0 * H_), 1.0, net_.xi(), I(P), beta_.data(), 1, 0.0, B_.data(), 1);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, I(W0), I(N0), I(H_), s0 * net_.fscale(), wk_.w[1].data(),
              I(W0), B_.data(), I(N0), 1.0, theta_.data(), I(W0));
  return theta_.data();
}

}  // namespace am::posterior
