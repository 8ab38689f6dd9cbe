// attnmech — estimator "replica": internal C++ API of the replica_core static library.
//
// Learning curve of linear factored attention (square MLM loss + ridge) on Gaussian generalized
// Potts data (docs/replica.md): replica-symmetric saddle point (fixed point and 1-D form),
// spectral functions (model R1, model R2, finite matrices), ridge simulations.
// Nothing here prints or exits; errors are C++ exceptions (am::replica::Error = am::sdk::Error, carrying an
// am_status) that the SDK's guard maps to am_context_fail.
#ifndef ATTNMECH_REPLICA_H
#define ATTNMECH_REPLICA_H

#include <attnmech/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace am::replica {

using Error = am::sdk::Error;

// ---------------------------------------------------------------- spectral functions

// Values of the spectral functions at an effective regularisation kappa >= 0.
struct SpectralValues {
  double tau1 = 0, tau2 = 0;  // (1/p) Tr S(S+k)^-1, (1/p) Tr S^2 (S+k)^-2
  double T1 = 0, T2 = 0;      // w' S (S+k)^-1 S w, w' S^3 (S+k)^-2 w
  double B = 0;               // w' S (S+k)^-2 w
};

class Spectrum {
 public:
  virtual ~Spectrum() = default;
  virtual SpectralValues eval(double kappa) const = 0;
  virtual double tau1(double kappa) const { return eval(kappa).tau1; }
  virtual double rho() const = 0;      // w' S w (signal power)
  virtual double sigma2() const = 0;   // label-noise variance
  virtual double mean_s() const = 0;   // (1/p) Tr S  (bounds kappa*tau1(kappa) from above)
  // Per-evaluation cost class: closed forms are cheap; large discrete measures are not.
  virtual bool expensive() const { return false; }
};

// Semicircle Stieltjes transform g(z) = 2/(z + sqrt(z^2-4)), z > 2, and its derivative.
double semicircle_g(double z);
double semicircle_gprime(double z);
// R1 pieces in closed form: a(t) = g(nu+1/t)/t, h(t) = a/(1 - t a/nu), rho(nu).
double r1_a(double nu, double t);
double r1_rho(double nu);

// Model R1: Gaussian Potts, J = Omega/sqrt(L), semicircle, teacher J_{\i,i}/nu, noise 1/nu.
std::unique_ptr<Spectrum> make_r1(double nu);
// Model R2: Sigma = 1, |w|^2 = rho, noise sigma2.
std::unique_ptr<Spectrum> make_r2(double rho, double sigma2);

// A finite spectral measure: atoms s_k > 0 with trace weights wt_k (sum 1) and teacher weights
// wc_k (= squared projection of the teacher on the eigenvector, times the site weight).
struct DiscreteMeasure {
  std::vector<double> s, wt, wc;
  double sigma2 = 0;
};
std::unique_ptr<Spectrum> make_discrete(DiscreteMeasure m);

// Finite model from a coupling matrix J (L x L, column-major, symmetrised internally): precision
// K = nu*1 - J; per site i the Schur complement P_i = K_{\i\i} - K_{\i,i}K_{i,\i}/K_ii (= inverse of
// Sigma_{\i\i}) is eigendecomposed (dsyevd), the teacher w_i = -K_{\i,i}/K_ii projected, and the
// spectral functions are averaged over the sites (first `n_sites` sites; 0 = all).
DiscreteMeasure finite_measure_from_J(const double *J, std::size_t L, double nu, std::size_t n_sites = 0);
// From a covariance alone (R2-type): spectrum of Sigma (p x p), teacher direction isotropic with
// signal power w' Sigma w = rho, noise sigma2.
DiscreteMeasure measure_from_sigma(const double *Sigma, std::size_t p, double rho, double sigma2);

// ---------------------------------------------------------------- RS saddle point

enum class Method { Auto, FixedPoint, Root };

struct SaddleOptions {
  Method method = Method::Auto;
  double tol = 1e-13;       // fixed point: max relative change of (V, m, q); root: relative kappa tolerance
  int max_iter = 2000;      // fixed-point iterations before giving up (Auto: switch to the 1-D form)
  double damping = 0.5;     // x <- (1-damping) x + damping F(x)
};

struct SaddleResult {
  double eps = 0;           // test loss sigma2 + rho - 2m + q
  double kappa = 0;         // effective regularisation lambda(1+V)
  double V = 0, m = 0, q = 0;
  int iterations = 0;       // fixed-point iterations, or root-finder evaluations
  bool used_root = false;   // true if the 1-D form produced the result
  bool converged = false;
};

