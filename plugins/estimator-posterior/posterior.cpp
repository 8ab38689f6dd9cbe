// attnmech posterior — chains, summaries, record (see posterior.h).
#include "posterior.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>
#include <thread>

namespace am::posterior {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
// Stream id of the fixed weights in fix_all_but_readout mode (chains use 0..chains−1).
const uint64_t kFixedStream = 0x7F1C5EDull << 20;
// Child stream of a chain's stream for the conditional draws of V_0 in the marginal sampler.
const uint64_t kV0Stream = 0x5E0ull << 32;
}  // namespace

double e_bfmi(const std::vector<double> &energy) {
  const size_t n = energy.size();
  if (n < 3) return kNaN;
  double mean = 0;
  for (double e : energy) mean += e;
  mean /= static_cast<double>(n);
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    den += (energy[i] - mean) * (energy[i] - mean);
    if (i > 0) num += (energy[i] - energy[i - 1]) * (energy[i] - energy[i - 1]);
  }
  return den > 0 ? num / den : kNaN;
}

std::vector<size_t> tracked_indices(size_t Pt, size_t k) {
  std::vector<size_t> idx;
  k = std::min(k, Pt);
  for (size_t i = 0; i < k; ++i) idx.push_back(i * Pt / k);
  return idx;
}

namespace {

// A chain's side of the live counters the monitor reads, and the stop flag.
struct ChainLive {
  std::atomic<int> &iters;
  std::atomic<long long> &divs;
  const std::atomic<bool> &stop;
  const std::function<void()> &tick;
  bool stopped() const { return stop.load(std::memory_order_relaxed); }
  void divergence() { divs.fetch_add(1, std::memory_order_relaxed); }
  void iteration_done() {
    iters.fetch_add(1, std::memory_order_relaxed);
    if (tick) tick();
  }
};

// Warm-up (step size and metric adaptation): at most `warmup` transitions, fewer when stopped.
void warm_up(Sampler &sampler, int warmup, ChainOutput &out, ChainLive &live) {
  sampler.begin_warmup();
  for (int it = 0; it < warmup; ++it) {
    if (live.stopped()) break;
    const TransitionInfo info = sampler.warmup_step();
    ++out.warmup_done;
    if (info.divergent) {
      ++out.warmup_divergences;
      live.divergence();
    }
    live.iteration_done();
  }
  sampler.end_warmup();
}

// What each draw adds to a chain's output: U, the test predictions (running mean and M2 by Welford, the tracked
// ones) and, with keep_draws, the weights.
struct DrawRecorder {
  const Network &net;
  size_t Pt;
  const double *xi_test;
  std::vector<size_t> track;
  bool keep_draws;
  Network::Work wk;
  std::vector<double> f, U;

  DrawRecorder(const Network &n, size_t Pt_, const double *xi, const PosteriorSettings &st)
      : net(n), Pt(Pt_), xi_test(xi), track(tracked_indices(Pt_, st.track_test)), keep_draws(st.keep_draws),
        f(Pt_), U(n.paths() * n.paths()) {
    net.init_work(wk);
  }

  // The output's buffers, sized for the draws to come.
  void prepare(const PosteriorSettings &st, ChainOutput &out) const {
    const size_t H = net.paths(), nt = track.size();
    out.f_mean.assign(Pt, 0.0);
    out.f_m2.assign(Pt, 0.0);
    out.depth_hist.assign(static_cast<size_t>(std::max(0, st.sampler.max_tree_depth)) + 1, 0);
    const size_t reserve = static_cast<size_t>(std::min(st.sampler.samples, 100000));  // grows beyond if asked
    out.logp.reserve(reserve);
    out.energy.reserve(reserve);
    out.U.reserve(reserve * H * H);
    out.f_tracked.reserve(reserve * nt);
  }

