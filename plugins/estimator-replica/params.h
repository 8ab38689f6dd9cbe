// Parameter table of the estimator "replica": a constexpr aggregate (no static constructors),
// shared by the plugin descriptor and by the tests. Documented in docs/replica.md.
#ifndef ATTNMECH_REPLICA_PARAMS_H
#define ATTNMECH_REPLICA_PARAMS_H

#include <attnmech/plugin.h>

namespace replica {

inline constexpr am_param_def kParams[] = {
    AM_PARAM("model", AM_PARAM_CHOICE, "R1",
     "R1: Gaussian generalized Potts, semicircle couplings (spec potts.md 4.1-4.3); R2: isotropic inputs (4.4); "
     "finite: spectral functions of a user's J or Sigma (.npy)",
     1, 0, "R1|R2|finite"),
    AM_PARAM("nu", AM_PARAM_REAL_LIST, "3", "coupling scale nu of the Gaussian Potts model (R1: > 2; finite J: > max eig J)",
     0, 1e12, nullptr),
    AM_PARAM("lambda", AM_PARAM_REAL_LIST, "1e-3,1e-2,1e-1,1", "ridge strengths (0 = the ridgeless limit lambda -> 0+)", 0,
     1e12, nullptr),
    AM_PARAM("alpha", AM_PARAM_REAL_LIST, "",
     "samples per input dimension alpha = M/(L-1), in the order given; empty = 60 log-spaced values in [0.1, 20]",
     1e-9, 1e9, nullptr),
    AM_PARAM("sigma2", AM_PARAM_REAL, "-1", "R2 / Sigma: label-noise variance (negative: 1/nu, as in R1)", 1, 0, nullptr),
    AM_PARAM("rho", AM_PARAM_REAL, "-1", "R2 / Sigma: signal power w'Sigma w of the teacher (negative: the R1 value rho(nu))",
     1, 0, nullptr),
    AM_PARAM("J", AM_PARAM_STRING, "", "model=finite: coupling matrix J (.npy, L x L); Sigma_(nu) = (nu 1 - J)^-1", 1, 0,
     nullptr),
    AM_PARAM("Sigma", AM_PARAM_STRING, "",
     "model=finite without J: input covariance (.npy, p x p); R2-type curves (isotropic teacher, rho, sigma2)", 1, 0,
     nullptr),
    AM_PARAM("finite_sites", AM_PARAM_INT, "0", "model=finite with J: sites averaged in the spectral functions (0 = all)", 0,
     1e9, nullptr),
    AM_PARAM("method", AM_PARAM_CHOICE, "auto",
     "saddle-point solver: damped fixed point, 1-D root form (Brent), or auto (fixed point, 1-D form where slow)", 1, 0,
     "auto|fixed_point|root"),
    AM_PARAM("tol", AM_PARAM_REAL, "1e-13", "fixed point: relative change at which iteration stops", 1e-16, 1e-3, nullptr),
    AM_PARAM("max_iter", AM_PARAM_INT, "2000", "fixed point: iterations before auto switches to the 1-D form", 1, 1e8,
     nullptr),
    AM_PARAM("damping", AM_PARAM_REAL, "0.5", "fixed point: step x <- x + damping (F(x) - x)", 1e-3, 1, nullptr),
    AM_PARAM("optimal", AM_PARAM_BOOL, "true", "compute the optimal lambda and its test loss for every alpha", 1, 0, nullptr),
    AM_PARAM("lambda_scan", AM_PARAM_REAL_LIST, "",
     "lambda grid of the test-loss-vs-lambda table at each alpha; empty = 4 per decade in [1e-4, 1e3]", 1e-12, 1e12,
     nullptr),
    AM_PARAM("peak_range", AM_PARAM_REAL_LIST, "0.3,3", "alpha range [lo, hi] searched for the interpolation peak", 1e-9, 1e9,
     nullptr),
    AM_PARAM("sim_L", AM_PARAM_INT, "0", "simulate at L sites (p = L-1 inputs per row); 0 = no simulation (finite: any "
     "nonzero value simulates the given J / Sigma)", 0, 1e6, nullptr),
    AM_PARAM("sim_seeds", AM_PARAM_INT, "3", "independent simulations (seeds) per point", 1, 1e6, nullptr),
    AM_PARAM("sim_sites", AM_PARAM_INT, "40", "sites (R1, J) or teachers (R2, Sigma) per seed; 0 = all L", 0, 1e6, nullptr),
    AM_PARAM("potts_alpha", AM_PARAM_REAL_LIST, "",
     "discrete right panel: alpha = M/L values at which factored attention is fitted by pseudo-likelihood to "
     "generalized Potts data (L = C = potts_L, beta 2; results in potts_panel: test_loss, epsilon_star, excess)",
     1e-9, 1e9, nullptr),
    AM_PARAM("potts_L", AM_PARAM_INT, "20", "discrete right panel: Potts chain length L = C (M = round(alpha L))", 2,
     1e6, nullptr),
    AM_PARAM("potts_l2", AM_PARAM_REAL, "1e-4", "discrete right panel: weak l2 penalty of the pseudo-likelihood fit", 0, 1e6,
     nullptr),
    AM_PARAM("potts_M_test", AM_PARAM_INT, "2000", "discrete right panel: test sequences for the test loss", 10, 1e8,
     nullptr),
};

inline constexpr unsigned kNumParams = sizeof(kParams) / sizeof(kParams[0]);

}  // namespace replica

#endif
