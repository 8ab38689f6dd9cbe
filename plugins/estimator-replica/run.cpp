// The estimator's work: from its options, compute theory curves, optimal ridge, peaks and (optionally)
// simulations per nu, and write them into the run record (keys documented in docs/replica.md).
#include "params.h"
#include "replica.h"

#include <attnmech/array.h>
#include <attnmech/context.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <limits>
#include <string>
#include <vector>

namespace am::replica {

namespace {

void check(am_status st, const char *what) {
  if (st < 0) throw Error(st, std::string("replica: cannot write ") + what + " into the run record");
}

am_record *grown(am_record *r) {
  if (!r) throw Error(AM_ERR_NO_MEMORY, "replica: cannot grow the run record");
  return r;
}

// Read a 2-D square .npy matrix into a column-major buffer.
std::vector<double> read_square(am_context *ctx, const std::string &path, const char *what, std::size_t *n) {
  am::sdk::Array arr;
  am_status st = am_npy_read(ctx, path.c_str(), arr.out());
  if (st < 0) {
    const char *why = ctx ? am_context_last_error(ctx) : "";
    throw Error(st, std::string("replica: cannot read ") + what + " from '" + path + "'" +
                        (why && *why ? std::string(": ") + why : std::string()));
  }
  am_array_view v = am_array_get_view(arr.get());
  if (v.ndim != 2 || v.shape[0] != v.shape[1] || v.shape[0] < 2)
    throw Error(AM_ERR_SHAPE, std::string("replica: ") + what + " in '" + path + "' must be a square 2-D matrix");
  *n = v.shape[0];
  std::vector<double> out(*n * *n);
  st = am_array_to_f64_fortran(ctx, &v, out.data(), out.size());
  if (st < 0) throw Error(st, std::string("replica: cannot convert ") + what + " to double");
  return out;
}

std::vector<double> log_grid(double lo, double hi, int n) {
  std::vector<double> g(n);
  for (int k = 0; k < n; ++k) g[k] = std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * k / (n - 1));
  return g;
}

// The options checked and completed: default grids, the saddle-point settings, the user's J or Sigma.
struct Setup {
  std::vector<double> nus, lambdas, alphas, lscan, prange;
  SaddleOptions saddle;
  std::vector<double> Jm, Sm;  // model=finite: J (nJ x nJ) or Sigma (nS x nS)
  std::size_t nJ = 0, nS = 0;
};

Setup prepare(am_context *ctx, const Options &o) {
  Setup s;
  s.nus = o.nu.empty() ? std::vector<double>{3.0} : o.nu;
  s.lambdas = o.lambda;
  s.alphas = o.alpha.empty() ? log_grid(0.1, 20.0, 60) : o.alpha;
  if (s.lambdas.empty()) throw Error(AM_ERR_USAGE, "replica: lambda needs at least one value");
  for (double a : s.alphas)
    if (!(a > 0) || !std::isfinite(a)) throw Error(AM_ERR_USAGE, "replica: every alpha must be > 0");
  for (double l : s.lambdas)
    if (!(l >= 0) || !std::isfinite(l)) throw Error(AM_ERR_USAGE, "replica: every lambda must be >= 0");
  s.saddle.method = o.method == "fixed_point" ? Method::FixedPoint : o.method == "root" ? Method::Root : Method::Auto;
  s.saddle.tol = o.tol;
  s.saddle.max_iter = o.max_iter;
  s.saddle.damping = o.damping;
  s.lscan = o.lambda_scan.empty() ? log_grid(1e-4, 1e3, 29) : o.lambda_scan;
  s.prange = o.peak_range.size() == 2 ? o.peak_range : std::vector<double>{0.3, 3.0};
  if (o.model != "R1" && o.model != "R2" && o.model != "finite")
    throw Error(AM_ERR_USAGE, "replica: model must be R1, R2 or finite");
  if (o.model == "finite" && o.J.empty() && o.Sigma.empty())
    throw Error(AM_ERR_USAGE, "replica: model=finite needs J=<file.npy> or Sigma=<file.npy>");
  if (o.model != "finite" && (!o.J.empty() || !o.Sigma.empty()))
    throw Error(AM_ERR_USAGE, "replica: J / Sigma are used only with model=finite");
  if (o.model == "finite") {
    if (!o.J.empty())
      s.Jm = read_square(ctx, o.J, "J", &s.nJ);
    else
      s.Sm = read_square(ctx, o.Sigma, "Sigma", &s.nS);
  }
  return s;
}

// The model at one nu: its spectrum, teacher power rho and label noise s2.
struct ModelInstance {
  std::string source;  // finite: "J" or "Sigma"
  double nu = 3, rho = 0, s2 = 0;
  std::unique_ptr<Spectrum> sp;
};

ModelInstance make_model(const Options &o, const Setup &s, double nu) {
  ModelInstance mi;
  mi.nu = nu;
  mi.s2 = o.sigma2 >= 0 ? o.sigma2 : 1.0 / nu;
  mi.rho = o.rho >= 0 ? o.rho : (nu > 2 ? r1_rho(nu) : std::numeric_limits<double>::quiet_NaN());
  if (o.model == "R1") {
    mi.sp = make_r1(nu);
  } else if (o.model == "R2" || !s.Sm.empty()) {
    if (!(mi.s2 >= 0) || !(mi.rho >= 0))
      throw Error(AM_ERR_USAGE, "replica: R2 / Sigma need sigma2 >= 0 and rho >= 0 (or nu > 2 to derive them)");
    if (o.model == "R2") {
      mi.sp = make_r2(mi.rho, mi.s2);
    } else {
      mi.source = "Sigma";
      mi.sp = make_discrete(measure_from_sigma(s.Sm.data(), s.nS, mi.rho, mi.s2));
    }
  } else {
    mi.source = "J";
    mi.sp = make_discrete(finite_measure_from_J(s.Jm.data(), s.nJ, nu, o.finite_sites));
  }
  return mi;
}

// Simulations at one nu (all lambdas at once: the Gram matrix is shared); stream `in` of the host's rng.
struct Simulation {
  std::vector<std::vector<SimPoint>> points;  // [alpha][lambda]; empty = no simulation
  std::size_t L = 0;
  bool cancelled = false;
};

Simulation simulate_nu(const am::sdk::Host &host, const Options &o, const Setup &s, const ModelInstance &mi,
                       std::size_t in) {
  Simulation sim;
  if (o.sim_L == 0) return sim;
  SimSpec ss;
  ss.nu = mi.nu;
  ss.seeds = o.sim_seeds;
  ss.n_sites = o.sim_sites;
  ss.rho = mi.rho;
  ss.sigma2 = mi.s2;
  if (o.model == "R1" || o.model == "R2") {
    ss.model = o.model == "R1" ? SimModel::R1 : SimModel::R2;
    ss.L = o.sim_L;
  } else if (!s.Jm.empty()) {
    ss.model = SimModel::FiniteJ;
    ss.L = s.nJ;
    ss.J = s.Jm.data();
  } else {
    ss.model = SimModel::Sigma;
    ss.Sigma = s.Sm.data();
    ss.p_sigma = s.nS;
    ss.L = s.nS + 1;
  }
  sim.L = ss.L;
  am_rng rng_nu, host_rng = host.rng();
  am_rng_split(&host_rng, in, &rng_nu);
  const double total = static_cast<double>(s.nus.size());
  auto prog = [&](double done, double tot) {
    return host.progress(static_cast<double>(in) + 0.9 * done / tot, total, "replica");
  };
  sim.points = simulate(ss, s.alphas, s.lambdas, rng_nu, prog, &sim.cancelled);
  return sim;
}

// The simulated values of curve il beside the theory.
void write_simulation(am_record *c, const Options &o, const Simulation &sim, std::size_t il, std::size_t nA) {
  std::vector<double> sm(nA), se(nA), se_seed(nA), se_site(nA), ar(nA), Ms(nA);
  for (std::size_t ia = 0; ia < nA; ++ia) {
    const SimPoint &pt = sim.points[ia][il];
    sm[ia] = pt.mean;
    se[ia] = pt.stderr_;
    se_seed[ia] = pt.seed_stderr;
    se_site[ia] = pt.site_stderr;
    ar[ia] = pt.alpha_realised;
    Ms[ia] = static_cast<double>(pt.M);
  }
  check(am_record_set_vector(c, "sim_test_loss", sm.data(), nA), "curves.sim_test_loss");
  check(am_record_set_vector(c, "sim_stderr", se.data(), nA), "curves.sim_stderr");
  check(am_record_set_vector(c, "sim_stderr_seeds", se_seed.data(), nA), "curves.sim_stderr_seeds");
  check(am_record_set_vector(c, "sim_stderr_sites", se_site.data(), nA), "curves.sim_stderr_sites");
  check(am_record_set_vector(c, "sim_alpha_realised", ar.data(), nA), "curves.sim_alpha_realised");
  check(am_record_set_vector(c, "sim_M", Ms.data(), nA), "curves.sim_M");
  check(am_record_set_number(c, "sim_L", static_cast<double>(sim.L)), "curves.sim_L");
  check(am_record_set_number(c, "sim_seeds", static_cast<double>(o.sim_seeds)), "curves.sim_seeds");
  check(am_record_set_number(c, "sim_sites", static_cast<double>(o.sim_sites == 0 ? sim.L : o.sim_sites)),
        "curves.sim_sites");
}

// curves[]: the test loss vs alpha at lambda = lambdas[il] (with the simulation when there is one).
void write_curve(am_record *curves, const Options &o, const Setup &s, const ModelInstance &mi, const Simulation &sim,
                 std::size_t il, bool cancelled) {
  const std::size_t nA = s.alphas.size();
  const double lam = s.lambdas[il];
  std::vector<double> eps(nA), kap(nA), used(nA);
  for (std::size_t ia = 0; ia < nA; ++ia) {
    const SaddleResult r = solve(*mi.sp, s.alphas[ia], lam, s.saddle);
    eps[ia] = r.eps;
    kap[ia] = r.kappa;
    used[ia] = r.used_root ? 1.0 : 0.0;
  }
  am_record *c = grown(am_record_append_object(curves));
  check(am_record_set_string(c, "model", o.model.c_str()), "curves.model");
  if (!mi.source.empty()) check(am_record_set_string(c, "source", mi.source.c_str()), "curves.source");
  check(am_record_set_number(c, "nu", mi.nu), "curves.nu");
  check(am_record_set_number(c, "lambda", lam), "curves.lambda");
  check(am_record_set_vector(c, "alpha", s.alphas.data(), nA), "curves.alpha");
  check(am_record_set_vector(c, "test_loss", eps.data(), nA), "curves.test_loss");
  check(am_record_set_vector(c, "kappa", kap.data(), nA), "curves.kappa");
  check(am_record_set_vector(c, "root_form", used.data(), nA), "curves.root_form");
  check(am_record_set_number(c, "bayes_loss", mi.sp->sigma2()), "curves.bayes_loss");
  check(am_record_set_number(c, "rho", mi.sp->rho()), "curves.rho");
  if (!sim.points.empty()) {
    write_simulation(c, o, sim, il, nA);
    if (cancelled) check(am_record_set_bool(c, "sim_partial", 1), "curves.sim_partial");
  }
}

// peaks[]: the interpolation peak of eps(alpha) at lambda = lambdas[il] within peak_range.
void write_peak(am_record *peaks, const Options &o, const Setup &s, const ModelInstance &mi, std::size_t il) {
  const double lam = s.lambdas[il];
  const Peak pk = find_peak(*mi.sp, lam, s.saddle, s.prange[0], s.prange[1]);
  am_record *pe = grown(am_record_append_object(peaks));
  check(am_record_set_string(pe, "model", o.model.c_str()), "peaks.model");
  check(am_record_set_number(pe, "nu", mi.nu), "peaks.nu");
  check(am_record_set_number(pe, "lambda", lam), "peaks.lambda");
  check(am_record_set_number(pe, "alpha_star", pk.alpha), "peaks.alpha_star");
  check(am_record_set_number(pe, "height", pk.eps), "peaks.height");
  check(am_record_set_bool(pe, "interior", pk.interior ? 1 : 0), "peaks.interior");
  check(am_record_set_vector(pe, "range", s.prange.data(), 2), "peaks.range");
}

// optimal[]: the ridgeless limit and (optimal=true) the optimal lambda per alpha with its test loss.
void write_optimal(am_record *optimal, const Options &o, const Setup &s, const ModelInstance &mi) {
  const std::size_t nA = s.alphas.size();
  am_record *op = grown(am_record_append_object(optimal));
  check(am_record_set_string(op, "model", o.model.c_str()), "optimal.model");
  check(am_record_set_number(op, "nu", mi.nu), "optimal.nu");
  check(am_record_set_vector(op, "alpha", s.alphas.data(), nA), "optimal.alpha");
  std::vector<double> r0(nA);
  for (std::size_t ia = 0; ia < nA; ++ia) r0[ia] = solve(*mi.sp, s.alphas[ia], 0.0, s.saddle).eps;
  check(am_record_set_vector(op, "test_loss_ridgeless", r0.data(), nA), "optimal.test_loss_ridgeless");
  check(am_record_set_number(op, "bayes_loss", mi.sp->sigma2()), "optimal.bayes_loss");
  if (!o.optimal) return;
  std::vector<double> lo(nA), eo(nA);
  for (std::size_t ia = 0; ia < nA; ++ia) {
    const Optimum q = optimal_lambda(*mi.sp, s.alphas[ia], s.saddle);
    lo[ia] = q.lambda;
    eo[ia] = q.eps;
  }
  check(am_record_set_vector(op, "lambda_opt", lo.data(), nA), "optimal.lambda_opt");
  check(am_record_set_vector(op, "test_loss_opt", eo.data(), nA), "optimal.test_loss_opt");
}

// lambda_curves[]: the test loss on the alpha x lambda_scan grid (column-major [alpha, lambda]; 1-D form).
void write_lambda_curves(am_record *lcurves, const Options &o, const Setup &s, const ModelInstance &mi) {
  const std::size_t nA = s.alphas.size(), nS = s.lscan.size();
  am_record *lc = grown(am_record_append_object(lcurves));
  check(am_record_set_string(lc, "model", o.model.c_str()), "lambda_curves.model");
  check(am_record_set_number(lc, "nu", mi.nu), "lambda_curves.nu");
  check(am_record_set_vector(lc, "alpha", s.alphas.data(), nA), "lambda_curves.alpha");
  check(am_record_set_vector(lc, "lambda", s.lscan.data(), nS), "lambda_curves.lambda");
  std::vector<double> tab(nA * nS);
  SaddleOptions ro = s.saddle;
  if (ro.method == Method::Auto) ro.method = Method::Root;
  for (std::size_t jl = 0; jl < nS; ++jl)
    for (std::size_t ia = 0; ia < nA; ++ia) tab[ia + jl * nA] = solve(*mi.sp, s.alphas[ia], s.lscan[jl], ro).eps;
  check(am_record_set_matrix(lc, "test_loss", tab.data(), nA, nS, nA), "lambda_curves.test_loss");
}

// potts_panel: the discrete right panel (factored attention on Potts data, pseudolikelihood fit) at
// M = round(alpha potts_L). Computed here when the Potts code is built; otherwise only the request is
// recorded (its values then come from task-potts + estimator-pseudolikelihood runs; see docs/replica.md).
// Returns AM_CANCELLED when the panel was stopped.
am_status potts_panel(const am::sdk::Host &host, const Options &o, am_record *out) {
  am_record *pp = grown(am_record_object(out, "potts_panel"));
  const std::vector<double> &pa = o.potts_alpha;
  const double L = o.potts_L;
  std::vector<double> Ms(pa.size());
  for (std::size_t k = 0; k < Ms.size(); ++k) Ms[k] = std::max(1.0, std::round(pa[k] * L));
  check(am_record_set_string(pp, "status", "pending"), "potts_panel.status");
  check(am_record_set_string(pp, "producer", "task-potts + estimator-pseudolikelihood"), "potts_panel.producer");
  check(am_record_set_number(pp, "L", L), "potts_panel.L");
  check(am_record_set_vector(pp, "alpha", pa.data(), pa.size()), "potts_panel.alpha");
  check(am_record_set_vector(pp, "M", Ms.data(), Ms.size()), "potts_panel.M");
  char cmd[160];
  std::snprintf(cmd, sizeof cmd, "attnmech run potts --estimator pseudolikelihood --set L=%.0f --set C=%.0f --set M={M}",
                L, L);
  check(am_record_set_string(pp, "command", cmd), "potts_panel.command");
  check(am_record_set_string(pp, "fill_from", "runs[0].test_loss, runs[0].epsilon_star"), "potts_panel.fill_from");
#ifdef AM_REPLICA_WITH_POTTS
  am_rng prng, host_rng = host.rng();
  am_rng_split(&host_rng, 777, &prng);
  PottsPanel po;
  po.L = o.potts_L;
  po.l2 = o.potts_l2;
  po.stop_tol = o.potts_stop_tol;
  po.M_test = o.potts_M_test;
  po.realisations = o.potts_realisations;
  po.alpha = pa;
  return fill_potts_panel(host, prng, po, pp);
#else
  host.log(AM_LOG_INFO,
           "replica: potts_panel recorded as a request (%zu values of alpha); its test losses come from the "
           "pseudolikelihood estimator",
           pa.size());
  return AM_OK;
#endif
}

}  // namespace

