// attnmech posterior — NUTS / HMC engine (see nuts.h).
#include "nuts.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace am::posterior {

namespace {
const double kInf = std::numeric_limits<double>::infinity();

double log_sum_exp(double a, double b) {
  if (a == -kInf) return b;
  if (b == -kInf) return a;
  const double m = std::max(a, b);
  return m + std::log(std::exp(a - m) + std::exp(b - m));
}
}  // namespace

Sampler::Sampler(LogDensity &model, const SamplerSettings &settings, am_rng rng)
    : model_(model), s_(settings), rng_(rng), d_(model.dim()) {
  auto init_state = [this](State &z) {
    z.q.assign(d_, 0.0);
    z.p.assign(d_, 0.0);
    z.g.assign(d_, 0.0);
  };
  q_.assign(d_, 0.0);
  g_.assign(d_, 0.0);
  inv_metric_.assign(d_, 1.0);
  for (State *z : {&z_, &z_fwd_, &z_bck_, &z_sample_, &z_propose_, &z_init_}) init_state(*z);
  for (std::vector<double> *v : {&rho_, &rho_fwd_, &rho_bck_, &p_fwd_fwd_, &p_fwd_bck_, &p_bck_fwd_, &p_bck_bck_,
                                 &ps_fwd_fwd_, &ps_fwd_bck_, &ps_bck_fwd_, &ps_bck_bck_, &rho_ext_})
    v->assign(d_, 0.0);
  if (s_.algorithm == Algorithm::nuts) {
    // levels are allocated on first use (deep trees are rare for most targets; each level holds ~10 d)
    levels_.resize(static_cast<size_t>(std::max(1, s_.max_tree_depth)) + 1);
  }
  if (s_.step_size > 0) eps_ = s_.step_size;
}

bool Sampler::set_position(const double *q) {
  std::copy(q, q + d_, q_.begin());
  logp_ = model_.log_density(q_.data(), g_.data());
  ++n_grad_;
  if (!std::isfinite(logp_)) return false;
  for (double v : g_)
    if (!std::isfinite(v)) return false;
  return true;
}

bool Sampler::init_uniform(double radius) {
  std::vector<double> q(d_);
  for (int attempt = 0; attempt < 100; ++attempt) {
    for (double &v : q) v = radius * (2.0 * am_rng_uniform(&rng_) - 1.0);
    if (set_position(q.data())) return true;
  }
  return false;
}

void Sampler::copy_state(State &dst, const State &src) const {
  std::copy(src.q.begin(), src.q.end(), dst.q.begin());
  std::copy(src.p.begin(), src.p.end(), dst.p.begin());
  std::copy(src.g.begin(), src.g.end(), dst.g.begin());
  dst.logp = src.logp;
}

void Sampler::sample_momentum(State &z) {
  // p ~ N(0, M) with M = diag(1/inv_metric)
  for (size_t i = 0; i < d_; ++i) z.p[i] = am_rng_normal(&rng_) / std::sqrt(inv_metric_[i]);
}

double Sampler::kinetic(const std::vector<double> &p) const {
  double k = 0;
  for (size_t i = 0; i < d_; ++i) k += inv_metric_[i] * p[i] * p[i];
  return 0.5 * k;
}

double Sampler::hamiltonian(const State &z) const {
  const double h = -z.logp + kinetic(z.p);
  return std::isnan(h) ? kInf : h;
}

void Sampler::sharp(const std::vector<double> &p, std::vector<double> &out) const {
  for (size_t i = 0; i < d_; ++i) out[i] = inv_metric_[i] * p[i];
}

void Sampler::leapfrog(State &z, double eps) {
  const double half = 0.5 * eps;
  for (size_t i = 0; i < d_; ++i) z.p[i] += half * z.g[i];
  for (size_t i = 0; i < d_; ++i) z.q[i] += eps * inv_metric_[i] * z.p[i];
  z.logp = model_.log_density(z.q.data(), z.g.data());
  ++n_grad_;
  if (!std::isfinite(z.logp)) {
    z.logp = -kInf;  // divergent; the gradient is not used any more
    return;
  }
  for (size_t i = 0; i < d_; ++i) z.p[i] += half * z.g[i];
}

