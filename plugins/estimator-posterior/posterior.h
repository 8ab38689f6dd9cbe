// attnmech posterior — running chains of the network posterior in parallel and summarising them.
#ifndef ATTNMECH_POSTERIOR_POSTERIOR_H
#define ATTNMECH_POSTERIOR_POSTERIOR_H

#include "diagnostics.h"
#include "marginal.h"
#include "network.h"
#include "nuts.h"

#include <attnmech/context.h>
#include <attnmech/plugin.hpp>
#include <attnmech/record.h>

#include <functional>
#include <string>
#include <vector>

namespace am::posterior {

struct PosteriorSettings {
  SamplerSettings sampler;
  int chains = 4;
  bool fix_all_but_readout = false; // test-only: sample a with every other weight fixed at a prior draw
  // Sample the posterior with V_0 integrated out (MarginalDensity; V_0 drawn from its conditional per draw)
  // instead of all weights. Ignored with fix_all_but_readout.
  bool marginal = false;
  double init_radius = 2.0;         // initial point uniform in [−r, r]^d (NumPyro/Stan default 2)
  size_t track_test = 5;            // test predictions whose traces get R̂/ESS
  bool keep_draws = false;          // store every sampled position (tests only; memory = samples × dim)
};

// Everything one chain produced. Only the post-warm-up draws enter the summaries.
struct ChainOutput {
  int warmup_done = 0;
  int samples_done = 0;
  long long divergences = 0;          // post-warm-up
  long long warmup_divergences = 0;
  double accept_sum = 0;              // Σ accept_stat over the post-warm-up draws
  double step_size = 0;
  std::vector<long long> depth_hist;  // post-warm-up tree depths 0..max_tree_depth
  long long gradient_evaluations = 0;
  double seconds = 0;
  std::vector<double> logp;           // per draw
  std::vector<double> energy;         // Hamiltonian per draw (for the E-BFMI)
  std::vector<double> U;              // per draw H_tot² (col-major) back to back
  std::vector<double> f_tracked;      // per draw track_test values
  std::vector<double> f_mean, f_m2;   // Welford over draws for every test input
  std::vector<double> draws;          // keep_draws: per draw dim values
  std::string error;                  // non-empty if the chain failed
};

// Live progress of one chain (read by the monitoring thread).
struct ChainProgress {
  int iterations = 0;  // warm-up + sampling iterations done
  long long divergences = 0;
};

// Called from the calling thread about 5 times a second; return false to stop all chains.
using MonitorFn = std::function<bool(const std::vector<ChainProgress> &)>;

// Run `settings.chains` chains over the parallel loop `pf` (the host's; its worker 0 — the calling thread —
// also runs the monitor); chain c uses the stream am_rng_split(parent, c), so the chains are the same bits on
// every thread count. Test inputs (Pt × N0 × H_tot) may be absent (Pt = 0). *interrupted is set when the
// monitor asked to stop.
std::vector<ChainOutput> run_chains(const Network &net, size_t Pt, const double *xi_test,
                                    const PosteriorSettings &settings, const am_rng &parent, const MonitorFn &monitor,
                                    bool *interrupted, const am::sdk::ParallelFor &pf = am::sdk::serial_loop());

struct Summary {
  size_t draws_per_chain = 0;        // common length used for R̂/ESS
  size_t total_draws = 0;            // all post-warm-up draws of all chains (means use all of them)
  std::vector<double> test_mean, test_var;  // over all draws (unbiased variance)
  double accuracy = 0;               // sign(test_mean) vs y_test (NaN without labels)
  std::vector<size_t> tracked;       // indices of the tracked test inputs
  std::vector<Diagnostics> test_diag;
  std::vector<double> U, U_stderr;   // H_tot × H_tot
  std::vector<Diagnostics> U_diag;   // H_tot × H_tot
  Diagnostics logp_diag;
};

Summary summarize(const std::vector<ChainOutput> &chains, size_t H, size_t Pt, const double *y_test,
                  const PosteriorSettings &settings);

// Energy Bayesian fraction of missing information of one chain, Σ(E_n − E_{n−1})² / Σ(E_n − Ē)²
// (NaN with fewer than 3 draws). Values below 0.3 indicate a poorly explored energy distribution.
double e_bfmi(const std::vector<double> &energy);

// Indices of the tracked test inputs (evenly spaced).
std::vector<size_t> tracked_indices(size_t Pt, size_t k);

// Write the `posterior` object into `run`.
am_status write_record(am_context *ctx, am_record *run, const std::vector<ChainOutput> &chains, const Summary &sum,
                       size_t H, const PosteriorSettings &settings, bool interrupted, uint64_t seed);

// Log warnings for R̂ > 1.01, ESS < 100 and divergences.
// Logs sampler problems; R-hat > 1.01, divergences after warm-up and failed chains also go to run's
// `warnings` list (run may be NULL).
void log_warnings(am_context *ctx, const std::vector<ChainOutput> &chains, const Summary &sum, size_t H,
                  am_record *run);

}  // namespace am::posterior

#endif
