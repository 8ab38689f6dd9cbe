// Parameter table of the estimator "replica" bound to its options (attnmech/plugin.hpp): a constexpr
// aggregate (no static constructors), shared by the plugin descriptor and by the tests. Documented in
// docs/replica.md.
#ifndef ATTNMECH_REPLICA_PARAMS_H
#define ATTNMECH_REPLICA_PARAMS_H

#include <attnmech/plugin.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace am::replica {

// The estimator's options (defaults = the table's).
struct Options {
  std::string model = "R1";                       // R1 | R2 | finite
  std::vector<double> nu = {3};
  std::vector<double> lambda = {1e-3, 1e-2, 1e-1, 1};
  std::vector<double> alpha;                      // empty: 60 log-spaced values in [0.1, 20]
  double sigma2 = -1, rho = -1;                   // negative: the R1 values
  std::string J, Sigma;                           // model=finite: .npy files
  std::size_t finite_sites = 0;
  std::string method = "auto";                    // auto | fixed_point | root
  double tol = 1e-13;
  int max_iter = 2000;
  double damping = 0.5;
  bool optimal = true;
  std::vector<double> lambda_scan;                // empty: 4 per decade in [1e-4, 1e3]
  std::vector<double> peak_range = {0.3, 3};
  std::size_t sim_L = 0, sim_seeds = 3, sim_sites = 40;
  std::vector<double> potts_alpha;
  int potts_L = 20;
  double potts_l2 = 1e-4;
  std::size_t potts_M_test = 2000;
  std::size_t potts_realisations = 1;
  double potts_stop_tol = 0.0;
};

using am::sdk::param;

inline constexpr am::sdk::Param<Options> kParams[] = {
    param<&Options::model>("model", "R1",
                           "R1: Gaussian generalized Potts, semicircle couplings (docs/replica.md); R2: isotropic "
                           "inputs; finite: spectral functions of a user's J or Sigma (.npy)",
                           1, 0, "R1|R2|finite"),
    param<&Options::nu>("nu", "3", "coupling scale nu of the Gaussian Potts model (R1: > 2; finite J: > max eig J)", 0,
                        1e12),
    param<&Options::lambda>("lambda", "1e-3,1e-2,1e-1,1", "ridge strengths (0 = the ridgeless limit lambda -> 0+)", 0,
                            1e12),
    param<&Options::alpha>("alpha", "",
                           "samples per input dimension alpha = M/(L-1), in the order given; empty = 60 log-spaced "
                           "values in [0.1, 20]",
                           1e-9, 1e9),
    param<&Options::sigma2>("sigma2", "-1", "R2 / Sigma: label-noise variance (negative: 1/nu, as in R1)", 1, 0),
    param<&Options::rho>("rho", "-1",
                         "R2 / Sigma: signal power w'Sigma w of the teacher (negative: the R1 value rho(nu))", 1, 0),
    param<&Options::J>("J", "", "model=finite: coupling matrix J (.npy, L x L); Sigma_(nu) = (nu 1 - J)^-1", 1, 0),
    param<&Options::Sigma>("Sigma", "",
                           "model=finite without J: input covariance (.npy, p x p); R2-type curves (isotropic teacher, "
                           "rho, sigma2)",
                           1, 0),
    param<&Options::finite_sites>("finite_sites", "0",
                                  "model=finite with J: sites averaged in the spectral functions (0 = all)", 0, 1e9),
    param<&Options::method>("method", "auto",
                            "saddle-point solver: damped fixed point, 1-D root form (Brent), or auto (fixed point, 1-D "
                            "form where slow)",
                            1, 0, "auto|fixed_point|root"),
    param<&Options::tol>("tol", "1e-13", "fixed point: relative change at which iteration stops", 1e-16, 1e-3),
    param<&Options::max_iter>("max_iter", "2000", "fixed point: iterations before auto switches to the 1-D form", 1,
                              1e8),
    param<&Options::damping>("damping", "0.5", "fixed point: step x <- x + damping (F(x) - x)", 1e-3, 1),
    param<&Options::optimal>("optimal", "true", "compute the optimal lambda and its test loss for every alpha", 1, 0),
    param<&Options::lambda_scan>("lambda_scan", "",
                                 "lambda grid of the test-loss-vs-lambda table at each alpha; empty = 4 per decade in "
                                 "[1e-4, 1e3]",
                                 1e-12, 1e12),
    param<&Options::peak_range>("peak_range", "0.3,3", "alpha range [lo, hi] searched for the interpolation peak", 1e-9,
                                1e9),
    param<&Options::sim_L>("sim_L", "0",
                           "simulate at L sites (p = L-1 inputs per row); 0 = no simulation (finite: any nonzero value "
                           "simulates the given J / Sigma)",
                           0, 1e6),
    param<&Options::sim_seeds>("sim_seeds", "3", "independent simulations (seeds) per point", 1, 1e6),
    param<&Options::sim_sites>("sim_sites", "40", "sites (R1, J) or teachers (R2, Sigma) per seed; 0 = all L", 0, 1e6),
    param<&Options::potts_alpha>("potts_alpha", "",
                                 "discrete right panel: alpha = M/L values at which factored attention is fitted by "
                                 "pseudo-likelihood to generalized Potts data (L = C = potts_L, beta 2; results in "
                                 "potts_panel: test_loss, epsilon_star, excess)",
                                 1e-9, 1e9),
    param<&Options::potts_L>("potts_L", "20", "discrete right panel: Potts chain length L = C (M = round(alpha L))", 2,
                             1e6),
    param<&Options::potts_l2>("potts_l2", "1e-4", "discrete right panel: weak l2 penalty of the pseudo-likelihood fit",
                              0, 1e6),
    param<&Options::potts_M_test>("potts_M_test", "2000", "discrete right panel: test sequences for the test loss", 10,
                                  1e8),
    param<&Options::potts_realisations>("potts_realisations", "1",
                                        "discrete right panel: independent realisations (draw of J, U and its "
                                        "sequences) averaged per alpha; > 1 adds standard errors",
                                        1, 1e5),
    param<&Options::potts_stop_tol>("potts_stop_tol", "0",
                                    "discrete right panel: the fit's stopping rule (pseudolikelihood stop_tol); 0 = "
                                    "fit to the minimiser, as the replica theory assumes",
                                    0, 1e6),
};

inline constexpr unsigned kNumParams = sizeof(kParams) / sizeof(kParams[0]);

}  // namespace am::replica

#endif