bool Sampler::criterion(const std::vector<double> &ps_minus, const std::vector<double> &ps_plus,
                        const std::vector<double> &rho) const {
  double a = 0, b = 0;
  for (size_t i = 0; i < d_; ++i) {
    a += ps_plus[i] * rho[i];
    b += ps_minus[i] * rho[i];
  }
  return a > 0 && b > 0;
}

// ------------------------------------------------------------------------------------------ NUTS
bool Sampler::build_tree(int depth, State &z_propose, std::vector<double> &ps_beg, std::vector<double> &ps_end,
                         std::vector<double> &rho, std::vector<double> &p_beg, std::vector<double> &p_end,
                         double H0, int sign, int &n_leapfrog, double &log_sum_weight, double &sum_metro_prob) {
  if (depth == 0) {
    leapfrog(z_, sign * eps_);
    ++n_leapfrog;
    const double h = hamiltonian(z_);
    if (h - H0 > s_.max_delta_h) divergent_ = true;
    log_sum_weight = log_sum_exp(log_sum_weight, H0 - h);
    sum_metro_prob += (H0 - h > 0) ? 1.0 : std::exp(H0 - h);
    copy_state(z_propose, z_);
    sharp(z_.p, ps_beg);
    std::copy(ps_beg.begin(), ps_beg.end(), ps_end.begin());
    for (size_t i = 0; i < d_; ++i) rho[i] += z_.p[i];
    std::copy(z_.p.begin(), z_.p.end(), p_beg.begin());
    std::copy(z_.p.begin(), z_.p.end(), p_end.begin());
    return !divergent_;
  }
  Level &lv = levels_[static_cast<size_t>(depth)];
  if (lv.rho_init.empty()) {
    lv.propose_final.q.assign(d_, 0.0);
    lv.propose_final.p.assign(d_, 0.0);
    lv.propose_final.g.assign(d_, 0.0);
    for (std::vector<double> *v : {&lv.p_init_end, &lv.ps_init_end, &lv.rho_init, &lv.p_final_beg, &lv.ps_final_beg,
                                   &lv.rho_final, &lv.rho_ext})
      v->assign(d_, 0.0);
  }
  // initial subtree
  double lsw_init = -kInf;
  std::fill(lv.rho_init.begin(), lv.rho_init.end(), 0.0);
  if (!build_tree(depth - 1, z_propose, ps_beg, lv.ps_init_end, lv.rho_init, p_beg, lv.p_init_end, H0, sign,
                  n_leapfrog, lsw_init, sum_metro_prob))
    return false;
  // final subtree
  double lsw_final = -kInf;
  std::fill(lv.rho_final.begin(), lv.rho_final.end(), 0.0);
  if (!build_tree(depth - 1, lv.propose_final, lv.ps_final_beg, ps_end, lv.rho_final, lv.p_final_beg, p_end, H0,
                  sign, n_leapfrog, lsw_final, sum_metro_prob))
    return false;
  // multinomial sample from the right subtree (uniform progressive)
  const double lsw_subtree = log_sum_exp(lsw_init, lsw_final);
  log_sum_weight = log_sum_exp(log_sum_weight, lsw_subtree);
  if (lsw_final > lsw_subtree) {
    copy_state(z_propose, lv.propose_final);
  } else {
    const double accept = std::exp(lsw_final - lsw_subtree);
    if (am_rng_uniform(&rng_) < accept) copy_state(z_propose, lv.propose_final);
  }
  // rho_subtree = rho_init + rho_final (stored in rho_ext), rho += rho_subtree
  for (size_t i = 0; i < d_; ++i) {
    lv.rho_ext[i] = lv.rho_init[i] + lv.rho_final[i];
    rho[i] += lv.rho_ext[i];
  }
  bool persist = criterion(ps_beg, ps_end, lv.rho_ext);
  for (size_t i = 0; i < d_; ++i) lv.rho_ext[i] = lv.rho_init[i] + lv.p_final_beg[i];
  persist = persist && criterion(ps_beg, lv.ps_final_beg, lv.rho_ext);
  for (size_t i = 0; i < d_; ++i) lv.rho_ext[i] = lv.rho_final[i] + lv.p_init_end[i];
  persist = persist && criterion(lv.ps_init_end, ps_end, lv.rho_ext);
  return persist;
}

