// attnmech posterior — the estimator plugin: descriptor, parameters and the estimate callback.
// The numerical work lives in posterior_core (nuts, diagnostics, network, posterior).
#include "posterior.h"

#include <attnmech/dataset.h>
#include <attnmech/plugin.hpp>
#include <attnmech/theory.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <string>

namespace am_posterior_plugin {
am_status describe(am_context *ctx, const am_record *results, am_record *report);
}  // namespace am_posterior_plugin

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

struct Buffers {  // from am_dataset_xi, released with am_free
  double *xi = nullptr, *y = nullptr, *xi_test = nullptr, *y_test = nullptr;
  ~Buffers() {
    am_free(xi);
    am_free(y);
    am_free(xi_test);
    am_free(y_test);
  }
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
    am_array_view v{};
    v.dtype = AM_F64;
    v.ndim = ndim;
    v.shape[0] = n0;
    v.shape[1] = n1;
    v.shape[2] = n2;
    v.fortran_order = 0;
    v.data = data;
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

am_status estimate_impl(const am_host *host, const Opt &o, const am_record *ds, am_record *run) {
  am_context *ctx = host->ctx;
  if (!ds) return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "posterior: needs an attention dataset (got none)");
  const char *kind = nullptr;
  if (am_record_get_string(ds, "kind", &kind) != AM_OK || std::strcmp(kind, AM_DATASET_ATTENTION) != 0)
    return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "posterior: the dataset is not of kind \"attention\"");

  am_arch arch;
  am_arch_default(&arch);
  double T = 0;
  am_status st = am_dataset_arch(ctx, ds, &arch, &T);
  if (st != AM_OK) return st;
  std::vector<size_t> widths;
  const std::string werr = posterior::widths_to_integers(arch.widths, arch.layers + 1, widths);
  if (!werr.empty()) return am_context_fail(ctx, AM_ERR_USAGE, "%s", werr.c_str());

  // settings
  posterior::PosteriorSettings set;
  set.chains = o.chains;
  set.sampler.warmup = o.warmup;
  set.sampler.samples = o.samples;
  if (o.sampler == "hmc") set.sampler.algorithm = posterior::Algorithm::hmc;
  set.sampler.step_size = o.step_size;
  set.sampler.adapt_step_size = !(set.sampler.step_size > 0);
  set.sampler.hmc_steps = o.hmc_steps;
  set.sampler.max_tree_depth = o.max_tree_depth;
  set.sampler.target_accept = o.target_accept;
  set.init_radius = o.init_radius;
  set.fix_all_but_readout = o.fix_all_but_readout;
  set.marginal = o.model != "full" && !o.fix_all_but_readout;

  // the theory values of the same width first
  am_theory_options topt;
  am_theory_default_options(&topt);
  st = am_theory_estimate(ctx, ds, &topt, run);
  if (st == AM_CANCELLED) return st;
  if (st < 0 && st != AM_ERR_NOT_CONVERGED)
    am_context_log(ctx, AM_LOG_WARN, "posterior: the theory estimate failed (%s: %s); sampling anyway",
                   am_status_string(st), am_context_last_error(ctx));

  Buffers buf;
  size_t P = 0, N0 = 0, Pt = 0, N0t = 0;
  st = am_dataset_xi(ctx, ds, "train", &buf.xi, &P, &N0, &buf.y);
  if (st != AM_OK) return st;
  if (am_record_get(ds, "X_test")) {
    st = am_dataset_xi(ctx, ds, "test", &buf.xi_test, &Pt, &N0t, &buf.y_test);
    if (st != AM_OK) return st;
    if (N0t != N0) return am_context_fail(ctx, AM_ERR_SHAPE, "posterior: X_test has N0 = %zu, X_train %zu", N0t, N0);
  }

  if (!o.export_dir.empty()) {
    st = export_model(ctx, o.export_dir, arch, widths, T, buf, P, Pt, N0);
    if (st != AM_OK) return st;
  }

  posterior::NetworkSpec spec;
  spec.L = arch.layers;
  spec.heads.assign(arch.heads, arch.heads + arch.layers);
  spec.widths = widths;
  spec.variances.assign(arch.variances, arch.variances + arch.layers + 2);
  spec.temperature = T;
  spec.N0 = N0;
  posterior::Network net(spec, P, buf.xi, buf.y);
  const size_t H = net.paths();
  const double kernel_limit = 1024.0 * 1024.0 * 1024.0;  // bytes of path-pair kernels the marginal model may hold
  if (set.marginal && posterior::PairKernels::bytes(P, H) > kernel_limit) {
    am_context_log(ctx, AM_LOG_WARN,
                   "posterior: the marginal model would hold %.0f MB of path-pair kernels (P = %zu, %zu paths); "
                   "sampling the full model instead",
                   posterior::PairKernels::bytes(P, H) / 1048576.0, P, H);
    set.marginal = false;
  }
  const size_t sampled_dim = set.fix_all_but_readout ? net.readout_dim()
                             : set.marginal          ? net.dim() - widths[0] * N0
                                                     : net.dim();
  am_context_log(ctx, AM_LOG_INFO,
                 "posterior: %s, %s model, %d chains x (%d warm-up + %d draws), %zu weights sampled, P = %zu, T = %g, "
                 "W_0 = %zu",
                 set.sampler.algorithm == posterior::Algorithm::nuts ? "NUTS" : "HMC",
                 set.marginal ? "marginal (V_0 integrated out)" : "full", set.chains, set.sampler.warmup,
                 set.sampler.samples, sampled_dim, P, T, widths[0]);

  const double per_chain = static_cast<double>(set.sampler.warmup + set.sampler.samples);
  const double total = per_chain * set.chains;
  const int warm = set.sampler.warmup;
  auto monitor = [&](const std::vector<posterior::ChainProgress> &prog) {
    std::string label = "posterior";
    double done = 0;
    char part[96];
    for (size_t c = 0; c < prog.size(); ++c) {
      done += prog[c].iterations;
      const int it = prog[c].iterations;
      if (it < warm)
        std::snprintf(part, sizeof part, " | c%zu warm-up %d/%d div %lld", c + 1, it, warm, prog[c].divergences);
      else
        std::snprintf(part, sizeof part, " | c%zu %d/%d div %lld", c + 1, it - warm, set.sampler.samples,
                      prog[c].divergences);
      label += part;
    }
    return am_context_progress(ctx, done, total, label.c_str()) == 0;
  };
  bool interrupted = false;
  am_rng rng;
  am_host_rng(host, &rng);
  std::vector<posterior::ChainOutput> chains =
      posterior::run_chains(net, Pt, buf.xi_test, set, rng, monitor, &interrupted, am::sdk::Host(host).loop());
  size_t failed = 0;
  for (const auto &c : chains)
    if (!c.error.empty()) ++failed;
  const posterior::Summary sum = posterior::summarize(chains, H, Pt, buf.y_test, set);
  posterior::log_warnings(ctx, chains, sum, H, run);
  st = posterior::write_record(ctx, run, chains, sum, H, set, interrupted, host->seed);
  if (st != AM_OK) return st;
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
  Posterior(const am::sdk::Host &h, const Opt &o) : host(h.raw()), opt(o) {}
  am_status estimate(const am_record *dataset, am_record *run) { return estimate_impl(host, opt, dataset, run); }
  static am_status describe(const am_record *results, am_record *report) {
    return am_posterior_plugin::describe(nullptr, results, report);
  }
};

constexpr am_plugin_desc kDesc = am::sdk::estimator<Posterior, kParams>(
    "posterior", "0.1.0",
    "samples the Bayesian network weights (NUTS/HMC) and compares sampled predictor and U with the theory",
    AM_DATA_ATTENTION);

}  // namespace

AM_PLUGIN_EXPORT const am_plugin_desc *am_plugin_entry(void) { return &kDesc; }