am_status run(const am::sdk::Host &host, const Options &o, am_record *out) {
  if (!out) throw Error(AM_ERR_INVALID_ARGUMENT, "replica: missing run record");
  const Setup s = prepare(host.ctx(), o);
  check(am_record_set_string(out, "estimator", "replica"), "estimator");
  check(am_record_set_string(out, "model", o.model.c_str()), "model");
  check(am_record_set_string(out, "method", o.method.c_str()), "method");
  am_record *curves = am_record_list(out, "curves");
  am_record *optimal = am_record_list(out, "optimal");
  am_record *lcurves = am_record_list(out, "lambda_curves");
  am_record *peaks = am_record_list(out, "peaks");
  if (!curves || !optimal || !lcurves || !peaks) throw Error(AM_ERR_NO_MEMORY, "replica: cannot grow the run record");
  const double total = static_cast<double>(s.nus.size());
  bool cancelled = false;
  for (std::size_t in = 0; in < s.nus.size() && !cancelled; ++in) {
    const ModelInstance mi = make_model(o, s, s.nus[in]);
    const Simulation sim = simulate_nu(host, o, s, mi, in);
    cancelled = sim.cancelled;
    for (std::size_t il = 0; il < s.lambdas.size(); ++il) {
      write_curve(curves, o, s, mi, sim, il, cancelled);
      write_peak(peaks, o, s, mi, il);
    }
    write_optimal(optimal, o, s, mi);
    write_lambda_curves(lcurves, o, s, mi);
    if (host.progress(static_cast<double>(in + 1), total, "replica")) cancelled = true;
  }
  if (!o.potts_alpha.empty()) {
    const am_status pst = potts_panel(host, o, out);
    if (pst == AM_CANCELLED) cancelled = true;
    else if (pst != AM_OK) return pst;
  }
  return cancelled ? AM_CANCELLED : AM_OK;
}

}  // namespace am::replica
