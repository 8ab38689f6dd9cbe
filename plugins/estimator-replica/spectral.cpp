// Spectral functions of the replica saddle point: closed forms for R1 and R2, and
// finite spectral measures built from a coupling matrix J or a covariance Sigma.
#include "replica.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

namespace am::replica {

double semicircle_g(double z) { return 2.0 / (z + std::sqrt(z * z - 4.0)); }
double semicircle_gprime(double z) { return -semicircle_g(z) / std::sqrt(z * z - 4.0); }

// a(t) = int rho_sc(e) de / (1 + t (nu - e)) = g(nu + 1/t)/t. With D = sqrt((1+nu t)^2 - 4 t^2):
// a = 2 / (1 + nu t + D), free of cancellation for every t >= 0 (a(0) = 1).
double r1_a(double nu, double t) {
  const double u = 1.0 + nu * t;
  const double D = std::sqrt(u * u - 4.0 * t * t);
  return 2.0 / (u + D);
}

double r1_rho(double nu) {
  const double g = semicircle_g(nu);
  return g / (nu * nu * (1.0 - g / nu));
}

namespace {

class R1Spectrum final : public Spectrum {
 public:
  explicit R1Spectrum(double nu) : nu_(nu), rho_(r1_rho(nu)) {}

  SpectralValues eval(double k) const override {
    const double nu = nu_;
    const double u = 1.0 + nu * k;
    const double D = std::sqrt(u * u - 4.0 * k * k);
    const double a = 2.0 / (u + D);
    // tau2 = d/dk [k a(k)] = g'(z) * (-1/k^2) with z = nu + 1/k, which simplifies to a / D.
    // a'(k) = (tau2 - a)/k = a (1/D - 1)/k = a (-2 nu + (4 - nu^2) k) / (D (1 + D)) (no cancellation).
    const double ap = a * (-2.0 * nu + (4.0 - nu * nu) * k) / (D * (1.0 + D));
    // h(k) = u'(1 + k P)^-1 u = a / (1 - k a / nu) (Sherman–Morrison on the rank-one shift),
    // h'(k) = (a' + a^2/nu) / (1 - k a/nu)^2.
    const double c = 1.0 - k * a / nu;
    const double h = a / c;
    const double hp = (ap + a * a / nu) / (c * c);
    SpectralValues v;
    v.tau1 = a;
    v.tau2 = a / D;
    v.B = -hp / (nu * nu);
    v.T1 = rho_ - k * h / (nu * nu);
    v.T2 = rho_ - 2.0 * k * h / (nu * nu) + k * k * v.B;
    return v;
  }
  double tau1(double k) const override { return r1_a(nu_, k); }
  double rho() const override { return rho_; }
  double sigma2() const override { return 1.0 / nu_; }
  double mean_s() const override { return semicircle_g(nu_); }  // (1/p) Tr Sigma = int rho_sc/(nu - e)

 private:
  double nu_, rho_;
};

class R2Spectrum final : public Spectrum {
 public:
  R2Spectrum(double rho, double sigma2) : rho_(rho), sigma2_(sigma2) {}
  SpectralValues eval(double k) const override {
    const double r = 1.0 / (1.0 + k);
    SpectralValues v;
    v.tau1 = r;
    v.tau2 = r * r;
    v.T1 = rho_ * r;
    v.T2 = rho_ * r * r;
    v.B = rho_ * r * r;
    return v;
  }
  double tau1(double k) const override { return 1.0 / (1.0 + k); }
  double rho() const override { return rho_; }
  double sigma2() const override { return sigma2_; }
  double mean_s() const override { return 1.0; }