  void record(const double *theta, ChainOutput &out) {
    net.order_parameter(theta, U.data(), wk);
    out.U.insert(out.U.end(), U.begin(), U.end());
    if (Pt > 0) {
      net.predict(theta, Pt, xi_test, f.data(), wk);
      const double n = static_cast<double>(out.samples_done);
      for (size_t i = 0; i < Pt; ++i) {  // Welford
        const double delta = f[i] - out.f_mean[i];
        out.f_mean[i] += delta / n;
        out.f_m2[i] += delta * (f[i] - out.f_mean[i]);
      }
      for (size_t k = 0; k < track.size(); ++k) out.f_tracked.push_back(f[track[k]]);
    }
    if (keep_draws) out.draws.insert(out.draws.end(), theta, theta + net.dim());
  }
};

// The sampling phase: at most `samples` transitions (fewer when stopped), each recorded. With the marginal
// sampler, each draw of the sampled weights is completed by a conditional draw of V_0 (from v0_rng).
void sample(Sampler &sampler, int samples, NetworkDensity &density, MarginalDensity *marginal, am_rng &v0_rng,
            DrawRecorder &rec, ChainOutput &out, ChainLive &live) {
  for (int it = 0; it < samples; ++it) {
    if (live.stopped()) break;
    const TransitionInfo info = sampler.sample_step();
    ++out.samples_done;
    if (info.divergent) {
      ++out.divergences;
      live.divergence();
    }
    out.accept_sum += info.accept_stat;
    if (info.tree_depth >= 0 && static_cast<size_t>(info.tree_depth) < out.depth_hist.size())
      ++out.depth_hist[static_cast<size_t>(info.tree_depth)];
    const double *theta = nullptr;
    if (marginal) {
      theta = marginal->complete(sampler.position().data(), v0_rng);
      if (!theta) throw std::runtime_error("the marginal kernel K_U + T I is not positive definite at a draw");
      // the joint log posterior of the completed weights: the same quantity as the full sampler's
      out.logp.push_back(rec.net.log_posterior(theta, nullptr, rec.wk));
    } else {
      theta = density.full_theta(sampler.position().data());
      out.logp.push_back(info.log_density);
    }
    out.energy.push_back(info.energy);
    rec.record(theta, out);
    live.iteration_done();
  }
}

void run_one_chain(const Network &net, const PairKernels *kernels, size_t Pt, const double *xi_test,
                   const PosteriorSettings &st, const am_rng &parent, int chain, const std::vector<double> &fixed,
                   ChainOutput &out,
                   std::atomic<int> &iters, std::atomic<long long> &divs, const std::atomic<bool> &stop,
                   const std::function<void()> &tick) {
  const auto t0 = std::chrono::steady_clock::now();
  am_rng rng;
  am_rng_split(&parent, static_cast<uint64_t>(chain), &rng);
  NetworkDensity density(net, st.fix_all_but_readout, st.fix_all_but_readout ? fixed.data() : nullptr);
  std::unique_ptr<MarginalDensity> marginal;
  if (kernels) marginal.reset(new MarginalDensity(net, *kernels));
  // The conditional draws of V_0 use their own stream (child kV0Stream of the chain's), so the sampler's stream
  // is the same as without them.
  am_rng v0_rng;
  am_rng_split(&rng, kV0Stream, &v0_rng);
  Sampler sampler(marginal ? static_cast<LogDensity &>(*marginal) : static_cast<LogDensity &>(density), st.sampler,
                  rng);
  if (!sampler.init_uniform(st.init_radius)) {
    out.error = "no finite starting point found";
    return;
  }
  DrawRecorder rec(net, Pt, xi_test, st);
  rec.prepare(st, out);
  ChainLive live{iters, divs, stop, tick};
  warm_up(sampler, st.sampler.warmup, out, live);
  out.step_size = sampler.step_size();
  if (out.warmup_done == st.sampler.warmup)
    sample(sampler, st.sampler.samples, density, marginal.get(), v0_rng, rec, out, live);
  out.gradient_evaluations = sampler.gradient_evaluations();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The chains' live counters and the monitor, polled from the calling thread at most every 200 ms.
class Watch {
 public:
  Watch(size_t chains, const MonitorFn &monitor) : iters_(chains), divs_(chains), prog_(chains), monitor_(monitor) {
    for (size_t c = 0; c < chains; ++c) {
      iters_[c] = 0;
      divs_[c] = 0;
    }
  }
  std::atomic<int> &iters(size_t c) { return iters_[c]; }
  std::atomic<long long> &divs(size_t c) { return divs_[c]; }
  const std::atomic<bool> &stop() const { return stop_; }
  bool asked_stop() const { return asked_stop_; }
  void chain_started() { started_.fetch_add(1); }
  void chain_done() { finished_.fetch_add(1); }
  // Chains that run on other workers now (a host that runs the chunks one after another has none).
  bool others_running() const { return started_.load() > finished_.load(); }
  // Calls the monitor if 200 ms have passed since the last call (or `now`).
  void poll(bool now = false) {
    const auto t = std::chrono::steady_clock::now();
    if (!monitor_ || asked_stop_ || (!now && t - last_ < std::chrono::milliseconds(200))) return;
    last_ = t;
    for (size_t c = 0; c < prog_.size(); ++c) {
      prog_[c].iterations = iters_[c].load();
      prog_[c].divergences = divs_[c].load();
    }
    if (!monitor_(prog_)) {
      asked_stop_ = true;
      stop_.store(true);
    }
  }

 private:
  std::vector<std::atomic<int>> iters_;
  std::vector<std::atomic<long long>> divs_;
  std::vector<ChainProgress> prog_;
  const MonitorFn &monitor_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> started_{0}, finished_{0};
  bool asked_stop_ = false;  // touched by the calling thread only
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};
}  // namespace

std::vector<ChainOutput> run_chains(const Network &net, size_t Pt, const double *xi_test,
                                    const PosteriorSettings &st, const am_rng &parent, const MonitorFn &monitor,
                                    bool *interrupted, const am::sdk::ParallelFor &pf) {
  const size_t C = static_cast<size_t>(std::max(1, st.chains));
  std::vector<ChainOutput> outs(C);
  std::vector<double> fixed;
  if (st.fix_all_but_readout) {
    am_rng frng;
    am_rng_split(&parent, kFixedStream, &frng);
    fixed.assign(net.dim(), 0.0);
    net.sample_prior(frng, fixed.data());
  }
  Watch watch(C, monitor);
  const std::function<void()> tick = [&watch] { watch.poll(); };
  const am::sdk::BlasThreads blas_guard(1);  // the chains run on their own threads
  // the pair kernels of the marginal model (after the guard: the same bits whatever BLAS's thread count)
  std::unique_ptr<PairKernels> kernels;
  if (st.marginal && !st.fix_all_but_readout) kernels.reset(new PairKernels(net));
  // Worker 0 is the calling thread: it polls the monitor while it samples and, its chains done, while chains
  // of other workers run.
  pf(C, [&](size_t begin, size_t end, int worker) {
    for (size_t c = begin; c < end; ++c) {
      watch.chain_started();
      try {
        run_one_chain(net, kernels.get(), Pt, xi_test, st, parent, static_cast<int>(c), fixed, outs[c], watch.iters(c),
                      watch.divs(c), watch.stop(), worker == 0 ? tick : std::function<void()>());
      } catch (const std::exception &e) {
        outs[c].error = e.what();
      } catch (...) {
        outs[c].error = "unknown exception";
      }
      watch.chain_done();
    }
    if (worker != 0) return;
    while (watch.others_running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      watch.poll();
    }
  });
  if (interrupted) *interrupted = watch.asked_stop();
  return outs;
}

Summary summarize(const std::vector<ChainOutput> &chains, size_t H, size_t Pt, const double *y_test,
                  const PosteriorSettings &st) {
  Summary sum;
  std::vector<const ChainOutput *> ok;
  for (const auto &c : chains)
    if (c.error.empty() && c.samples_done > 0) ok.push_back(&c);
  size_t n = ok.empty() ? 0 : static_cast<size_t>(ok[0]->samples_done);
  for (const ChainOutput *c : ok) {
    n = std::min(n, static_cast<size_t>(c->samples_done));
    sum.total_draws += static_cast<size_t>(c->samples_done);
  }
  sum.draws_per_chain = n;
  const double total = static_cast<double>(sum.total_draws);

  // test predictor: pooled mean and unbiased variance over all draws (chains combined in order)
  sum.test_mean.assign(Pt, kNaN);
  sum.test_var.assign(Pt, kNaN);
  sum.accuracy = kNaN;
  if (Pt > 0 && !ok.empty()) {
    std::vector<double> mean(Pt, 0.0), m2(Pt, 0.0);
    double cnt = 0;
    for (const ChainOutput *c : ok) {
      const double nb = static_cast<double>(c->samples_done);
      for (size_t i = 0; i < Pt; ++i) {
        const double delta = c->f_mean[i] - mean[i];
        const double nn = cnt + nb;
        mean[i] += delta * nb / nn;
        m2[i] += c->f_m2[i] + delta * delta * cnt * nb / nn;
      }
      cnt += nb;
    }
    for (size_t i = 0; i < Pt; ++i) {
      sum.test_mean[i] = mean[i];
      sum.test_var[i] = cnt > 1 ? m2[i] / (cnt - 1) : kNaN;
    }
    if (y_test) {
      size_t right = 0;
      for (size_t i = 0; i < Pt; ++i)
        if ((mean[i] > 0 && y_test[i] > 0) || (mean[i] < 0 && y_test[i] < 0)) ++right;
      sum.accuracy = static_cast<double>(right) / static_cast<double>(Pt);
    }
  }
  sum.tracked = tracked_indices(Pt, st.track_test);

  // U: mean over all draws; diagnostics on the common length
  sum.U.assign(H * H, kNaN);
  sum.U_stderr.assign(H * H, kNaN);
  sum.U_diag.assign(H * H, Diagnostics{});
  if (!ok.empty()) {
    for (size_t e = 0; e < H * H; ++e) {
      double s = 0;
      for (const ChainOutput *c : ok)
        for (int k = 0; k < c->samples_done; ++k) s += c->U[static_cast<size_t>(k) * H * H + e];
      sum.U[e] = s / total;
    }
  }
  auto gather = [&](auto getter) {
    Chains ch;
    for (const ChainOutput *c : ok) {
      std::vector<double> v(n);
      for (size_t k = 0; k < n; ++k) v[k] = getter(*c, k);
      ch.push_back(std::move(v));
    }
    return ch;
  };
  for (size_t j = 0; j < H; ++j)
    for (size_t i = 0; i <= j; ++i) {
      const size_t e = i + H * j;
      const Diagnostics d = diagnose(gather([&](const ChainOutput &c, size_t k) { return c.U[k * H * H + e]; }));
      sum.U_diag[e] = d;
      sum.U_diag[j + H * i] = d;
      // MCSE of the mean over all draws: sd / √ESS (ESS of the raw split chains)
      sum.U_stderr[e] = sum.U_stderr[j + H * i] = d.mcse;
    }
  sum.logp_diag = diagnose(gather([](const ChainOutput &c, size_t k) { return c.logp[k]; }));
  const size_t nt = sum.tracked.size();
  for (size_t t = 0; t < nt; ++t)
    sum.test_diag.push_back(
        diagnose(gather([&](const ChainOutput &c, size_t k) { return c.f_tracked[k * nt + t]; })));
  return sum;
}

namespace {
am_status set_num(am_record *o, const char *key, double v) {
  return std::isfinite(v) ? am_record_set_number(o, key, v) : am_record_set_null(o, key);
}

am_status set_diag(am_record *o, const Diagnostics &d) {
  am_status st = AM_OK;
  if (st == AM_OK) st = set_num(o, "rhat", d.rhat);
  if (st == AM_OK) st = set_num(o, "ess_bulk", d.ess_bulk);
  if (st == AM_OK) st = set_num(o, "ess_mean", d.ess_mean);
  if (st == AM_OK) st = set_num(o, "mean", d.mean);
  if (st == AM_OK) st = set_num(o, "sd", d.sd);
  if (st == AM_OK) st = set_num(o, "mcse", d.mcse);
  return st;
}

const char *algorithm_name(Algorithm a) { return a == Algorithm::nuts ? "nuts" : "hmc"; }

// The first failed write of a record; later writes still go ahead (the record keeps what could be written).
struct FirstError {
  am_status s = AM_OK;
  void operator()(am_status r) {
    if (s == AM_OK && r != AM_OK) s = r;
  }
};

// posterior.diagnostics.chains: one entry per chain; *total_div = the divergences after warm-up of all.
am_status write_chains(am_record *diag, const std::vector<ChainOutput> &chains, long long *total_div,
                       FirstError &chk) {
  am_record *list = am_record_list(diag, "chains");
  if (!list) return AM_ERR_NO_MEMORY;
  *total_div = 0;
  for (size_t c = 0; c < chains.size(); ++c) {
    const ChainOutput &co = chains[c];
    am_record *o = am_record_append_object(list);
    if (!o) return AM_ERR_NO_MEMORY;
    *total_div += co.divergences;
    chk(am_record_set_number(o, "chain", static_cast<double>(c)));
    chk(am_record_set_number(o, "warmup_iterations", co.warmup_done));
    chk(am_record_set_number(o, "samples", co.samples_done));
    chk(am_record_set_number(o, "divergences", static_cast<double>(co.divergences)));
    chk(am_record_set_number(o, "warmup_divergences", static_cast<double>(co.warmup_divergences)));
    chk(set_num(o, "mean_accept", co.samples_done > 0 ? co.accept_sum / co.samples_done : kNaN));
    chk(set_num(o, "step_size", co.step_size));
    chk(set_num(o, "e_bfmi", e_bfmi(co.energy)));
    std::vector<double> hist(co.depth_hist.begin(), co.depth_hist.end());
    chk(am_record_set_vector(o, "tree_depth_histogram", hist.data(), hist.size()));
    chk(am_record_set_number(o, "gradient_evaluations", static_cast<double>(co.gradient_evaluations)));
    chk(am_record_set_number(o, "seconds", co.seconds));
    if (!co.error.empty()) chk(am_record_set_string(o, "error", co.error.c_str()));
  }
  return AM_OK;
}

// The convergence diagnostics: log posterior, every U entry, the tracked test outputs, and the worst R-hat and
// bulk ESS over all of them.
am_status write_convergence(am_record *diag, const Summary &sum, size_t H, FirstError &chk) {
  am_record *lp = am_record_object(diag, "log_posterior");
  if (!lp) return AM_ERR_NO_MEMORY;
  chk(set_diag(lp, sum.logp_diag));
  std::vector<double> rh(H * H), eb(H * H);
  double max_rhat = kNaN, min_ess = kNaN;
  auto track = [&](const Diagnostics &d) {
    if (std::isfinite(d.rhat)) max_rhat = std::isnan(max_rhat) ? d.rhat : std::max(max_rhat, d.rhat);
    if (std::isfinite(d.ess_bulk)) min_ess = std::isnan(min_ess) ? d.ess_bulk : std::min(min_ess, d.ess_bulk);
  };
  for (size_t e = 0; e < H * H; ++e) {
    rh[e] = sum.U_diag[e].rhat;
    eb[e] = sum.U_diag[e].ess_bulk;
    track(sum.U_diag[e]);
  }
  track(sum.logp_diag);
  am_record *ud = am_record_object(diag, "U");
  if (!ud) return AM_ERR_NO_MEMORY;
  chk(am_record_set_matrix(ud, "rhat", rh.data(), H, H, H));
  chk(am_record_set_matrix(ud, "ess_bulk", eb.data(), H, H, H));
  if (!sum.tracked.empty()) {
    am_record *td = am_record_object(diag, "test");
    if (!td) return AM_ERR_NO_MEMORY;
    std::vector<double> idx, trh, tes;
    for (size_t k = 0; k < sum.tracked.size(); ++k) {
      idx.push_back(static_cast<double>(sum.tracked[k]));
      trh.push_back(sum.test_diag[k].rhat);
      tes.push_back(sum.test_diag[k].ess_bulk);
      track(sum.test_diag[k]);
    }
    chk(am_record_set_vector(td, "indices", idx.data(), idx.size()));
    chk(am_record_set_vector(td, "rhat", trh.data(), trh.size()));
    chk(am_record_set_vector(td, "ess_bulk", tes.data(), tes.size()));
  }
  chk(set_num(diag, "max_rhat", max_rhat));
  chk(set_num(diag, "min_ess_bulk", min_ess));
  return AM_OK;
}

// posterior.settings: the sampler settings of the run.
am_status write_settings(am_record *post, const PosteriorSettings &st, uint64_t seed, FirstError &chk) {
  am_record *set = am_record_object(post, "settings");
  if (!set) return AM_ERR_NO_MEMORY;
  chk(am_record_set_number(set, "chains", st.chains));
  chk(am_record_set_number(set, "warmup", st.sampler.warmup));
  chk(am_record_set_number(set, "samples", st.sampler.samples));
  chk(am_record_set_string(set, "sampler", algorithm_name(st.sampler.algorithm)));
  chk(am_record_set_number(set, "step_size", st.sampler.step_size));
  chk(am_record_set_number(set, "hmc_steps", st.sampler.hmc_steps));
  chk(am_record_set_number(set, "max_tree_depth", st.sampler.max_tree_depth));
  chk(am_record_set_number(set, "target_accept", st.sampler.target_accept));
  chk(am_record_set_bool(set, "fix_all_but_readout", st.fix_all_but_readout ? 1 : 0));
  chk(am_record_set_string(set, "model", st.marginal && !st.fix_all_but_readout ? "marginal" : "full"));
  chk(am_record_set_number(set, "init_radius", st.init_radius));
  chk(am_record_set_number(set, "seed", static_cast<double>(seed)));
  return AM_OK;
}
}  // namespace

am_status write_record(am_context *ctx, am_record *run, const std::vector<ChainOutput> &chains, const Summary &sum,
                       size_t H, const PosteriorSettings &st, bool interrupted, uint64_t seed) {
  am_record *post = am_record_object(run, "posterior");
  if (!post) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "posterior: cannot create the result record");
  FirstError chk;
  if (!sum.test_mean.empty()) {  // datasets without a test split have no test predictions
    am_record *test = am_record_object(post, "test");
    if (!test) return AM_ERR_NO_MEMORY;
    chk(am_record_set_vector(test, "mean", sum.test_mean.data(), sum.test_mean.size()));
    chk(am_record_set_vector(test, "var", sum.test_var.data(), sum.test_var.size()));
    chk(set_num(test, "accuracy", sum.accuracy));
  }
  chk(am_record_set_matrix(post, "U", sum.U.data(), H, H, H));
  chk(am_record_set_matrix(post, "U_stderr", sum.U_stderr.data(), H, H, H));
  chk(am_record_set_bool(post, "interrupted", interrupted ? 1 : 0));
  chk(am_record_set_number(post, "draws", static_cast<double>(sum.total_draws)));
  am_record *diag = am_record_object(post, "diagnostics");
  if (!diag) return AM_ERR_NO_MEMORY;
  long long total_div = 0;
  AM_SDK_TRY(write_chains(diag, chains, &total_div, chk));
  chk(am_record_set_number(diag, "divergences", static_cast<double>(total_div)));
  chk(am_record_set_number(diag, "draws_per_chain", static_cast<double>(sum.draws_per_chain)));
  AM_SDK_TRY(write_convergence(diag, sum, H, chk));
  AM_SDK_TRY(write_settings(post, st, seed, chk));
  if (chk.s != AM_OK) return am_context_fail(ctx, chk.s, "posterior: cannot write the result record");
  return AM_OK;
}