TransitionInfo Sampler::transition_nuts() {
  std::copy(q_.begin(), q_.end(), z_.q.begin());
  std::copy(g_.begin(), g_.end(), z_.g.begin());
  z_.logp = logp_;
  sample_momentum(z_);
  copy_state(z_fwd_, z_);
  copy_state(z_bck_, z_);
  copy_state(z_sample_, z_);
  copy_state(z_propose_, z_);

  std::copy(z_.p.begin(), z_.p.end(), p_fwd_fwd_.begin());
  sharp(z_.p, ps_fwd_fwd_);
  p_fwd_bck_ = p_fwd_fwd_;
  ps_fwd_bck_ = ps_fwd_fwd_;
  p_bck_fwd_ = p_fwd_fwd_;
  ps_bck_fwd_ = ps_fwd_fwd_;
  p_bck_bck_ = p_fwd_fwd_;
  ps_bck_bck_ = ps_fwd_fwd_;
  rho_ = z_.p;

  double log_sum_weight = 0;  // log of the weight of the initial point, exp(H0 − H0)
  const double H0 = hamiltonian(z_);
  int n_leapfrog = 0;
  double sum_metro_prob = 0;
  int depth = 0;
  divergent_ = false;

  while (depth < s_.max_tree_depth) {
    std::fill(rho_fwd_.begin(), rho_fwd_.end(), 0.0);
    std::fill(rho_bck_.begin(), rho_bck_.end(), 0.0);
    bool valid_subtree;
    double lsw_subtree = -kInf;
    if (am_rng_uniform(&rng_) > 0.5) {
      // extend forward from the forward end
      copy_state(z_, z_fwd_);
      rho_bck_ = rho_;
      p_bck_fwd_ = p_fwd_bck_;
      ps_bck_fwd_ = ps_fwd_bck_;
      valid_subtree = build_tree(depth, z_propose_, ps_fwd_bck_, ps_fwd_fwd_, rho_fwd_, p_fwd_bck_, p_fwd_fwd_, H0,
                                 1, n_leapfrog, lsw_subtree, sum_metro_prob);
      copy_state(z_fwd_, z_);
    } else {
      copy_state(z_, z_bck_);
      rho_fwd_ = rho_;
      p_fwd_bck_ = p_bck_fwd_;
      ps_fwd_bck_ = ps_bck_fwd_;
      valid_subtree = build_tree(depth, z_propose_, ps_bck_fwd_, ps_bck_bck_, rho_bck_, p_bck_fwd_, p_bck_bck_, H0,
                                 -1, n_leapfrog, lsw_subtree, sum_metro_prob);
      copy_state(z_bck_, z_);
    }
    if (!valid_subtree) break;
    ++depth;
    // biased progressive sampling between the old tree and the new subtree
    if (lsw_subtree > log_sum_weight) {
      copy_state(z_sample_, z_propose_);
    } else {
      const double accept = std::exp(lsw_subtree - log_sum_weight);
      if (am_rng_uniform(&rng_) < accept) copy_state(z_sample_, z_propose_);
    }
    log_sum_weight = log_sum_exp(log_sum_weight, lsw_subtree);
    for (size_t i = 0; i < d_; ++i) rho_[i] = rho_bck_[i] + rho_fwd_[i];
    bool persist = criterion(ps_bck_bck_, ps_fwd_fwd_, rho_);
    for (size_t i = 0; i < d_; ++i) rho_ext_[i] = rho_bck_[i] + p_fwd_bck_[i];
    persist = persist && criterion(ps_bck_bck_, ps_fwd_bck_, rho_ext_);
    for (size_t i = 0; i < d_; ++i) rho_ext_[i] = rho_fwd_[i] + p_bck_fwd_[i];
    persist = persist && criterion(ps_bck_fwd_, ps_fwd_fwd_, rho_ext_);
    if (!persist) break;
  }

  TransitionInfo info;
  info.tree_depth = depth;
  info.n_leapfrog = n_leapfrog;
  info.divergent = divergent_;
  info.accept_stat = n_leapfrog > 0 ? sum_metro_prob / n_leapfrog : 0.0;
  std::copy(z_sample_.q.begin(), z_sample_.q.end(), q_.begin());
  std::copy(z_sample_.g.begin(), z_sample_.g.end(), g_.begin());
  logp_ = z_sample_.logp;
  info.log_density = logp_;
  info.energy = hamiltonian(z_sample_);
  return info;
}