 private:
  double rho_, sigma2_;
};

class DiscreteSpectrum final : public Spectrum {
 public:
  explicit DiscreteSpectrum(DiscreteMeasure m) : m_(std::move(m)) {
    for (std::size_t k = 0; k < m_.s.size(); ++k) {
      mean_s_ += m_.wt[k] * m_.s[k];
      rho_ += m_.wc[k] * m_.s[k];
    }
  }
  SpectralValues eval(double kappa) const override {
    double t1 = 0, t2 = 0, T1 = 0, T2 = 0, B = 0;
    const std::size_t n = m_.s.size();
    const double *s = m_.s.data(), *wt = m_.wt.data(), *wc = m_.wc.data();
    for (std::size_t k = 0; k < n; ++k) {
      const double r = s[k] / (s[k] + kappa);
      const double r2 = r * r;
      t1 += wt[k] * r;
      t2 += wt[k] * r2;
      T1 += wc[k] * s[k] * r;
      T2 += wc[k] * s[k] * r2;
      B += wc[k] * r2 / s[k];
    }
    SpectralValues v;
    v.tau1 = t1;
    v.tau2 = t2;
    v.T1 = T1;
    v.T2 = T2;
    v.B = B;
    return v;
  }
  double tau1(double kappa) const override {
    double t1 = 0;
    for (std::size_t k = 0; k < m_.s.size(); ++k) t1 += m_.wt[k] * m_.s[k] / (m_.s[k] + kappa);
    return t1;
  }
  double rho() const override { return rho_; }
  double sigma2() const override { return m_.sigma2; }
  double mean_s() const override { return mean_s_; }
  bool expensive() const override { return m_.s.size() > 4096; }

 private:
  DiscreteMeasure m_;
  double mean_s_ = 0, rho_ = 0;
};

}  // namespace

std::unique_ptr<Spectrum> make_r1(double nu) {
  if (!(nu > 2.0) || !std::isfinite(nu))
    throw Error(AM_ERR_DOMAIN, "model R1 needs nu > 2 (the semicircle edge), got nu = " + std::to_string(nu));
  return std::make_unique<R1Spectrum>(nu);
}

std::unique_ptr<Spectrum> make_r2(double rho, double sigma2) {
  if (!(rho >= 0) || !(sigma2 >= 0) || !std::isfinite(rho) || !std::isfinite(sigma2))
    throw Error(AM_ERR_DOMAIN, "model R2 needs rho >= 0 and sigma2 >= 0");
  return std::make_unique<R2Spectrum>(rho, sigma2);
}

std::unique_ptr<Spectrum> make_discrete(DiscreteMeasure m) {
  if (m.s.empty() || m.wt.size() != m.s.size() || m.wc.size() != m.s.size())
    throw Error(AM_ERR_INVALID_ARGUMENT, "replica: empty or inconsistent spectral measure");
  for (double s : m.s)
    if (!(s > 0) || !std::isfinite(s)) throw Error(AM_ERR_SINGULAR, "replica: covariance is not positive definite");
  return std::make_unique<DiscreteSpectrum>(std::move(m));
}

namespace {

// Symmetric eigendecomposition (dsyevd, lower triangle of A, column-major n x n, lda = n).
// On return A holds the eigenvectors, w the eigenvalues (ascending).
void eigh(std::vector<double> &A, std::size_t n, std::vector<double> &w) {
  w.assign(n, 0.0);
  const lapack_int info = LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', 'L', static_cast<lapack_int>(n), A.data(),
                                         static_cast<lapack_int>(n), w.data());
  if (info != 0) throw Error(AM_ERR_NOT_CONVERGED, "replica: dsyevd failed (info " + std::to_string(info) + ")");
}

}  // namespace

