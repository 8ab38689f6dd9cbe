// potts_core — the generalized Potts model (docs/potts.md): couplings J (sites) ⊗ U (colours), exact
// single-site conditionals, heat-bath Gibbs sampling, the conditional entropy ε* and the
// equilibration report. Internal C++ API (not part of the public C ABI).
#ifndef ATTNMECH_POTTS_MODEL_H
#define ATTNMECH_POTTS_MODEL_H

#include <attnmech/context.h>
#include <attnmech/plugin.hpp>
#include <attnmech/rng.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace am::potts {

// The SDK's parallel loop (am::sdk::ParallelFor: f(begin, end, worker) over contiguous chunks of [0, n)). The
// chains of this library each own their random stream and write their own rows, so results do not depend on
// how [0, n) is split. Empty = serial. Plugins pass the host's loop (host.loop()); no pool of our own.
using ParallelFor = am::sdk::ParallelFor;

// Runs f over [0, n) with `pf`, or serially when pf is empty.
void run_parallel(const ParallelFor &pf, size_t n, const std::function<void(size_t begin, size_t end)> &f);

// The host's parallel loop (its threads, its split of [0, n)).
inline ParallelFor host_parallel_for(const am::sdk::Host &host) { return host.loop(); }

// H(s) = -1/2 Σ_{i≠j} J_ij U_{s_i s_j},  p(s) ∝ exp(-β H(s)).
// J: L×L column-major, symmetric, zero diagonal. U: C×C column-major, symmetric.
struct Model {
  int L = 0, C = 0;
  double beta = 1.0;
  std::vector<double> J, U;
};

// Tokens are int32, row-major [M, L]: sequence μ is tokens + μ*L, values 0..C-1.

// h[a] = β Σ_{j≠i} J_ij U_{a s_j} (the logits of the conditional of site i).
void local_field(const Model &m, const int32_t *s, int i, double *h);
// log p(s_i = a | s_{\i}) for all a (C values).
void log_conditional(const Model &m, const int32_t *s, int i, double *logp);
double energy(const Model &m, const int32_t *s);
// Σ_i -log p(s_i | s_{\i}) for one sequence.
double neg_log_pseudo(const Model &m, const int32_t *s);
// Σ_i entropy of p(· | s_{\i}) for one sequence (Rao–Blackwellised conditional entropy).
double cond_entropy_rb(const Model &m, const int32_t *s);
// ε* estimate: (1/(M L)) Σ_μ Σ_i -log p(s^μ_i | s^μ_{\i}).
double epsilon_star(const Model &m, const int32_t *tokens, size_t M);

// One heat-bath sweep: a fresh random site order, each site redrawn from its exact conditional. This is the
// slow reference (every local field from scratch, scalar exp); the samplers below use GibbsChain, which makes
// the same random draws and differs from it only by round-off in the fields and the exponentials (tested: the
// same chains on short runs). work: at least L + C doubles; perm: at least L ints.
void gibbs_sweep(const Model &m, int32_t *s, am_rng *rng, int *perm, double *work);
void random_state(const Model &m, int32_t *s, am_rng *rng);

// A heat-bath chain that keeps every site's local field h_i(a) = β Σ_{j≠i} J_ij U_{a s_j} (L×C) up to date:
// a changed site k adds β J_ik (U[:, new] − U[:, old]) to every other row (vectorised axpy, J_ik = 0 skipped),
// the conditional of the visited site is a vectorised exp of its row. Per sweep this costs L·C per changed
// site and L·C exponentials, against L²·C + L·C for the reference. The fields are recomputed from scratch
// every `refresh` sweeps so round-off cannot accumulate. The model must outlive the chain.
class GibbsChain {
 public:
  explicit GibbsChain(const Model &m, int refresh = 100);
  void start(am_rng *rng);            // uniform random state (the draws of random_state)
  void set_state(const int32_t *s);   // given state; fields from scratch
  void sweep(am_rng *rng);            // the draws of gibbs_sweep: a Fisher–Yates order, one uniform per site
  const int32_t *state() const { return s_.data(); }
  const double *fields() const { return F_.data(); }  // row i (C values) at fields() + i*stride()
  size_t stride() const { return Cp_; }
  // Σ_i entropy of p(· | s_\i) from the kept fields (= cond_entropy_rb up to round-off).
  double cond_entropy();