// ------------------------------------------------------------------------------------------- HMC
TransitionInfo Sampler::transition_hmc() {
  std::copy(q_.begin(), q_.end(), z_.q.begin());
  std::copy(g_.begin(), g_.end(), z_.g.begin());
  z_.logp = logp_;
  sample_momentum(z_);
  const double H0 = hamiltonian(z_);
  TransitionInfo info;
  int steps = std::max(1, s_.hmc_steps);
  for (int k = 0; k < steps; ++k) {
    leapfrog(z_, eps_);
    ++info.n_leapfrog;
    if (hamiltonian(z_) - H0 > s_.max_delta_h) {
      info.divergent = true;
      break;
    }
  }
  const double h = hamiltonian(z_);
  const double accept = info.divergent ? 0.0 : std::min(1.0, std::exp(H0 - h));
  info.accept_stat = accept;
  if (!info.divergent && am_rng_uniform(&rng_) < accept) {
    std::copy(z_.q.begin(), z_.q.end(), q_.begin());
    std::copy(z_.g.begin(), z_.g.end(), g_.begin());
    logp_ = z_.logp;
    info.energy = h;
  } else {
    info.energy = H0;
  }
  info.log_density = logp_;
  return info;
}

TransitionInfo Sampler::transition() {
  return s_.algorithm == Algorithm::nuts ? transition_nuts() : transition_hmc();
}

// ------------------------------------------------------------------------------------ adaptation
void Sampler::init_step_size() {
  // Stan's heuristic: double or halve ε until the acceptance of one leapfrog step crosses 0.8.
  if (!(eps_ > 0) || eps_ > 1e7 || std::isnan(eps_)) return;
  auto one_step = [this]() {
    std::copy(q_.begin(), q_.end(), z_init_.q.begin());
    std::copy(g_.begin(), g_.end(), z_init_.g.begin());
    z_init_.logp = logp_;
    sample_momentum(z_init_);
    const double H0 = hamiltonian(z_init_);
    leapfrog(z_init_, eps_);
    const double h = hamiltonian(z_init_);
    return H0 - h;
  };
  const double log08 = std::log(0.8);
  const int direction = one_step() > log08 ? 1 : -1;
  for (int it = 0; it < 200; ++it) {
    const double dh = one_step();
    if (direction == 1 && !(dh > log08)) break;
    if (direction == -1 && !(dh < log08)) break;
    eps_ = direction == 1 ? 2 * eps_ : 0.5 * eps_;
    if (eps_ > 1e7 || eps_ < 1e-300) break;
  }
}

void Sampler::da_restart() {
  da_counter_ = 0;
  da_sbar_ = 0;
  da_xbar_ = 0;
}