void log_warnings(am_context *ctx, const std::vector<ChainOutput> &chains, const Summary &sum, size_t H,
                  am_record *run) {
  // One line per kind of problem, naming at most 8 quantities. The ones that make the draws untrustworthy
  // (R-hat > 1.01, divergences after warm-up, a failed chain) also go to the run's `warnings` list, which
  // gives the run the status "warning" (docs/results-schema.md).
  am_record *list = run ? am_record_list(run, "warnings") : nullptr;
  auto warn = [&](bool keep, const char *fmt, auto... args) {
    char line[768];
    std::snprintf(line, sizeof line, fmt, args...);
    am_context_log(ctx, AM_LOG_WARN, "%s", line);
    if (keep && list) am_record_append_string(list, line);
  };
  std::string rhat_list, ess_list;
  int n_rhat = 0, n_ess = 0;
  auto check = [&](const std::string &what, const Diagnostics &d) {
    char buf[96];
    if (std::isfinite(d.rhat) && d.rhat > 1.01) {
      if (n_rhat++ < 8) {
        std::snprintf(buf, sizeof buf, "%s%s %.3f", rhat_list.empty() ? "" : ", ", what.c_str(), d.rhat);
        rhat_list += buf;
      }
    }
    if (std::isfinite(d.ess_bulk) && d.ess_bulk < 100) {
      if (n_ess++ < 8) {
        std::snprintf(buf, sizeof buf, "%s%s %.0f", ess_list.empty() ? "" : ", ", what.c_str(), d.ess_bulk);
        ess_list += buf;
      }
    }
  };
  check("log posterior", sum.logp_diag);
  char name[64];
  for (size_t j = 0; j < H; ++j)
    for (size_t i = 0; i <= j; ++i) {
      std::snprintf(name, sizeof name, "U[%zu,%zu]", i, j);
      check(name, sum.U_diag[i + H * j]);
    }
  for (size_t k = 0; k < sum.tracked.size(); ++k) {
    std::snprintf(name, sizeof name, "f(test %zu)", sum.tracked[k]);
    check(name, sum.test_diag[k]);
  }
  // Each kind of problem also says, once, what it means and what to change (docs/posterior.md "Warnings").
  if (n_rhat > 0) {
    warn(true, "posterior: R-hat > 1.01 (chains not mixed) for %d quantities: %s%s", n_rhat, rhat_list.c_str(),
         n_rhat > 8 ? ", ..." : "");
    warn(false, "posterior: R-hat > 1.01 means the chains disagree, so the draws do not yet represent the posterior: "
         "run longer (--set warmup=2000 --set samples=2000) and check again");
  }
  if (n_ess > 0) {
    warn(false, "posterior: bulk ESS < 100 for %d quantities: %s%s", n_ess, ess_list.c_str(), n_ess > 8 ? ", ..." : "");
    warn(false, "posterior: a bulk ESS < 100 means too few independent draws for a reliable mean and R-hat: raise "
         "samples (or chains)");
  }
  long long divergent = 0;
  bool low_bfmi = false;
  for (size_t c = 0; c < chains.size(); ++c) {
    if (!chains[c].error.empty()) warn(true, "posterior: chain %zu failed: %s", c, chains[c].error.c_str());
    const double bfmi = e_bfmi(chains[c].energy);
    low_bfmi = low_bfmi || (std::isfinite(bfmi) && bfmi < 0.3);
    if (std::isfinite(bfmi) && bfmi < 0.3)
      warn(false, "posterior: chain %zu has E-BFMI %.2f (< 0.3): the momentum resampling explores the energy "
           "distribution poorly", c, bfmi);
    divergent += chains[c].divergences;
    if (chains[c].divergences > 0)
      warn(true, "posterior: chain %zu had %lld divergent transitions after warm-up", c, chains[c].divergences);
  }
  if (divergent > 0)
    warn(false, "posterior: a divergent transition is a step too large for the posterior's curvature there, so the "
         "draws may miss that region (biased): raise target_accept (e.g. --set target_accept=0.95: smaller steps) "
         "and warmup (a longer adaptation); model=full diverges more often than the default model=marginal");
  if (low_bfmi)
    warn(false, "posterior: a low E-BFMI means the sampler moves slowly between energy levels (a badly scaled or "
         "heavy-tailed posterior), so the draws mix slowly: raise warmup (a longer adaptation of the metric)");
  if (list && am_record_size(list) == 0) am_record_remove(run, "warnings");
}

}  // namespace am::posterior