// Brent's root finder on [a, b] with f(a) f(b) <= 0 (own implementation).
double brent_root(const std::function<double(double)> &f, double a, double b, double xtol, int max_iter = 200);
// Minimiser of a unimodal f on [a, b]: golden section with parabolic steps (Brent's fmin).
double brent_min(const std::function<double(double)> &f, double a, double b, double xtol, int max_iter = 200);

// kappa_0 with tau1(kappa_0) = alpha (alpha < 1): the ridgeless effective regularisation.
double kappa0(const Spectrum &sp, double alpha);
SaddleResult solve_fixed_point(const Spectrum &sp, double alpha, double lambda, const SaddleOptions &o);
SaddleResult solve_root(const Spectrum &sp, double alpha, double lambda, const SaddleOptions &o);
// Method::Auto: fixed point for cheap spectra, switching to the 1-D form when it is slow (more than
// max_iter iterations) or lambda == 0; the 1-D form directly for expensive spectra.
// lambda == 0 is the ridgeless limit (eps = +inf at alpha == 1).
SaddleResult solve(const Spectrum &sp, double alpha, double lambda, const SaddleOptions &o);

// Optimal ridge per alpha: minimise eps over lambda in [lo, hi] (log scale; grid scan + Brent).
struct Optimum {
  double lambda = 0, eps = 0;
};
Optimum optimal_lambda(const Spectrum &sp, double alpha, const SaddleOptions &o, double lo = 1e-6, double hi = 1e6);

// Interpolation peak of eps(alpha) at fixed lambda on [a_lo, a_hi] (log-grid scan + Brent).
struct Peak {
  double alpha = 0, eps = 0;
  bool interior = false;    // false: the maximum sits on the boundary of the range
};
Peak find_peak(const Spectrum &sp, double lambda, const SaddleOptions &o, double a_lo = 0.3, double a_hi = 3.0);

// ---------------------------------------------------------------- simulations

enum class SimModel { R1, R2, FiniteJ, Sigma };

struct SimSpec {
  SimModel model = SimModel::R1;
  std::size_t L = 0;            // sites; inputs per regression p = L - 1 (Sigma: p = dim Sigma)
  double nu = 3;                // R1 / FiniteJ
  double rho = 1, sigma2 = 0.25;// R2 / Sigma
  const double *J = nullptr;    // FiniteJ: L x L column-major
  const double *Sigma = nullptr;// Sigma: p x p column-major
  std::size_t p_sigma = 0;
  std::size_t n_sites = 40;     // sites (R1/FiniteJ) or teachers (R2/Sigma) per seed; 0 = all L
  std::size_t seeds = 3;
};

struct SimPoint {
  double alpha_realised = 0;    // M / p
  std::size_t M = 0;
  double mean = 0;
  double stderr_ = 0;           // reported error bar: max(seed_stderr, site_stderr); one seed: site_stderr
  double seed_stderr = 0;       // spread of the per-seed means / sqrt(seeds) (honest but noisy for few seeds)
  double site_stderr = 0;       // pooled within-seed spread / sqrt(sites x seeds): a lower bound on the true
                                // error of the mean (the sites of one seed share data, so it ignores that)
  std::vector<double> per_seed; // per-seed site-averaged test losses
  bool ok = true;               // false: not computable (lambda == 0 with M <= p)
};

// One simulation grid: result[a][l] for alphas x lambdas. The rng is split per seed
// (stream = seed index), then per draw (0: couplings/teachers, 1 + alpha index: data).
// `progress(done, total)` returns true to cancel (partial results: remaining points ok = false).
std::vector<std::vector<SimPoint>> simulate(const SimSpec &spec, const std::vector<double> &alphas,
                                            const std::vector<double> &lambdas, const am_rng &rng,
                                            const std::function<bool(double, double)> &progress = {},
                                            bool *cancelled = nullptr);

// Draw the R1 coupling matrix J = Omega/sqrt(L) (column-major, L x L) from `rng`.
void draw_r1_J(std::size_t L, am_rng *rng, double *J);

// ---------------------------------------------------------------- plugin run

struct Options;  // params.h: the parameter table bound to it

// Fill the run record (the estimator's work; see docs/replica.md). Throws Error; AM_CANCELLED when the
// progress sink asked to stop (the record then holds what was computed).
am_status run(const am::sdk::Host &host, const Options &o, am_record *out);
#ifdef AM_REPLICA_WITH_POTTS
// Fill potts_panel with pseudo-likelihood test losses on Potts data at M = round(α L) (potts_panel.cpp);
// the Gibbs chains run on the host's parallel loop.
struct PottsPanel {
  int L = 20;
  double l2 = 1e-4, stop_tol = 0.0;
  size_t M_test = 2000, realisations = 1;
  std::vector<double> alpha;
};
am_status fill_potts_panel(const am::sdk::Host &host, const am_rng &rng, const PottsPanel &o, am_record *pp);
#endif

}  // namespace am::replica

#endif