void Sampler::da_learn(double accept_stat) {
  ++da_counter_;
  accept_stat = std::min(1.0, accept_stat);
  const double n = static_cast<double>(da_counter_);
  const double eta = 1.0 / (n + s_.da_t0);
  da_sbar_ = (1.0 - eta) * da_sbar_ + eta * (s_.target_accept - accept_stat);
  const double x = da_mu_ - da_sbar_ * std::sqrt(n) / s_.da_gamma;
  const double x_eta = std::pow(n, -s_.da_kappa);
  da_xbar_ = (1.0 - x_eta) * da_xbar_ + x_eta * x;
  eps_ = std::exp(x);
}

bool Sampler::in_adaptation_window() const {
  return w_counter_ >= w_init_ && w_counter_ < s_.warmup - w_term_ && w_counter_ != s_.warmup;
}

bool Sampler::end_of_window() const { return w_counter_ == w_next_ && w_counter_ != s_.warmup; }

void Sampler::compute_next_window() {
  if (w_next_ == s_.warmup - w_term_ - 1) return;
  w_size_ *= 2;
  w_next_ = static_cast<int>(w_counter_) + w_size_;
  if (w_next_ != s_.warmup - w_term_ - 1) {
    const int boundary = w_next_ + 2 * w_size_;
    if (boundary >= s_.warmup - w_term_) w_next_ = s_.warmup - w_term_ - 1;
  }
}

bool Sampler::learn_metric() {
  if (in_adaptation_window()) {
    ++w_n_;
    for (size_t i = 0; i < d_; ++i) {  // Welford
      const double delta = q_[i] - w_mean_[i];
      w_mean_[i] += delta / static_cast<double>(w_n_);
      w_m2_[i] += delta * (q_[i] - w_mean_[i]);
    }
  }
  if (end_of_window()) {
    compute_next_window();
    const double n = static_cast<double>(w_n_);
    if (w_n_ >= 2) {
      for (size_t i = 0; i < d_; ++i) {
        const double var = w_m2_[i] / (n - 1.0);
        inv_metric_[i] = (n / (n + 5.0)) * var + 1e-3 * (5.0 / (n + 5.0));  // Stan's regularisation
      }
    }
    w_n_ = 0;
    std::fill(w_mean_.begin(), w_mean_.end(), 0.0);
    std::fill(w_m2_.begin(), w_m2_.end(), 0.0);
    ++w_counter_;
    return true;
  }
  ++w_counter_;
  return false;
}

void Sampler::begin_warmup() {
  if (s_.adapt_step_size) {
    init_step_size();
    da_mu_ = std::log(10.0 * eps_);
    da_restart();
  }
  metric_active_ = s_.adapt_metric && s_.warmup >= 20;
  if (metric_active_) {
    w_init_ = s_.init_buffer;
    w_term_ = s_.term_buffer;
    w_base_ = s_.base_window;
    if (w_init_ + w_base_ + w_term_ > s_.warmup) {
      w_init_ = static_cast<int>(0.15 * s_.warmup);
      w_term_ = static_cast<int>(0.1 * s_.warmup);
      w_base_ = s_.warmup - (w_init_ + w_term_);
    }
    w_counter_ = 0;
    w_size_ = w_base_;
    w_next_ = w_init_ + w_size_ - 1;
    w_n_ = 0;
    w_mean_.assign(d_, 0.0);
    w_m2_.assign(d_, 0.0);
  }
}

TransitionInfo Sampler::warmup_step() {
  TransitionInfo info = transition();
  if (s_.adapt_step_size) da_learn(info.accept_stat);
  if (metric_active_ && learn_metric()) {
    if (s_.adapt_step_size) {
      init_step_size();
      da_mu_ = std::log(10.0 * eps_);
      da_restart();
    }
  }
  return info;
}

void Sampler::end_warmup() {
  if (s_.adapt_step_size && da_counter_ > 0) eps_ = std::exp(da_xbar_);
}

TransitionInfo Sampler::sample_step() { return transition(); }

}  // namespace am::posterior