 private:
  void refresh_fields();
  const Model &m_;
  int refresh_, since_ = 0;
  size_t Cp_;  // row stride of F_: C rounded up to the vector width (padding kept at 0)
  std::vector<double> bU_, F_, p_, d_, J0_;  // J0_: J with its diagonal zeroed
  std::vector<int32_t> s_;
  std::vector<int> perm_;
};

struct SampleOptions {
  int burnin = 300;     // sweeps before the first kept state
  int thin = 0;         // 0: one independent chain per sample; >0: one chain, keep every thin-th sweep
  ParallelFor parallel; // loop over independent chains (results do not depend on it); empty = serial
};

// M samples into out (M*L). Chain c uses the stream am_rng_split(rng, c) (independent chains) —
// bitwise identical for any split of the parallel loop. Progress is reported on ctx ("sampling"); on cancel the
// function returns AM_CANCELLED and the first *done rows are valid.
am_status sample(am_context *ctx, const Model &m, size_t M, const SampleOptions &o, const am_rng &rng,
                 std::vector<int32_t> &out, size_t *done = nullptr);

// Couplings.
// Recipe: K_ij = exp(scale (r_ij + r_ji)), r ~ U(0,1), K_ii = 0; symmetric Sinkhorn
// d ← sqrt(d ⊘ (K d)), J = diag(d) K diag(d) (unit row sums).
void make_J_sinkhorn(int L, am_rng *rng, std::vector<double> &J, double scale = 1.5, int iters = 2000);
// Adjacency of a random k-regular graph divided by k. Returns false if no graph was found.
bool make_J_kregular(int L, int k, am_rng *rng, std::vector<double> &J);
// U = (G + Gᵀ)/√2, G_ab ~ N(0,1).
void make_U_gaussian(int C, am_rng *rng, std::vector<double> &U);
// (J + Jᵀ)/2 with zero diagonal, in place.
void symmetrize_zero_diag(std::vector<double> &J, int L);
// Mean row sum r of J and the largest deviation of a row sum from r.
double row_sum_mean(const std::vector<double> &J, int L, double *max_dev = nullptr);

// Integrated autocorrelation time (Sokal's automatic window, c = window_c) of a series.
double tau_int(const double *x, size_t n, double window_c = 5.0);

struct EquilibrationOptions {
  int burnin = 300;          // B: compare after B and 2B sweeps
  int chains = 4000;         // ensemble for the conditional-entropy curve
  int window = 100;          // the values "after B" and "after 2B" are averages over sweeps [B, B+window)
  int tau_chains = 8;        // chains for the energy autocorrelation
  int tau_sweeps = 2000;     // sweeps per autocorrelation chain, recorded after B burn-in sweeps
  double entropy_tol = 0.005;
  double max_freq_limit = 0.3;
  ParallelFor parallel;      // loop over independent chains; empty = serial
};

struct EquilibrationReport {
  std::vector<double> sweeps;         // checkpoints
  std::vector<double> cond_entropy;   // mean conditional entropy per site (nats) at each checkpoint
  std::vector<double> cond_entropy_se;
  double entropy_B = 0, entropy_2B = 0, entropy_diff = 0, entropy_diff_se = 0;
  double tau_int_energy = 0;          // in sweeps
  double max_site_freq = 0;           // top single-site colour frequency (from the 2B states)
  bool entropy_ok = false, freq_ok = false, equilibrated = false;
};

am_status equilibration_report(am_context *ctx, const Model &m, const EquilibrationOptions &o, const am_rng &rng,
                               EquilibrationReport &rep);

// Top single-site colour frequency over a sample.
double max_site_frequency(const int32_t *tokens, size_t M, int L, int C);

}  // namespace am::potts
#endif
