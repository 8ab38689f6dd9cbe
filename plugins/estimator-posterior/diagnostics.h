// attnmech posterior — convergence diagnostics for several chains of one scalar quantity.
//
// Following Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), "Rank-normalization, folding, and
// localization: an improved R̂ for assessing convergence of MCMC":
//   * split chains: each chain is cut into two halves (the middle draw dropped when odd);
//   * rank normalisation: all draws are ranked jointly (average rank for ties) and mapped through
//     z = Φ⁻¹((r − 3/8)/(S + 1/4));
//   * R̂ = max(split-R̂ of the rank-normalised draws, split-R̂ of the rank-normalised folded draws
//     |θ − median θ|);
//   * bulk ESS = ESS of the rank-normalised split chains; "mean" ESS (for Monte-Carlo standard
//     errors of the mean) = ESS of the raw split chains.
// ESS uses the multi-chain autocorrelation of Stan (within-chain autocovariances combined with the
// between-chain variance) and Geyer's initial monotone sequence; autocovariances are computed
// directly, lag by lag, only as far as the sequence needs them.
#ifndef ATTNMECH_POSTERIOR_DIAGNOSTICS_H
#define ATTNMECH_POSTERIOR_DIAGNOSTICS_H

#include <cstddef>
#include <vector>

namespace am::posterior {

// draws[c] = the draws of chain c (all chains are truncated to the shortest one).
using Chains = std::vector<std::vector<double>>;

// Classic (Gelman–Rubin) R̂ of the given chains, no splitting, no ranks. NaN if < 2 draws per chain.
double rhat_basic(const Chains &chains);
// ESS of the given chains as they are (no splitting, no ranks). NaN if < 4 draws per chain.
double ess_basic(const Chains &chains);

// Each chain cut into two halves (length ⌊n/2⌋).
Chains split_chains(const Chains &chains);
// Rank-normalised copy (joint ranks over every draw of every chain).
Chains rank_normalize(const Chains &chains);

struct Diagnostics {
  double rhat = 0;       // max(bulk, folded) rank-normalised split-R̂
  double ess_bulk = 0;   // rank-normalised split ESS
  double ess_mean = 0;   // split ESS of the raw draws (for the MCSE of the mean)
  double mean = 0, sd = 0;
  double mcse = 0;       // sd / √ess_mean
};

// All of the above; NaNs where undefined (e.g. fewer than 8 draws per chain, or a constant quantity).
Diagnostics diagnose(const Chains &chains);

}  // namespace am::posterior

#endif
