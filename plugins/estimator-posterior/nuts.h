// attnmech posterior — a generic Hamiltonian Monte Carlo engine over a log density with gradient.
//
// NUTS as in Stan's base_nuts (multinomial trajectory sampling, biased progressive sampling between
// subtrees at the top level and uniform progressive sampling inside them, generalised no-U-turn
// criterion on the sharp momenta including the two extra checks across subtree boundaries,
// divergence when the energy error exceeds max_delta_h), plus plain HMC (fixed number of leapfrog
// steps, Metropolis correction). Warm-up (Stan's windowed adaptation): step size by dual averaging
// towards target_accept, a diagonal inverse metric estimated in doubling windows after an initial
// buffer, then a terminal buffer where only the step size is adapted.
//
// Randomness comes only from the am_rng passed in, so a chain is a pure function of its stream.
#ifndef ATTNMECH_POSTERIOR_NUTS_H
#define ATTNMECH_POSTERIOR_NUTS_H

#include <attnmech/rng.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace am::posterior {

// A differentiable log density (up to a constant). log_density returns log p(q) and writes its
// gradient; it may return -inf or NaN outside the support (the sampler treats that as divergent).
class LogDensity {
 public:
  virtual ~LogDensity() = default;
  virtual size_t dim() const = 0;
  virtual double log_density(const double *q, double *grad) = 0;
};

enum class Algorithm { nuts, hmc };

struct SamplerSettings {
  Algorithm algorithm = Algorithm::nuts;
  int warmup = 500;
  int samples = 500;
  int max_tree_depth = 10;
  double target_accept = 0.8;
  double step_size = 0.0;      // > 0: initial step; with adapt_step_size false it is kept fixed
  bool adapt_step_size = true; // dual averaging during warm-up
  bool adapt_metric = true;    // diagonal inverse metric during warm-up (needs warmup >= 20)
  int hmc_steps = 16;          // leapfrog steps per HMC transition
  double max_delta_h = 1000.0; // divergence threshold on H − H0 (Stan's value)
  // dual averaging constants (Stan defaults)
  double da_gamma = 0.05, da_kappa = 0.75, da_t0 = 10.0;
  // windowed adaptation (Stan defaults)
  int init_buffer = 75, term_buffer = 50, base_window = 25;
};

// What one transition did.
struct TransitionInfo {
  double log_density = 0;  // at the new point
  double accept_stat = 0;  // NUTS: mean Metropolis probability over the trajectory; HMC: min(1, e^{−ΔH})
  int tree_depth = 0;      // NUTS depth (HMC: 0)
  int n_leapfrog = 0;
  bool divergent = false;
  double energy = 0;       // Hamiltonian at the new point
};

// One chain: position, momentum, gradient, adapted step size and inverse metric, and the NUTS tree
// workspace (preallocated per depth so a transition does not allocate).
class Sampler {
 public:
  Sampler(LogDensity &model, const SamplerSettings &settings, am_rng rng);

  // Set the starting point (computes log density and gradient; false if not finite).
  bool set_position(const double *q);
  // Draw a starting point uniformly in [−radius, radius]^d (Stan/NumPyro default radius 2), retrying
  // up to 100 times until the log density and gradient are finite. False if that never happens.
  bool init_uniform(double radius);

  // Call once before warm-up: heuristic initial step size and dual-averaging restart.
  void begin_warmup();
  // One warm-up iteration (transition + adaptation); `iteration` counts from 0.
  TransitionInfo warmup_step();
  // Freeze adaptation (step size = exp(x̄) of dual averaging).
  void end_warmup();
  // One sampling iteration.
  TransitionInfo sample_step();

  const std::vector<double> &position() const { return q_; }
  double log_density() const { return logp_; }
  double step_size() const { return eps_; }
  const std::vector<double> &inv_metric() const { return inv_metric_; }
  long long gradient_evaluations() const { return n_grad_; }
  am_rng &rng() { return rng_; }

 private:
  struct State {
    std::vector<double> q, p, g;
    double logp = 0;
  };
  struct Level {  // scratch of one build_tree recursion level
    State propose_final;
    std::vector<double> p_init_end, ps_init_end, rho_init, p_final_beg, ps_final_beg, rho_final, rho_ext;
  };

  TransitionInfo transition();
  TransitionInfo transition_nuts();
  TransitionInfo transition_hmc();
  void init_step_size();
  void sample_momentum(State &z);
  double hamiltonian(const State &z) const;
  double kinetic(const std::vector<double> &p) const;
  void leapfrog(State &z, double eps);
  void sharp(const std::vector<double> &p, std::vector<double> &out) const;
  bool criterion(const std::vector<double> &ps_minus, const std::vector<double> &ps_plus,
                 const std::vector<double> &rho) const;
  bool build_tree(int depth, State &z_propose, std::vector<double> &ps_beg, std::vector<double> &ps_end,
                  std::vector<double> &rho, std::vector<double> &p_beg, std::vector<double> &p_end, double H0,
                  int sign, int &n_leapfrog, double &log_sum_weight, double &sum_metro_prob);
  void copy_state(State &dst, const State &src) const;
  // dual averaging
  void da_restart();
  void da_learn(double accept_stat);
  // windowed metric adaptation; returns true at the end of a window (metric updated)
  bool learn_metric();
  bool in_adaptation_window() const;
  bool end_of_window() const;
  void compute_next_window();

  LogDensity &model_;
  SamplerSettings s_;
  am_rng rng_;
  size_t d_;
  std::vector<double> q_, g_;
  double logp_ = 0;
  double eps_ = 1.0;
  std::vector<double> inv_metric_;
  long long n_grad_ = 0;
  // transition scratch
  State z_, z_fwd_, z_bck_, z_sample_, z_propose_, z_init_;
  std::vector<double> rho_, rho_fwd_, rho_bck_, p_fwd_fwd_, p_fwd_bck_, p_bck_fwd_, p_bck_bck_, ps_fwd_fwd_,
      ps_fwd_bck_, ps_bck_fwd_, ps_bck_bck_, rho_ext_;
  std::vector<Level> levels_;
  bool divergent_ = false;
  // dual averaging state
  double da_mu_ = 0, da_sbar_ = 0, da_xbar_ = 0;
  long da_counter_ = 0;
  // metric adaptation state
  bool metric_active_ = false;
  int w_init_ = 0, w_term_ = 0, w_base_ = 0, w_size_ = 0, w_next_ = 0;
  long w_counter_ = 0;
  long w_n_ = 0;
  std::vector<double> w_mean_, w_m2_;
};

}  // namespace am::posterior

#endif
