// Finite-size simulations of the replica scenario (docs/replica.md "Simulations"): Gaussian data, one
// ridge regression per site solved by Cholesky (dposv), exact test loss from the population
// covariance, averaged over sites and seeds.
#include "replica.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace am::replica {

namespace {

int I(std::size_t n) { return static_cast<int>(n); }

// K = nu 1 - (J + J')/2 (column-major L x L).
std::vector<double> precision_from_J(const double *J, std::size_t L, double nu) {
  std::vector<double> K(L * L);
  for (std::size_t j = 0; j < L; ++j)
    for (std::size_t i = 0; i < L; ++i) K[i + j * L] = (i == j ? nu : 0.0) - 0.5 * (J[i + j * L] + J[j + i * L]);
  return K;
}

}  // namespace

void draw_r1_J(std::size_t L, am_rng *rng, double *J) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(L));
  for (std::size_t j = 0; j < L; ++j) {
    J[j + j * L] = 0.0;
    for (std::size_t i = 0; i < j; ++i) {
      const double v = am_rng_normal(rng) * scale;
      J[i + j * L] = v;
      J[j + i * L] = v;
    }
  }
}

namespace {

// Test losses of the simulation: per_site[alpha][lambda][seed] holds one value per site (teacher); ok[a][l]
// is 0 where lambda = 0 met a singular system (M <= p).
struct Losses {
  std::vector<std::vector<std::vector<std::vector<double>>>> per_site;
  std::vector<std::vector<char>> ok;
  Losses(std::size_t nA, std::size_t nL, std::size_t S)
      : per_site(nA, std::vector<std::vector<std::vector<double>>>(nL, std::vector<std::vector<double>>(S))),
        ok(nA, std::vector<char>(nL, 1)) {}
};

// Buffers reused across seeds and alphas.
struct Scratch {
  std::vector<double> J, K, R, X, G, A, rhs, Wt, Y, v;
};

// Sigma model: the lower Cholesky factor of the given covariance (shared by all seeds) and its mean diagonal.
std::vector<double> sigma_factor(const SimSpec &spec, std::size_t p, double *sig_mean) {
  std::vector<double> Lsig(spec.Sigma, spec.Sigma + p * p);
  *sig_mean = 0;
  for (std::size_t i = 0; i < p; ++i) *sig_mean += Lsig[i + i * p] / static_cast<double>(p);
  if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', I(p), Lsig.data(), I(p)) != 0)
    throw Error(AM_ERR_SINGULAR, "replica simulation: Sigma is not positive definite");
  for (std::size_t j = 0; j < p; ++j)
    for (std::size_t i = 0; i < j; ++i) Lsig[i + j * p] = 0.0;
  return Lsig;
}

// Site models (R1, FiniteJ): the seed's couplings (R1: drawn from r0) → precision K = R'R, R upper (in w.R).
void draw_precision(const SimSpec &spec, std::size_t L, am_rng *r0, Scratch &w) {
  const double *Jp = spec.J;
  if (spec.model == SimModel::R1) {
    w.J.assign(L * L, 0.0);
    draw_r1_J(L, r0, w.J.data());
    Jp = w.J.data();
  }
  w.K = precision_from_J(Jp, L, spec.nu);
  w.R = w.K;
  if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', I(L), w.R.data(), I(L)) != 0)
    throw Error(AM_ERR_DOMAIN, "replica simulation: nu 1 - J is not positive definite (nu = " +
                                   std::to_string(spec.nu) + " too small for this J)");
  for (std::size_t j = 0; j < L; ++j)
    for (std::size_t i = j + 1; i < L; ++i) w.R[i + j * L] = 0.0;
}

// Teacher models (R2, Sigma): T isotropic directions with w' Sigma w = rho (R2: |w|^2 = rho), into w.Wt.
void draw_teachers(const SimSpec &spec, std::size_t p, std::size_t T, double sig_mean, am_rng *r0, Scratch &w) {
  w.Wt.assign(p * T, 0.0);
  const double norm2 = spec.rho / (spec.model == SimModel::Sigma ? sig_mean : 1.0);
  for (std::size_t t = 0; t < T; ++t) {
    double *wt = &w.Wt[t * p];
    am_rng_fill_normal(r0, wt, p);
    const double n = cblas_dnrm2(I(p), wt, 1);
    cblas_dscal(I(p), std::sqrt(norm2) / n, wt, 1);
  }
}

// Site models, one data set of M rows x ~ N(0, K^-1): the ridge regression of each of the first n_sites
// sites on the others, for every lambda; loss[l] gets one test loss per site.
void site_regressions(std::size_t L, std::size_t n_sites, std::size_t M, const std::vector<double> &lambdas,
                      am_rng *rk, Scratch &w, std::vector<std::vector<double> *> loss, std::vector<char> &ok) {
  const std::size_t p = L - 1;
  // Rows x ~ N(0, K^-1): x' = z' R^-T, i.e. X R' = Z.
  w.X.resize(M * L);
  am_rng_fill_normal(rk, w.X.data(), M * L);
  cblas_dtrsm(CblasColMajor, CblasRight, CblasUpper, CblasTrans, CblasNonUnit, I(M), I(L), 1.0, w.R.data(), I(L),
              w.X.data(), I(M));
  w.G.assign(L * L, 0.0);
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, I(L), I(M), 1.0 / static_cast<double>(M), w.X.data(), I(M), 0.0,
              w.G.data(), I(L));
  for (std::size_t j = 0; j < L; ++j)
    for (std::size_t i = j + 1; i < L; ++i) w.G[i + j * L] = w.G[j + i * L];
  for (std::size_t il = 0; il < lambdas.size(); ++il) {
    const double lam = lambdas[il];
    auto &out = *loss[il];
    out.reserve(n_sites);
    for (std::size_t i = 0; i < n_sites; ++i) {
      auto idx = [i](std::size_t a) { return a < i ? a : a + 1; };
      w.A.resize(p * p);
      w.rhs.resize(p);
      for (std::size_t b = 0; b < p; ++b) {
        for (std::size_t a = 0; a <= b; ++a) w.A[a + b * p] = w.G[idx(a) + idx(b) * L];
        w.A[b + b * p] += lam;
        w.rhs[b] = w.G[idx(b) + i * L];
      }
      const lapack_int info = LAPACKE_dposv(LAPACK_COL_MAJOR, 'U', I(p), 1, w.A.data(), I(p), w.rhs.data(), I(p));
      if (info != 0) {
        if (lam == 0) {
          ok[il] = 0;
          break;
        }
        throw Error(AM_ERR_SINGULAR, "replica simulation: ridge system not positive definite");
      }
      // Test loss = v' K^-1 v with v = e_i - a (a embedded at the other sites) = |R^-T v|^2.
      w.v.assign(L, 0.0);
      w.v[i] = 1.0;
      for (std::size_t b = 0; b < p; ++b) w.v[idx(b)] = -w.rhs[b];
      cblas_dtrsv(CblasColMajor, CblasUpper, CblasTrans, CblasNonUnit, I(L), w.R.data(), I(L), w.v.data(), 1);
      const double nv = cblas_dnrm2(I(L), w.v.data(), 1);
      out.push_back(nv * nv);
    }
  }
}

