// attnmech posterior — the estimator plugin: descriptor, parameters and the estimate callback.
// The numerical work lives in posterior_core (nuts, diagnostics, network, posterior).
#include "posterior.h"

#include <attnmech/dataset.h>
#include <attnmech/plugin.hpp>
#include <attnmech/theory.h>

#include "estimate.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>

namespace am::posterior_plugin {
am_status describe(am_context *ctx, const am_record *results, am_record *report);
}  // namespace am::posterior_plugin

namespace {

struct Opt {
  int chains = 4, warmup = 500, samples = 500, hmc_steps = 16, max_tree_depth = 10;
  std::string sampler;
  double step_size = 0, target_accept = 0.8, init_radius = 2;
  bool fix_all_but_readout = false;
  std::string model, export_dir;
};

using am::sdk::param;
constexpr am::sdk::Param<Opt> kParams[] = {
    param<&Opt::chains>("chains", "4", "number of Markov chains (run in parallel on `threads` threads)", 1, 1024),
    param<&Opt::warmup>("warmup", "500", "warm-up (adaptation) iterations per chain", 0, 1e8),
    param<&Opt::samples>("samples", "500", "post-warm-up draws per chain", 1, 1e8),
    param<&Opt::sampler>("sampler", "nuts", "nuts (No-U-Turn, multinomial) or hmc (fixed number of leapfrog steps)", 1,
                         0, "nuts|hmc"),
    param<&Opt::model>("model", "marginal",
                       "marginal (sample the value layers and readout with V_0 integrated out analytically, V_0 drawn "
                       "from its Gaussian conditional per draw) or full (sample every weight)",
                       1, 0, "marginal|full"),
    param<&Opt::export_dir>("export_dir", "",
                            "also write the sampled model to this directory for other samplers (xi_train.npy, "
                            "y_train.npy, xi_test.npy, y_test.npy, model.json; docs/posterior.md)"),
    param<&Opt::step_size>("step_size", "0",
                           "leapfrog step size: 0 = adapt by dual averaging during warm-up; > 0 = keep this step fixed",
                           0, 1e6),
    param<&Opt::hmc_steps>("hmc_steps", "16", "leapfrog steps per HMC transition (sampler=hmc)", 1, 1e6),
    param<&Opt::max_tree_depth>("max_tree_depth", "10", "NUTS maximum tree depth (at most 2^depth leapfrog steps)", 1,
                                20),
    param<&Opt::target_accept>("target_accept", "0.8", "target mean acceptance of the step-size adaptation", 0.05,
                               0.995),
    param<&Opt::init_radius>("init_radius", "2", "initial weights uniform in [-r, r]", 0, 100),
    param<&Opt::fix_all_but_readout>("fix_all_but_readout", "false",
                                     "testing: sample only the readout a, every other weight fixed at one prior draw"),
};

struct Buffers {  // ξ and labels of train and test (borrowed from a PathInputs)
  const double *xi = nullptr, *y = nullptr, *xi_test = nullptr, *y_test = nullptr;
};

// The sampled model as files another sampler can read (bench/posterior/numpyro_peer.py): ξ in its memory order,
// C-order shape (H_tot, N0, P) = xi[π, n, μ]; y; the architecture and temperature in model.json.
am_status export_model(am_context *ctx, const std::string &dir, const am_arch &arch, const std::vector<size_t> &widths,
                       double T, const Buffers &buf, size_t P, size_t Pt, size_t N0) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return am_context_fail(ctx, AM_ERR_IO, "posterior: cannot create '%s': %s", dir.c_str(), ec.message().c_str());
  size_t H = 1;
  for (size_t l = 0; l < arch.layers; ++l) H *= arch.heads[l];
  auto write = [&](const char *name, const double *data, uint32_t ndim, size_t n0, size_t n1, size_t n2) {
    const size_t shape[3] = {n0, n1, n2};
    const am_array_view v = am_array_view_make(AM_F64, ndim, shape, 0, data);
    return am_npy_write(ctx, (dir + "/" + name).c_str(), &v);
  };
  am_status st = write("xi_train.npy", buf.xi, 3, H, N0, P);
  if (st == AM_OK) st = write("y_train.npy", buf.y, 1, P, 0, 0);
  if (st == AM_OK && Pt > 0) st = write("xi_test.npy", buf.xi_test, 3, H, N0, Pt);
  if (st == AM_OK && Pt > 0 && buf.y_test) st = write("y_test.npy", buf.y_test, 1, Pt, 0, 0);
  if (st != AM_OK) return st;
  std::string js = "{\"layers\": " + std::to_string(arch.layers) + ", \"heads\": [";
  for (size_t l = 0; l < arch.layers; ++l) js += (l ? ", " : "") + std::to_string(arch.heads[l]);
  js += "], \"widths\": [";
  for (size_t l = 0; l < widths.size(); ++l) js += (l ? ", " : "") + std::to_string(widths[l]);
  js += "], \"variances\": [";
  char num[40];
  for (size_t l = 0; l < arch.layers + 2; ++l) {
    std::snprintf(num, sizeof num, "%s%.17g", l ? ", " : "", arch.variances[l]);
    js += num;
  }
  std::snprintf(num, sizeof num, "%.17g", T);
  js += std::string("], \"temperature\": ") + num + ", \"N0\": " + std::to_string(N0) + "}\n";
  std::FILE *f = std::fopen((dir + "/model.json").c_str(), "w");
  if (!f) return am_context_fail(ctx, AM_ERR_IO, "posterior: cannot write '%s/model.json'", dir.c_str());
  const bool ok = std::fwrite(js.data(), 1, js.size(), f) == js.size();
  if (std::fclose(f) != 0 || !ok) return am_context_fail(ctx, AM_ERR_IO, "posterior: cannot write '%s/model.json'", dir.c_str());
  return AM_OK;
}