DiscreteMeasure finite_measure_from_J(const double *J, std::size_t L, double nu, std::size_t n_sites) {
  if (L < 2) throw Error(AM_ERR_SHAPE, "replica: J must be at least 2 x 2");
  // Many small factorisations, where BLAS threads only add overhead (and contention on shared machines); one
  // thread also makes the results bitwise reproducible.
  const am::sdk::BlasThreads blas_guard(1);
  if (n_sites == 0 || n_sites > L) n_sites = L;
  const std::size_t p = L - 1;
  // Precision K = nu 1 - (J + J')/2.
  std::vector<double> K(L * L);
  for (std::size_t j = 0; j < L; ++j)
    for (std::size_t i = 0; i < L; ++i) {
      const double v = 0.5 * (J[i + j * L] + J[j + i * L]);
      if (!std::isfinite(v)) throw Error(AM_ERR_NONFINITE, "replica: J contains NaN or Inf");
      K[i + j * L] = (i == j ? nu : 0.0) - v;
    }
  {
    std::vector<double> C = K;
    const lapack_int info =
        LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', static_cast<lapack_int>(L), C.data(), static_cast<lapack_int>(L));
    if (info != 0)
      throw Error(AM_ERR_DOMAIN, "replica: nu = " + std::to_string(nu) +
                                     " does not exceed the largest eigenvalue of J (nu 1 - J is not positive definite)");
  }
  DiscreteMeasure m;
  m.s.reserve(n_sites * p);
  m.wt.reserve(n_sites * p);
  m.wc.reserve(n_sites * p);
  std::vector<double> P(p * p), w(p), c(p), ev;
  const double site_w = 1.0 / static_cast<double>(n_sites);
  for (std::size_t i = 0; i < n_sites; ++i) {
    const double kii = K[i + i * L];
    // Schur complement P = K_{\i\i} - K_{\i,i} K_{i,\i} / K_ii  (= Sigma_{\i\i}^{-1}).
    auto idx = [i](std::size_t a) { return a < i ? a : a + 1; };
    for (std::size_t b = 0; b < p; ++b) {
      const double kbi = K[idx(b) + i * L];
      for (std::size_t a = 0; a < p; ++a) P[a + b * p] = K[idx(a) + idx(b) * L] - K[idx(a) + i * L] * kbi / kii;
      w[b] = -kbi / kii;  // teacher: conditional mean coefficients
    }
    eigh(P, p, ev);
    cblas_dgemv(CblasColMajor, CblasTrans, static_cast<int>(p), static_cast<int>(p), 1.0, P.data(),
                static_cast<int>(p), w.data(), 1, 0.0, c.data(), 1);
    for (std::size_t k = 0; k < p; ++k) {
      if (!(ev[k] > 0)) throw Error(AM_ERR_SINGULAR, "replica: conditional precision is not positive definite");
      m.s.push_back(1.0 / ev[k]);
      m.wt.push_back(site_w / static_cast<double>(p));
      m.wc.push_back(site_w * c[k] * c[k]);
    }
    m.sigma2 += site_w / kii;
  }
  return m;
}

DiscreteMeasure measure_from_sigma(const double *Sigma, std::size_t p, double rho, double sigma2) {
  if (p < 1) throw Error(AM_ERR_SHAPE, "replica: Sigma is empty");
  std::vector<double> A(p * p), ev;
  for (std::size_t j = 0; j < p; ++j)
    for (std::size_t i = 0; i < p; ++i) {
      const double v = 0.5 * (Sigma[i + j * p] + Sigma[j + i * p]);
      if (!std::isfinite(v)) throw Error(AM_ERR_NONFINITE, "replica: Sigma contains NaN or Inf");
      A[i + j * p] = v;
    }
  eigh(A, p, ev);
  if (!(ev[0] > 0)) throw Error(AM_ERR_SINGULAR, "replica: Sigma is not positive definite");
  double mean_s = 0;
  for (double s : ev) mean_s += s / static_cast<double>(p);
  DiscreteMeasure m;
  m.s = ev;
  m.wt.assign(p, 1.0 / static_cast<double>(p));
  // Isotropic teacher direction: E c_k^2 = |w|^2 / p with |w|^2 = rho / mean_s, so that w' Sigma w = rho.
  m.wc.assign(p, rho / (mean_s * static_cast<double>(p)));
  m.sigma2 = sigma2;
  return m;
}

}  // namespace am::replica
