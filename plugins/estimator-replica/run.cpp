// The estimator's work: read validated params, compute theory curves, optimal ridge, peaks and
// (optionally) simulations, and write them into the run record (keys documented in docs/replica.md).
#include "replica.h"

#include <attnmech/array.h>
#include <attnmech/context.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

namespace replica {

namespace {

void check(am_status st, const char *what) {
  if (st < 0) throw Error(st, std::string("replica: cannot write ") + what + " into the run record");
}

std::vector<double> get_list(const am_record *params, const char *key) {
  size_t n = 0;
  if (!am_record_get(params, key)) return {};
  if (am_record_get_vector(params, key, nullptr, 0, &n) < 0 || n == 0) return {};
  std::vector<double> v(n);
  if (am_record_get_vector(params, key, v.data(), n, &n) < 0) return {};
  v.resize(n);
  return v;
}

double get_num(const am_record *params, const char *key, double dflt) {
  // Numbers and booleans (am_record_number reads both; NaN for anything else).
  const am_record *r = am_record_get(params, key);
  const double v = r ? am_record_number(r) : dflt;
  return std::isnan(v) ? dflt : v;
}

std::string get_str(const am_record *params, const char *key, const char *dflt) {
  const char *s = nullptr;
  if (am_record_get_string(params, key, &s) < 0 || !s) return dflt;
  return s;
}

// Read a 2-D square .npy matrix into a column-major buffer.
std::vector<double> read_square(am_context *ctx, const std::string &path, const char *what, std::size_t *n) {
  am_array *arr = nullptr;
  am_status st = am_npy_read(ctx, path.c_str(), &arr);
  if (st < 0) {
    const char *why = ctx ? am_context_last_error(ctx) : "";
    throw Error(st, std::string("replica: cannot read ") + what + " from '" + path + "'" +
                        (why && *why ? std::string(": ") + why : std::string()));
  }
  am_array_view v = am_array_get_view(arr);
  if (v.ndim != 2 || v.shape[0] != v.shape[1] || v.shape[0] < 2) {
    am_array_destroy(&arr);
    throw Error(AM_ERR_SHAPE, std::string("replica: ") + what + " in '" + path + "' must be a square 2-D matrix");
  }
  *n = v.shape[0];
  std::vector<double> out(*n * *n);
  st = am_array_to_f64_fortran(ctx, &v, out.data(), out.size());
  am_array_destroy(&arr);
  if (st < 0) throw Error(st, std::string("replica: cannot convert ") + what + " to double");
  return out;
}

std::vector<double> log_grid(double lo, double hi, int n) {
  std::vector<double> g(n);
  for (int k = 0; k < n; ++k) g[k] = std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * k / (n - 1));
  return g;
}

struct ModelInstance {
  std::string model;   // "R1", "R2", "finite"
  std::string source;  // finite: "J" or "Sigma"
  double nu = 3;
  std::unique_ptr<Spectrum> sp;
};

}  // namespace