am::posterior::PosteriorSettings settings_of(const Opt &o) {
  am::posterior::PosteriorSettings set;
  set.chains = o.chains;
  set.sampler.warmup = o.warmup;
  set.sampler.samples = o.samples;
  if (o.sampler == "hmc") set.sampler.algorithm = am::posterior::Algorithm::hmc;
  set.sampler.step_size = o.step_size;
  set.sampler.adapt_step_size = !(set.sampler.step_size > 0);
  set.sampler.hmc_steps = o.hmc_steps;
  set.sampler.max_tree_depth = o.max_tree_depth;
  set.sampler.target_accept = o.target_accept;
  set.init_radius = o.init_radius;
  set.fix_all_but_readout = o.fix_all_but_readout;
  set.marginal = o.model != "full" && !o.fix_all_but_readout;
  return set;
}

// ξ of the train and test splits alone (am_dataset_xi), when the dataset's path inputs as a whole could not be
// made: the sampler needs only these two, and their errors end the run.
am_status train_test_inputs(am_context *ctx, const am_record *ds, am::attention::PathInputs *out) {
  AM_SDK_TRY(am::attention::load_split(ctx, ds, "train", 0, &out->train, &out->N0));
  if (out->train.n == 0) return am_context_fail(ctx, AM_ERR_NOT_FOUND, "dataset has no array 'X_train'");
  out->P = out->train.n;
  size_t N0t = 0;
  AM_SDK_TRY(am::attention::load_split(ctx, ds, "test", 0, &out->test, &N0t));
  if (out->test.n && N0t != out->N0)
    return am_context_fail(ctx, AM_ERR_SHAPE, "posterior: X_test has N0 = %zu, X_train %zu", N0t, out->N0);
  return AM_OK;
}

// The sampled network's architecture: widths as whole numbers, with the path inputs' sizes.
am::posterior::NetworkSpec network_spec(const am_arch &arch, const std::vector<size_t> &widths, double T, size_t N0) {
  am::posterior::NetworkSpec spec;
  spec.L = arch.layers;
  spec.heads.assign(arch.heads, arch.heads + arch.layers);
  spec.widths = widths;
  spec.variances.assign(arch.variances, arch.variances + arch.layers + 2);
  spec.temperature = T;
  spec.N0 = N0;
  return spec;
}

// The marginal model holds path-pair kernels: beyond a bound it falls back to the full model (with a warning).
void bound_marginal(am_context *ctx, const am::posterior::Network &net, size_t P, am::posterior::PosteriorSettings *set) {
  const size_t H = net.paths();
  const double kernel_limit = 1024.0 * 1024.0 * 1024.0;  // bytes of path-pair kernels the marginal model may hold
  if (set->marginal && am::posterior::PairKernels::bytes(P, H) > kernel_limit) {
    am_context_log(ctx, AM_LOG_WARN,
                   "posterior: the marginal model would hold %.0f MB of path-pair kernels (P = %zu, %zu paths); "
                   "sampling the full model instead",
                   am::posterior::PairKernels::bytes(P, H) / 1048576.0, P, H);
    set->marginal = false;
  }
}