// Teacher models, one data set: inputs x ~ N(0, Sigma) (R2: Sigma = 1), labels y_t = w_t' x + sigma xi for
// every teacher t; one multi-right-hand-side ridge solve per lambda; loss[l] gets one test loss per teacher.
void teacher_regressions(const SimSpec &spec, std::size_t p, std::size_t T, std::size_t M,
                         const std::vector<double> &lambdas, const std::vector<double> &Lsig, am_rng *rk, Scratch &w,
                         std::vector<std::vector<double> *> loss, std::vector<char> &ok) {
  w.X.resize(M * p);
  am_rng_fill_normal(rk, w.X.data(), M * p);
  if (spec.model == SimModel::Sigma)
    cblas_dtrmm(CblasColMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit, I(M), I(p), 1.0, Lsig.data(), I(p),
                w.X.data(), I(M));
  w.Y.resize(M * T);
  am_rng_fill_normal(rk, w.Y.data(), M * T);
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, I(M), I(T), I(p), 1.0, w.X.data(), I(M), w.Wt.data(), I(p),
              std::sqrt(spec.sigma2), w.Y.data(), I(M));
  w.G.assign(p * p, 0.0);
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, I(p), I(M), 1.0 / static_cast<double>(M), w.X.data(), I(M), 0.0,
              w.G.data(), I(p));
  std::vector<double> XtY(p * T);
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, I(p), I(T), I(M), 1.0 / static_cast<double>(M), w.X.data(),
              I(M), w.Y.data(), I(M), 0.0, XtY.data(), I(p));
  for (std::size_t il = 0; il < lambdas.size(); ++il) {
    const double lam = lambdas[il];
    w.A = w.G;
    for (std::size_t b = 0; b < p; ++b) w.A[b + b * p] += lam;
    w.rhs = XtY;
    const lapack_int info = LAPACKE_dposv(LAPACK_COL_MAJOR, 'U', I(p), I(T), w.A.data(), I(p), w.rhs.data(), I(p));
    if (info != 0) {
      if (lam == 0) {
        ok[il] = 0;
        continue;
      }
      throw Error(AM_ERR_SINGULAR, "replica simulation: ridge system not positive definite");
    }
    auto &out = *loss[il];
    for (std::size_t t = 0; t < T; ++t) {
      w.v.assign(p, 0.0);
      for (std::size_t b = 0; b < p; ++b) w.v[b] = w.rhs[b + t * p] - w.Wt[b + t * p];
      if (spec.model == SimModel::Sigma)  // d' Sigma d = |L' d|^2
        cblas_dtrmv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, I(p), Lsig.data(), I(p), w.v.data(), 1);
      const double nv = cblas_dnrm2(I(p), w.v.data(), 1);
      out.push_back(spec.sigma2 + nv * nv);
    }
  }
}