am_status run(const am_host *host, am_record *out) {
  am_context *ctx = host ? host->ctx : nullptr;
  try {
    if (!host || !host->params || !out) throw Error(AM_ERR_INVALID_ARGUMENT, "replica: missing host, params or run record");
    const am_record *P = host->params;
    const std::string model = get_str(P, "model", "R1");
    std::vector<double> nus = get_list(P, "nu");
    std::vector<double> lambdas = get_list(P, "lambda");
    std::vector<double> alphas = get_list(P, "alpha");
    if (nus.empty()) nus = {3.0};
    if (lambdas.empty()) throw Error(AM_ERR_USAGE, "replica: lambda needs at least one value");
    if (alphas.empty()) alphas = log_grid(0.1, 20.0, 60);
    for (double a : alphas)
      if (!(a > 0) || !std::isfinite(a)) throw Error(AM_ERR_USAGE, "replica: every alpha must be > 0");
    for (double l : lambdas)
      if (!(l >= 0) || !std::isfinite(l)) throw Error(AM_ERR_USAGE, "replica: every lambda must be >= 0");
    const double sigma2_in = get_num(P, "sigma2", -1), rho_in = get_num(P, "rho", -1);
    const std::string Jpath = get_str(P, "J", ""), Spath = get_str(P, "Sigma", "");
    const std::string method = get_str(P, "method", "auto");
    SaddleOptions o;
    o.method = method == "fixed_point" ? Method::FixedPoint : method == "root" ? Method::Root : Method::Auto;
    o.tol = get_num(P, "tol", o.tol);
    o.max_iter = static_cast<int>(get_num(P, "max_iter", o.max_iter));
    o.damping = get_num(P, "damping", o.damping);
    const double opt_v = get_num(P, "optimal", 1);
    const bool want_opt = std::isfinite(opt_v) && opt_v != 0;
    std::vector<double> lscan = get_list(P, "lambda_scan");
    if (lscan.empty()) lscan = log_grid(1e-4, 1e3, 29);
    std::vector<double> prange = get_list(P, "peak_range");
    if (prange.size() != 2) prange = {0.3, 3.0};
    const std::size_t sim_L = static_cast<std::size_t>(get_num(P, "sim_L", 0));
    const std::size_t sim_seeds = static_cast<std::size_t>(get_num(P, "sim_seeds", 3));
    const std::size_t sim_sites = static_cast<std::size_t>(get_num(P, "sim_sites", 40));
    const std::size_t finite_sites = static_cast<std::size_t>(get_num(P, "finite_sites", 0));
    const std::vector<double> potts_alpha = get_list(P, "potts_alpha");
    const double potts_L = get_num(P, "potts_L", 20);

    if (model != "R1" && model != "R2" && model != "finite")
      throw Error(AM_ERR_USAGE, "replica: model must be R1, R2 or finite");
    if (model == "finite" && Jpath.empty() && Spath.empty())
      throw Error(AM_ERR_USAGE, "replica: model=finite needs J=<file.npy> or Sigma=<file.npy>");
    if (model != "finite" && (!Jpath.empty() || !Spath.empty()))
      throw Error(AM_ERR_USAGE, "replica: J / Sigma are used only with model=finite");

    std::vector<double> Jm, Sm;
    std::size_t nJ = 0, nS = 0;
    if (model == "finite") {
      if (!Jpath.empty())
        Jm = read_square(ctx, Jpath, "J", &nJ);
      else
        Sm = read_square(ctx, Spath, "Sigma", &nS);
    }

    check(am_record_set_string(out, "estimator", "replica"), "estimator");
    check(am_record_set_string(out, "model", model.c_str()), "model");
    check(am_record_set_string(out, "method", method.c_str()), "method");
    am_record *curves = am_record_list(out, "curves");
    am_record *optimal = am_record_list(out, "optimal");
    am_record *lcurves = am_record_list(out, "lambda_curves");
    am_record *peaks = am_record_list(out, "peaks");
    if (!curves || !optimal || !lcurves || !peaks) throw Error(AM_ERR_NO_MEMORY, "replica: cannot grow the run record");

    const std::size_t nA = alphas.size(), nL = lambdas.size();
    const double total = static_cast<double>(nus.size());
    bool cancelled = false;
    for (std::size_t in = 0; in < nus.size() && !cancelled; ++in) {
      const double nu = nus[in];
      ModelInstance mi;
      mi.model = model;
      mi.nu = nu;
      const double s2 = sigma2_in >= 0 ? sigma2_in : 1.0 / nu;
      const double rho = rho_in >= 0 ? rho_in : (nu > 2 ? r1_rho(nu) : std::numeric_limits<double>::quiet_NaN());
      if (model == "R1") {
        mi.sp = make_r1(nu);
      } else if (model == "R2" || !Sm.empty()) {
        if (!(s2 >= 0) || !(rho >= 0))
          throw Error(AM_ERR_USAGE, "replica: R2 / Sigma need sigma2 >= 0 and rho >= 0 (or nu > 2 to derive them)");
        if (model == "R2")
          mi.sp = make_r2(rho, s2);
        else {
          mi.source = "Sigma";
          mi.sp = make_discrete(measure_from_sigma(Sm.data(), nS, rho, s2));
        }
      } else {
        mi.source = "J";
        mi.sp = make_discrete(finite_measure_from_J(Jm.data(), nJ, nu, finite_sites));
      }
      const Spectrum &sp = *mi.sp;

      // Simulations for this nu (all lambdas at once: the Gram matrix is shared).
      std::vector<std::vector<SimPoint>> sim;
      std::size_t simL = 0;
      if (sim_L > 0) {
        SimSpec ss;
        ss.nu = nu;
        ss.seeds = sim_seeds;
        ss.n_sites = sim_sites;
        ss.rho = rho;
        ss.sigma2 = s2;
        if (model == "R1") {
          ss.model = SimModel::R1;
          ss.L = sim_L;
        } else if (model == "R2") {
          ss.model = SimModel::R2;
          ss.L = sim_L;
        } else if (!Jm.empty()) {
          ss.model = SimModel::FiniteJ;
          ss.L = nJ;
          ss.J = Jm.data();
        } else {
          ss.model = SimModel::Sigma;
          ss.Sigma = Sm.data();
          ss.p_sigma = nS;
          ss.L = nS + 1;
        }
        simL = ss.L;
        am_rng rng_nu;
        am_rng host_rng;
        am_host_rng(host, &host_rng);
        am_rng_split(&host_rng, in, &rng_nu);
        auto prog = [&](double done, double tot) {
          return am_context_progress(ctx, static_cast<double>(in) + 0.9 * done / tot, total, "replica") != 0;
        };
        bool c = false;
        sim = simulate(ss, alphas, lambdas, rng_nu, prog, &c);
        if (c) cancelled = true;
      }

      std::vector<double> eps(nA), kap(nA), used(nA);
      for (std::size_t il = 0; il < nL; ++il) {
        const double lam = lambdas[il];
        for (std::size_t ia = 0; ia < nA; ++ia) {
          const SaddleResult r = solve(sp, alphas[ia], lam, o);
          eps[ia] = r.eps;
          kap[ia] = r.kappa;
          used[ia] = r.used_root ? 1.0 : 0.0;
        }
        am_record *c = am_record_append_object(curves);
        if (!c) throw Error(AM_ERR_NO_MEMORY, "replica: cannot grow the run record");
        check(am_record_set_string(c, "model", model.c_str()), "curves.model");
        if (!mi.source.empty()) check(am_record_set_string(c, "source", mi.source.c_str()), "curves.source");
        check(am_record_set_number(c, "nu", nu), "curves.nu");
        check(am_record_set_number(c, "lambda", lam), "curves.lambda");
        check(am_record_set_vector(c, "alpha", alphas.data(), nA), "curves.alpha");
        check(am_record_set_vector(c, "test_loss", eps.data(), nA), "curves.test_loss");
        check(am_record_set_vector(c, "kappa", kap.data(), nA), "curves.kappa");
        check(am_record_set_vector(c, "root_form", used.data(), nA), "curves.root_form");
        check(am_record_set_number(c, "bayes_loss", sp.sigma2()), "curves.bayes_loss");
        check(am_record_set_number(c, "rho", sp.rho()), "curves.rho");
        if (!sim.empty()) {
          std::vector<double> sm(nA), se(nA), se_seed(nA), se_site(nA), ar(nA), Ms(nA);
          for (std::size_t ia = 0; ia < nA; ++ia) {
            const SimPoint &pt = sim[ia][il];
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
          check(am_record_set_number(c, "sim_L", static_cast<double>(simL)), "curves.sim_L");
          check(am_record_set_number(c, "sim_seeds", static_cast<double>(sim_seeds)), "curves.sim_seeds");
          check(am_record_set_number(c, "sim_sites", static_cast<double>(sim_sites == 0 ? simL : sim_sites)),
                "curves.sim_sites");
          if (cancelled) check(am_record_set_bool(c, "sim_partial", 1), "curves.sim_partial");
        }
        // Interpolation peak at this lambda.
        const Peak pk = find_peak(sp, lam, o, prange[0], prange[1]);
        am_record *pe = am_record_append_object(peaks);
        if (!pe) throw Error(AM_ERR_NO_MEMORY, "replica: cannot grow the run record");
        check(am_record_set_string(pe, "model", model.c_str()), "peaks.model");
        check(am_record_set_number(pe, "nu", nu), "peaks.nu");
        check(am_record_set_number(pe, "lambda", lam), "peaks.lambda");
        check(am_record_set_number(pe, "alpha_star", pk.alpha), "peaks.alpha_star");
        check(am_record_set_number(pe, "height", pk.eps), "peaks.height");
        check(am_record_set_bool(pe, "interior", pk.interior ? 1 : 0), "peaks.interior");
        check(am_record_set_vector(pe, "range", prange.data(), 2), "peaks.range");
      }

      // Optimal lambda per alpha, ridgeless limit, and the test loss vs lambda table.
      {
        am_record *op = am_record_append_object(optimal);
        if (!op) throw Error(AM_ERR_NO_MEMORY, "replica: cannot grow the run record");
        check(am_record_set_string(op, "model", model.c_str()), "optimal.model");
        check(am_record_set_number(op, "nu", nu), "optimal.nu");
        check(am_record_set_vector(op, "alpha", alphas.data(), nA), "optimal.alpha");
        std::vector<double> r0(nA);
        for (std::size_t ia = 0; ia < nA; ++ia) r0[ia] = solve(sp, alphas[ia], 0.0, o).eps;
        check(am_record_set_vector(op, "test_loss_ridgeless", r0.data(), nA), "optimal.test_loss_ridgeless");
        check(am_record_set_number(op, "bayes_loss", sp.sigma2()), "optimal.bayes_loss");
        if (want_opt) {
          std::vector<double> lo(nA), eo(nA);
          for (std::size_t ia = 0; ia < nA; ++ia) {
            const Optimum q = optimal_lambda(sp, alphas[ia], o);
            lo[ia] = q.lambda;
            eo[ia] = q.eps;
          }
          check(am_record_set_vector(op, "lambda_opt", lo.data(), nA), "optimal.lambda_opt");
          check(am_record_set_vector(op, "test_loss_opt", eo.data(), nA), "optimal.test_loss_opt");
        }
        am_record *lc = am_record_append_object(lcurves);
        if (!lc) throw Error(AM_ERR_NO_MEMORY, "replica: cannot grow the run record");
        check(am_record_set_string(lc, "model", model.c_str()), "lambda_curves.model");
        check(am_record_set_number(lc, "nu", nu), "lambda_curves.nu");
        check(am_record_set_vector(lc, "alpha", alphas.data(), nA), "lambda_curves.alpha");
        check(am_record_set_vector(lc, "lambda", lscan.data(), lscan.size()), "lambda_curves.lambda");
        std::vector<double> tab(nA * lscan.size());  // column-major [alpha, lambda]
        SaddleOptions ro = o;
        if (ro.method == Method::Auto) ro.method = Method::Root;
        for (std::size_t jl = 0; jl < lscan.size(); ++jl)
          for (std::size_t ia = 0; ia < nA; ++ia) tab[ia + jl * nA] = solve(sp, alphas[ia], lscan[jl], ro).eps;
        check(am_record_set_matrix(lc, "test_loss", tab.data(), nA, lscan.size(), nA), "lambda_curves.test_loss");
      }
      if (am_context_progress(ctx, static_cast<double>(in + 1), total, "replica") != 0) cancelled = true;
    }

    // Hook for the discrete right panel (factored attention on Potts data, pseudolikelihood fit):
    // this estimator only records the request; the values come from task-potts +
    // estimator-pseudolikelihood runs with M = round(alpha L) (see docs/replica.md).
    if (!potts_alpha.empty()) {
      am_record *pp = am_record_object(out, "potts_panel");
      if (!pp) throw Error(AM_ERR_NO_MEMORY, "replica: cannot grow the run record");
      std::vector<double> Ms(potts_alpha.size());
      for (std::size_t k = 0; k < Ms.size(); ++k) Ms[k] = std::max(1.0, std::round(potts_alpha[k] * potts_L));
      check(am_record_set_string(pp, "status", "pending"), "potts_panel.status");
      check(am_record_set_string(pp, "producer", "task-potts + estimator-pseudolikelihood"), "potts_panel.producer");
      check(am_record_set_number(pp, "L", potts_L), "potts_panel.L");
      check(am_record_set_vector(pp, "alpha", potts_alpha.data(), potts_alpha.size()), "potts_panel.alpha");
      check(am_record_set_vector(pp, "M", Ms.data(), Ms.size()), "potts_panel.M");
      char cmd[160];
      std::snprintf(cmd, sizeof cmd, "attnmech run potts --estimator pseudolikelihood --set L=%.0f --set C=%.0f --set M={M}",
                    potts_L, potts_L);
      check(am_record_set_string(pp, "command", cmd), "potts_panel.command");
      check(am_record_set_string(pp, "fill_from", "runs[0].test_loss, runs[0].epsilon_star"), "potts_panel.fill_from");
#ifdef AM_REPLICA_WITH_POTTS
      am_rng prng;
      am_rng host_rng;
      am_host_rng(host, &host_rng);
      am_rng_split(&host_rng, 777, &prng);
      const am_status pst = fill_potts_panel(ctx, prng, (int)potts_L, get_num(P, "potts_l2", 1e-4),
                                             (size_t)get_num(P, "potts_M_test", 2000), potts_alpha, pp);
      if (pst == AM_CANCELLED) cancelled = true;
      else if (pst != AM_OK) return pst;
#else
      am_context_log(ctx, AM_LOG_INFO,
                     "replica: potts_panel recorded as a request (%zu values of alpha); its test losses come from "
                     "the pseudolikelihood estimator",
                     potts_alpha.size());
#endif
    }
    return cancelled ? AM_CANCELLED : AM_OK;
  } catch (const Error &e) {
    return am_context_fail(ctx, e.code, "%s", e.what());
  } catch (const std::bad_alloc &) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "replica: out of memory");
  } catch (const std::exception &e) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "replica: %s", e.what());
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_INTERNAL, "replica: unknown error");
  }
}

}  // namespace replica