// The sampling's memory before the chains start (am_memory_check, per process): the marginal model's path-pair
// kernels (shared), and per chain its two P×P workspaces (K_U + T·I with its factor, and Q) and the recorded draws
// (U, log density, energy, the tracked test predictions; every position with keep_draws). What the theory values
// before it needed was checked by their own run.
am_status check_sampling_memory(am_context *ctx, const am::posterior::Network &net, size_t P,
                                const am::posterior::PosteriorSettings &set) {
  const bool marginal = set.marginal && !set.fix_all_but_readout;
  const double H = double(net.paths()), Pd = double(P), draws = double(set.sampler.samples);
  const double per_draw = H * H + 2.0 + double(set.track_test) + (set.keep_draws ? double(net.dim()) : 0.0);
  const double per_chain = 8.0 * ((marginal ? 2.0 * Pd * Pd : 0.0) + draws * per_draw);
  const double bytes = (marginal ? am::posterior::PairKernels::bytes(P, net.paths()) : 0.0) + set.chains * per_chain;
  char what[160];
  std::snprintf(what, sizeof what, "posterior: %d chains of %d draws (P = %zu, %s model)", set.chains,
                set.sampler.samples, P, marginal ? "marginal" : "full");
  return am_memory_check(ctx, bytes, what, nullptr);
}

void log_plan(am_context *ctx, const am::posterior::Network &net, const am::posterior::PosteriorSettings &set,
              const std::vector<size_t> &widths, size_t P, size_t N0, double T) {
  const size_t sampled_dim = set.fix_all_but_readout ? net.readout_dim()
                             : set.marginal          ? net.dim() - widths[0] * N0
                                                     : net.dim();
  am_context_log(ctx, AM_LOG_INFO,
                 "posterior: %s, %s model, %d chains x (%d warm-up + %d draws), %zu weights sampled, P = %zu, T = %g, "
                 "W_0 = %zu",
                 set.sampler.algorithm == am::posterior::Algorithm::nuts ? "NUTS" : "HMC",
                 set.marginal ? "marginal (V_0 integrated out)" : "full", set.chains, set.sampler.warmup,
                 set.sampler.samples, sampled_dim, P, T, widths[0]);
}

// The chains' progress as one line on the context; false = stop.
am::posterior::MonitorFn progress_monitor(am_context *ctx, const am::posterior::PosteriorSettings &set) {
  const double total = static_cast<double>(set.sampler.warmup + set.sampler.samples) * set.chains;
  const int warm = set.sampler.warmup, samples = set.sampler.samples;
  return [ctx, total, warm, samples](const std::vector<am::posterior::ChainProgress> &prog) {
    std::string label = "posterior";
    double done = 0;
    char part[96];
    for (size_t c = 0; c < prog.size(); ++c) {
      done += prog[c].iterations;
      const int it = prog[c].iterations;
      if (it < warm)
        std::snprintf(part, sizeof part, " | c%zu warm-up %d/%d div %lld", c + 1, it, warm, prog[c].divergences);
      else
        std::snprintf(part, sizeof part, " | c%zu %d/%d div %lld", c + 1, it - warm, samples, prog[c].divergences);
      label += part;
    }
    return am_context_progress(ctx, done, total, label.c_str()) == 0;
  };
}

// Sampling on the path inputs, summarised into `run`.
am_status sample(const am_host *host, am::posterior::PosteriorSettings set, const am::posterior::Network &net,
                 const Buffers &buf, size_t Pt, am_record *run) {
  am_context *ctx = host->ctx;
  const size_t H = net.paths();
  bool interrupted = false;
  am_rng rng;
  am_host_rng(host, &rng);
  std::vector<am::posterior::ChainOutput> chains = am::posterior::run_chains(
      net, Pt, buf.xi_test, set, rng, progress_monitor(ctx, set), &interrupted, am::sdk::Host(host).loop());
  size_t failed = 0;
  for (const auto &c : chains)
    if (!c.error.empty()) ++failed;
  const am::posterior::Summary sum = am::posterior::summarize(chains, H, Pt, buf.y_test, set);
  am::posterior::log_warnings(ctx, chains, sum, H, run);
  AM_SDK_TRY(am::posterior::write_record(ctx, run, chains, sum, H, set, interrupted, host->seed));
  if (failed == chains.size())
    return am_context_fail(ctx, AM_ERR_NONFINITE, "posterior: every chain failed (%s)", chains[0].error.c_str());
  if (interrupted) {
    am_context_log(ctx, AM_LOG_WARN, "posterior: interrupted; summarised the %zu draws taken so far", sum.total_draws);
    return AM_CANCELLED;
  }
  return AM_OK;
}