// One point of the grid from its per-seed site losses (NaN and ok = false when a seed is missing).
SimPoint summarise(const std::vector<std::vector<double>> &seeds, bool ok, std::size_t n_sites, std::size_t M,
                   std::size_t p) {
  SimPoint pt;
  const std::size_t S = seeds.size();
  pt.M = M;
  pt.alpha_realised = static_cast<double>(M) / static_cast<double>(p);
  std::size_t done = 0;
  for (const auto &l : seeds)
    if (l.size() == n_sites) ++done;
  if (!ok || done < S) {
    pt.ok = false;
    pt.mean = pt.stderr_ = pt.seed_stderr = pt.site_stderr = std::numeric_limits<double>::quiet_NaN();
    return pt;
  }
  pt.per_seed.resize(S);
  for (std::size_t s = 0; s < S; ++s) {
    double sum = 0;
    for (double x : seeds[s]) sum += x;
    pt.per_seed[s] = sum / static_cast<double>(n_sites);
  }
  // Sites of one seed share the data, so the unbiased error bar comes from the per-seed means; but
  // with a few seeds that estimate is itself very noisy (2 degrees of freedom for 3 seeds). The
  // within-seed spread over sites (S (n - 1) degrees of freedom) bounds the true error from below
  // (variance of the mean = within/(nS) + between/S), so report the larger of the two.
  double mean = 0;
  for (double x : pt.per_seed) mean += x;
  mean /= static_cast<double>(S);
  double var = 0;
  for (double x : pt.per_seed) var += (x - mean) * (x - mean);
  pt.mean = mean;
  pt.seed_stderr = S >= 2 ? std::sqrt(var / static_cast<double>(S - 1) / static_cast<double>(S)) : 0.0;
  double within = 0;
  std::size_t dof = 0;
  for (std::size_t s = 0; s < S; ++s) {
    for (double x : seeds[s]) within += (x - pt.per_seed[s]) * (x - pt.per_seed[s]);
    dof += n_sites - 1;
  }
  pt.site_stderr = dof > 0 ? std::sqrt(within / static_cast<double>(dof) / static_cast<double>(S * n_sites)) : 0.0;
  pt.stderr_ = std::max(pt.seed_stderr, pt.site_stderr);
  return pt;
}