struct Posterior {
  const am_host *host;
  Opt opt;
  // ξ of the dataset the runs see (the host's dataset does not change between the runs of a scan); xi_status is
  // what making it returned.
  const am_record *xi_of = nullptr;
  am::attention::PathInputs xi;
  am_status xi_status = AM_OK;
  std::string xi_error;
  Posterior(const am::sdk::Host &h, const Opt &o) : host(h.raw()), opt(o) {}

  void cache_path_inputs(const am_record *ds) {
    if (xi_of == ds) return;
    xi = am::attention::PathInputs();
    xi_status = am::attention::load_path_inputs(host->ctx, ds, &xi);
    xi_error = xi_status < 0 ? am_context_last_error(host->ctx) : "";
    xi_of = ds;
  }

  // The theory values of the same width first: a failure other than a cancel is logged, and sampling goes on.
  am_status theory_first(const am_record *ds, const am_record *inputs, am_record *run) {
    am_context *ctx = host->ctx;
    am_status st = xi_status;
    if (st >= 0) st = am::attention::estimate(ctx, ds, inputs, xi, am::attention::Options(), run);
    if (st == AM_CANCELLED) return st;
    if (st < 0 && st != AM_ERR_NOT_CONVERGED)
      am_context_log(ctx, AM_LOG_WARN, "posterior: the theory estimate failed (%s: %s); sampling anyway",
                     am_status_string(st), xi_status < 0 ? xi_error.c_str() : am_context_last_error(ctx));
    return AM_OK;
  }

  am_status estimate(const am_record *ds, const am_record *inputs, am_record *run) {
    am_context *ctx = host->ctx;
    if (!ds) return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "posterior: needs an attention dataset (got none)");
    const char *kind = nullptr;
    if (am_record_get_string(ds, "kind", &kind) != AM_OK || std::strcmp(kind, AM_DATASET_ATTENTION) != 0)
      return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "posterior: the dataset is not of kind \"attention\"");
    am_arch arch;
    am_arch_default(&arch);
    double T = 0;
    AM_SDK_TRY(am_dataset_arch_for(ctx, ds, inputs, &arch, &T));
    std::vector<size_t> widths;
    const std::string werr = am::posterior::widths_to_integers(arch.widths, arch.layers + 1, widths);
    if (!werr.empty()) return am_context_fail(ctx, AM_ERR_USAGE, "%s", werr.c_str());
    cache_path_inputs(ds);
    AM_SDK_TRY(theory_first(ds, inputs, run));
    am::attention::PathInputs own;  // only when the cache could not be made
    if (xi_status < 0) AM_SDK_TRY(train_test_inputs(ctx, ds, &own));
    const am::attention::PathInputs &in = xi_status < 0 ? own : xi;
    const Buffers buf{in.train.xi.get(), in.train.y.get(), in.test.xi.get(), in.test.y.get()};
    const size_t P = in.P, N0 = in.N0, Pt = in.test.n;
    if (!opt.export_dir.empty()) AM_SDK_TRY(export_model(ctx, opt.export_dir, arch, widths, T, buf, P, Pt, N0));
    am::posterior::PosteriorSettings set = settings_of(opt);
    am::posterior::Network net(network_spec(arch, widths, T, N0), P, buf.xi, buf.y);
    bound_marginal(ctx, net, P, &set);
    AM_SDK_TRY(check_sampling_memory(ctx, net, P, set));
    log_plan(ctx, net, set, widths, P, N0, T);
    return sample(host, set, net, buf, Pt, run);
  }

  static am_status describe(const am_record *results, am_record *report) {
    return am::posterior_plugin::describe(nullptr, results, report);
  }
};

constexpr am_plugin_desc kDesc = am::sdk::estimator<Posterior, kParams>(
    "posterior", "0.1.0",
    "samples the Bayesian network weights (NUTS/HMC) and compares sampled predictor and U with the theory",
    AM_DATA_ATTENTION);

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