std::size_t rows_for(double alpha, std::size_t p) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(alpha * p)));
}

}  // namespace

std::vector<std::vector<SimPoint>> simulate(const SimSpec &spec, const std::vector<double> &alphas,
                                            const std::vector<double> &lambdas, const am_rng &rng,
                                            const std::function<bool(double, double)> &progress, bool *cancelled) {
  // Many small factorisations, where BLAS threads only add overhead (and contention on shared machines); one
  // thread also makes the results bitwise reproducible.
  const am::sdk::BlasThreads blas_guard(1);
  const bool site_model = spec.model == SimModel::R1 || spec.model == SimModel::FiniteJ;
  const std::size_t L = spec.model == SimModel::Sigma ? spec.p_sigma + 1 : spec.L;
  if (L < 3) throw Error(AM_ERR_DOMAIN, "replica simulation: need L >= 3 (at least 2 inputs per regression)");
  if (spec.seeds < 1) throw Error(AM_ERR_DOMAIN, "replica simulation: need at least one seed");
  if (spec.model == SimModel::FiniteJ && !spec.J) throw Error(AM_ERR_INVALID_ARGUMENT, "replica simulation: no J");
  if (spec.model == SimModel::Sigma && !spec.Sigma) throw Error(AM_ERR_INVALID_ARGUMENT, "replica simulation: no Sigma");
  const std::size_t p = L - 1;
  std::size_t n_sites = spec.n_sites == 0 ? L : spec.n_sites;
  if (site_model) n_sites = std::min(n_sites, L);
  const std::size_t nA = alphas.size(), nL = lambdas.size(), S = spec.seeds;
  for (double a : alphas)
    if (!(a > 0) || !std::isfinite(a)) throw Error(AM_ERR_DOMAIN, "replica simulation: alpha must be > 0");
  for (double l : lambdas)
    if (!(l >= 0) || !std::isfinite(l)) throw Error(AM_ERR_DOMAIN, "replica simulation: lambda must be >= 0");

  Losses loss(nA, nL, S);
  if (cancelled) *cancelled = false;
  bool stop = false;
  double sig_mean = 0;
  const std::vector<double> Lsig = spec.model == SimModel::Sigma ? sigma_factor(spec, p, &sig_mean) : std::vector<double>();
  Scratch w;
  // The rng is split per seed (stream s), then per draw: 0 for couplings/teachers, 1 + alpha index for data.
  for (std::size_t s = 0; s < S && !stop; ++s) {
    am_rng rs, r0;
    am_rng_split(&rng, s, &rs);
    am_rng_split(&rs, 0, &r0);
    if (site_model)
      draw_precision(spec, L, &r0, w);
    else
      draw_teachers(spec, p, n_sites, sig_mean, &r0, w);
    for (std::size_t ia = 0; ia < nA && !stop; ++ia) {
      const std::size_t M = rows_for(alphas[ia], p);
      am_rng rk;
      am_rng_split(&rs, 1 + ia, &rk);
      std::vector<std::vector<double> *> out(nL);
      for (std::size_t il = 0; il < nL; ++il) out[il] = &loss.per_site[ia][il][s];
      if (site_model)
        site_regressions(L, n_sites, M, lambdas, &rk, w, out, loss.ok[ia]);
      else
        teacher_regressions(spec, p, n_sites, M, lambdas, Lsig, &rk, w, out, loss.ok[ia]);
      if (progress && progress(static_cast<double>(s * nA + ia + 1), static_cast<double>(S * nA))) stop = true;
    }
  }
  if (cancelled) *cancelled = stop;

  std::vector<std::vector<SimPoint>> res(nA, std::vector<SimPoint>(nL));
  for (std::size_t ia = 0; ia < nA; ++ia)
    for (std::size_t il = 0; il < nL; ++il)
      res[ia][il] = summarise(loss.per_site[ia][il], loss.ok[ia][il] != 0, n_sites, rows_for(alphas[ia], p), p);
  return res;
}

}  // namespace am::replica
