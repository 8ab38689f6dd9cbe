// attnmech — the theory estimator on an attention dataset (estimate.hpp), the policy only: the run's problem, the
// temperature list, the scan with its validation selection, the solve, the GP limits, and what a run stores (the
// results keys of docs/results-schema.md, each written here once). Where the P-sized work runs — this process, or
// the ranks of an MPI job — is the executor's (executor.hpp), chosen by the host's setting.
#include "estimate.hpp"

#include <attnmech/plugin.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine.hpp"  // plugins/common/scalapack: gather_rows (its stub without -Dscalapack)
#include "executor.hpp"

namespace am {
namespace attention {

namespace {

const char *status_name(am_status s) {
  switch (s) {
    case AM_OK: return "converged";
    case AM_CONVERGED_ROUNDOFF: return "converged_roundoff";
    case AM_ERR_NOT_CONVERGED: return "not_converged";
    case AM_CANCELLED: return "cancelled";
    default: return "error";
  }
}

am_status write_predictions(am_context *ctx, am_record *obj, const double *mean, const double *var, const double *y,
                            size_t n) {
  if (!obj) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "cannot build the results record");
  am_status st;
  if ((st = am_record_set_vector(obj, "mean", mean, n)) || (st = am_record_set_vector(obj, "var", var, n))) return st;
  double bias = 0, variance = 0, full = 0;
  if ((st = am_regression_errors(ctx, mean, var, y, n, &bias, &variance, &full))) return st;
  am_record_set_number(obj, "accuracy", am_accuracy(mean, y, n));
  am_record_set_number(obj, "bias_error", bias);
  am_record_set_number(obj, "variance_error", variance);
  am_record_set_number(obj, "full_accuracy", full);
  return AM_OK;
}

// The problem of one run: the architecture (widths from the run's inputs) and temperature, with the dataset's
// path inputs of every split.
struct Problem {
  am_arch arch;
  double T = 0;
  size_t P = 0, N0 = 0, H = 0;
  const Split &train, &test, &val, &ood;
  explicit Problem(const PathInputs &xi)
      : P(xi.P), N0(xi.N0), train(xi.train), test(xi.test), val(xi.val), ood(xi.ood) {}
};

am_status load_problem(am_context *ctx, const am_record *ds, const am_record *inputs, Problem *in) {
  am_arch_default(&in->arch);
  if (am_status st = am_dataset_arch_for(ctx, ds, inputs, &in->arch, &in->T)) return st;
  in->H = am_arch_paths(&in->arch);
  return AM_OK;
}

// The temperatures of the run: the options' grid, else the dataset's temperatures_scan, else its temperature.
am_status temperature_list(am_context *ctx, const am_record *ds, const Options &opt, double T_ds,
                           std::vector<double> *Ts) {
  Ts->clear();
  if (!opt.temperatures.empty()) {
    *Ts = opt.temperatures;
  } else if (am_record_get(ds, "temperatures_scan")) {
    size_t n = 0;
    am_status st = am_record_get_vector(ds, "temperatures_scan", nullptr, 0, &n);
    if ((st && st != AM_ERR_BUFFER_TOO_SMALL) || n == 0)
      return am_context_fail(ctx, AM_ERR_FORMAT, "dataset 'temperatures_scan' must be a non-empty list of numbers");
    Ts->resize(n);
    if ((st = am_record_get_vector(ds, "temperatures_scan", Ts->data(), n, &n)))
      return am_context_fail(ctx, st, "dataset 'temperatures_scan' could not be read");
  } else {
    Ts->push_back(T_ds);
  }
  for (double t : *Ts)
    if (!(t > 0) || !std::isfinite(t)) return am_context_fail(ctx, AM_ERR_DOMAIN, "temperature %g must be positive and finite", t);
  return AM_OK;
}

// Accuracy of the predictor with U1 on a split and, with `ll`, its log-likelihood at temperature T (NaN when the
// split is absent): the two scores of the validation selection (am_select_validation).
am_status score_on(am_context *ctx, am_theory *th, const double *U1, const Split &s, double T, double *acc,
                   double *ll = nullptr) {
  *acc = NAN;
  if (ll) *ll = NAN;
  if (s.n == 0) return AM_OK;
  std::vector<double> mean(s.n), var(s.n);
  if (am_status st = am_theory_predict(ctx, th, U1, s.n, s.xi.get(), mean.data(), var.data())) return st;
  *acc = am_accuracy(mean.data(), s.y.get(), s.n);
  if (ll) *ll = am_log_likelihood(mean.data(), var.data(), s.y.get(), s.n, T);
  return AM_OK;
}

// One solve per temperature, warm-started along the grid (a failed warm start is retried from the GP point).
struct Scan {
  std::vector<double> T, acc_val, acc_test, acc_ood, action, iterations, gp_val, gp_test, gp_ood;
  std::vector<double> ll_val, gp_ll_val;  // validation log-likelihoods (am_log_likelihood)
  std::vector<std::vector<double>> U;   // per T; empty when the solve failed outright
  std::vector<am_solve_report> rep;
  std::vector<am_status> status;
  std::vector<std::string> message;
  size_t failures = 0;
  double seconds = 0;
};

am_status scan_gp(am_context *ctx, am_theory *th, const Problem &in, const std::vector<double> &gp, Scan *sc) {
  const size_t nT = sc->T.size();
  for (auto *v : {&sc->gp_val, &sc->gp_test, &sc->gp_ood, &sc->gp_ll_val}) v->assign(nT, NAN);
  for (size_t i = 0; i < nT; ++i) {
    const double T = sc->T[i];
    am_status st;
    if ((st = am_theory_set_temperature(ctx, th, T)) ||
        (st = score_on(ctx, th, gp.data(), in.val, T, &sc->gp_val[i], &sc->gp_ll_val[i])) ||
        (st = score_on(ctx, th, gp.data(), in.test, T, &sc->gp_test[i])) ||
        (st = score_on(ctx, th, gp.data(), in.ood, T, &sc->gp_ood[i])))
      return st;
  }
  return AM_OK;
}

am_status scan_temperatures(am_context *ctx, am_theory *th, const Options &opt, const Problem &in,
                            const std::vector<double> &start, Scan *sc) {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t nT = sc->T.size(), usz = am_theory_u_size(th);
  std::vector<double> gp(usz), U(usz), Ulast = start;
  am_theory_gp_point(th, gp.data());
  am_status st = scan_gp(ctx, th, in, gp, sc);
  if (st) return st;
  for (auto *v : {&sc->acc_val, &sc->acc_test, &sc->acc_ood, &sc->action, &sc->iterations, &sc->ll_val}) v->assign(nT, NAN);
  sc->U.assign(nT, {});
  am_solve_report empty{};
  empty.struct_size = sizeof empty;
  sc->rep.assign(nT, empty);
  sc->status.assign(nT, AM_OK);
  sc->message.assign(nT, "");
  am_solve_settings ss = opt.solve;
  for (size_t i = 0; i < nT; ++i) {
    if ((st = am_theory_set_temperature(ctx, th, sc->T[i]))) return st;
    ss.warm_start = Ulast.empty() ? 0 : 1;
    U = Ulast.empty() ? gp : Ulast;
    am_solve_report rep;
    std::memset(&rep, 0, sizeof rep);
    rep.struct_size = sizeof rep;
    st = am_theory_solve(ctx, th, &ss, U.data(), &rep);
    if (st == AM_CANCELLED) return AM_CANCELLED;
    if (st < 0 && ss.warm_start) {
      U = gp;
      ss.warm_start = 0;
      st = am_theory_solve(ctx, th, &ss, U.data(), &rep);
    }
    sc->status[i] = st;
    if (st < 0) {
      ++sc->failures;
      sc->message[i] = am_context_last_error(ctx);
      am_context_log(ctx, AM_LOG_WARN, "theory: solve failed at T=%g (%s)", sc->T[i], am_status_string(st));
      if (st != AM_ERR_NOT_CONVERGED) continue;
    }
    sc->rep[i] = rep;
    sc->action[i] = rep.S_code;
    sc->iterations[i] = rep.iterations;
    if ((st = score_on(ctx, th, U.data(), in.val, sc->T[i], &sc->acc_val[i], &sc->ll_val[i])) ||
        (st = score_on(ctx, th, U.data(), in.test, sc->T[i], &sc->acc_test[i])) ||
        (st = score_on(ctx, th, U.data(), in.ood, sc->T[i], &sc->acc_ood[i])))
      return st;
    sc->U[i] = U;
    Ulast = U;
    if (am_context_progress(ctx, double(i + 1), double(nT), "theory: temperature scan")) return AM_CANCELLED;
  }
  sc->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return AM_OK;
}

// The temperature the validation split selects: the one rule of am_select_validation (docs/design.md "Choosing on
// validation data"; Python's Theory.select uses it too), over the scan's accuracies and log-likelihoods; n when
// every solve failed.
size_t validation_pick(const std::vector<double> &T, const std::vector<double> &acc, const std::vector<double> &ll) {
  size_t pick = T.size();
  am_select_validation(nullptr, T.size(), acc.data(), ll.data(), nullptr, nullptr, T.data(), &pick);
  return pick;
}

// Index of the first maximum of a criterion (NaN skipped); n when there is none. The test split's choice, the
// reference's procedure kept for comparison only (by_test).
size_t best_index(const std::vector<double> &crit) {
  size_t best = crit.size();
  for (size_t i = 0; i < crit.size(); ++i)
    if (!std::isnan(crit[i]) && (best == crit.size() || crit[i] > crit[best])) best = i;
  return best;
}

void write_choice(am_record *obj, const Problem &in, size_t i, const std::vector<double> &T, const std::vector<double> &val,
                  const std::vector<double> &test, const std::vector<double> &ood) {
  if (!obj || i >= T.size()) return;
  am_record_set_number(obj, "temperature", T[i]);
  if (in.test.n) am_record_set_number(obj, "accuracy_test", test[i]);
  if (in.ood.n) am_record_set_number(obj, "accuracy_ood", ood[i]);
  if (in.val.n) am_record_set_number(obj, "accuracy_val", val[i]);
}

// temperature_scan{…} of the run and gp.temperature_scan{…} (docs/results-schema.md).
am_status write_scan(am_context *ctx, am_record *run, const Problem &in, const Scan &sc, const char *selected_by) {
  am_record *ts = am_record_object(run, "temperature_scan");
  am_record *gp = am_record_object(run, "gp");
  am_record *gts = gp ? am_record_object(gp, "temperature_scan") : nullptr;
  if (!ts || !gts) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "cannot build the results record");
  const size_t nT = sc.T.size();
  am_record_set_vector(ts, "temperatures", sc.T.data(), nT);
  am_record_set_vector(gts, "temperatures", sc.T.data(), nT);
  for (const Split *s : {&in.val, &in.test, &in.ood}) {
    if (!s->n) continue;
    const std::string key = std::string("accuracy_") + s->name;
    const auto &a = s == &in.val ? sc.acc_val : s == &in.test ? sc.acc_test : sc.acc_ood;
    const auto &g = s == &in.val ? sc.gp_val : s == &in.test ? sc.gp_test : sc.gp_ood;
    am_record_set_vector(ts, key.c_str(), a.data(), nT);
    am_record_set_vector(gts, key.c_str(), g.data(), nT);
  }
  if (in.val.n) {
    am_record_set_vector(ts, "log_likelihood_val", sc.ll_val.data(), nT);
    am_record_set_vector(gts, "log_likelihood_val", sc.gp_ll_val.data(), nT);
  }
  am_record_set_vector(ts, "action", sc.action.data(), nT);
  am_record_set_vector(ts, "iterations", sc.iterations.data(), nT);
  am_record_set_number(ts, "failures", double(sc.failures));
  am_record_set_number(ts, "seconds", sc.seconds);
  am_record_set_string(ts, "selected_by", selected_by);
  if (in.val.n) {
    write_choice(am_record_object(ts, "by_validation"), in, validation_pick(sc.T, sc.acc_val, sc.ll_val), sc.T,
                 sc.acc_val, sc.acc_test, sc.acc_ood);
    write_choice(am_record_object(gts, "by_validation"), in, validation_pick(sc.T, sc.gp_val, sc.gp_ll_val), sc.T,
                 sc.gp_val, sc.gp_test, sc.gp_ood);
  }
  if (in.test.n) {
    write_choice(am_record_object(ts, "by_test"), in, best_index(sc.acc_test), sc.T, sc.acc_val, sc.acc_test, sc.acc_ood);
    write_choice(am_record_object(gts, "by_test"), in, best_index(sc.gp_test), sc.T, sc.gp_val, sc.gp_test, sc.gp_ood);
  }
  return AM_OK;
}

// The solution the run reports: U, its solve report and status, at temperature T.
struct Solution {
  double T = 0;
  std::vector<double> U;
  am_solve_report rep{};
  am_status status = AM_OK;
  std::string message;
};

// The run's optional starting state {"U": [U_1, …, U_L]} (inputs "start": am_run_spec_set_start, e.g. the
// previous point of a sweep) packed like the solver's U; empty (a cold start from the GP point) unless every U_l is a finite
// D_l × D_l f64 matrix.
std::vector<double> start_state(const am_record *inputs, am_theory *th, const Problem &in) {
  const am_record *st = am_record_get(inputs, "start");
  const am_record *ul = st ? am_record_get(st, "U") : nullptr;
  if (!ul || am_record_type_of(ul) != AM_REC_LIST || am_record_size(ul) != in.arch.layers) return {};
  std::vector<double> U(am_theory_u_size(th));
  for (uint32_t l = 1; l <= in.arch.layers; ++l) {
    const size_t d = am_arch_dim(&in.arch, l);
    am_array_view v;
    if (am_record_array(am_record_at(ul, l - 1), &v) != AM_OK || v.dtype != AM_F64 || v.ndim != 2 || v.shape[0] != d ||
        v.shape[1] != d)
      return {};
    const double *m = static_cast<const double *>(v.data);
    double *dst = U.data() + am_theory_u_offset(th, l);
    for (size_t j = 0; j < d; ++j)
      for (size_t i = 0; i < d; ++i) dst[i + d * j] = v.fortran_order ? m[i + d * j] : m[i * d + j];
  }
  for (double x : U)
    if (!std::isfinite(x)) return {};
  return U;
}

// Solve at the dataset's temperature (no grid), or scan the grid and pick the validation-selected T (the
// dataset's T when it has no validation split and the T is in the grid; else a separate solve at it).
am_status solve_run(am_context *ctx, am_theory *th, const Options &opt, const Problem &in,
                    const std::vector<double> &Ts, const std::vector<double> &start, am_record *run, Solution *sol) {
  sol->U.assign(am_theory_u_size(th), 0.0);
  size_t pick = Ts.size();
  if (Ts.size() > 1) {
    Scan sc;
    sc.T = Ts;
    am_status st = scan_temperatures(ctx, th, opt, in, start, &sc);
    if (st) return st;
    if (in.val.n) {
      pick = validation_pick(Ts, sc.acc_val, sc.ll_val);
      if (pick == Ts.size()) return am_context_fail(ctx, AM_ERR_NOT_CONVERGED, "theory: every solve of the temperature scan failed");
    } else {
      pick = std::find(Ts.begin(), Ts.end(), in.T) - Ts.begin();
      if (pick < Ts.size() && sc.U[pick].empty()) pick = Ts.size();
    }
    if ((st = write_scan(ctx, run, in, sc, in.val.n ? "validation" : "dataset"))) return st;
    if (pick < Ts.size()) {
      sol->T = Ts[pick];
      sol->U = sc.U[pick];
      sol->rep = sc.rep[pick];
      sol->status = sc.status[pick];
      sol->message = sc.status[pick] == AM_ERR_NOT_CONVERGED ? sc.message[pick] : "";
      return am_theory_set_temperature(ctx, th, sol->T);
    }
  }
  sol->T = Ts.size() == 1 ? Ts[0] : in.T;
  if (am_status st = am_theory_set_temperature(ctx, th, sol->T)) return st;
  std::memset(&sol->rep, 0, sizeof sol->rep);
  sol->rep.struct_size = sizeof sol->rep;
  am_solve_settings ss = opt.solve;
  if (!start.empty()) {  // warm start; a failed one is retried from the GP point
    sol->U = start;
    ss.warm_start = 1;
    sol->status = am_theory_solve(ctx, th, &ss, sol->U.data(), &sol->rep);
    if (sol->status >= 0 || sol->status == AM_CANCELLED) return sol->status < 0 ? sol->status : AM_OK;
    ss.warm_start = 0;
    std::memset(&sol->rep, 0, sizeof sol->rep);
    sol->rep.struct_size = sizeof sol->rep;
  }
  sol->status = am_theory_solve(ctx, th, &ss, sol->U.data(), &sol->rep);
  if (sol->status < 0 && sol->status != AM_ERR_NOT_CONVERGED) return sol->status;
  sol->message = sol->status == AM_ERR_NOT_CONVERGED ? am_context_last_error(ctx) : "";
  return AM_OK;
}

am_status write_solution(am_context *ctx, const am_record *ds, const Problem &in, am_theory *th, const Solution &sol,
                         am_record *run) {
  am_record_set_vector(run, "widths", in.arch.widths, in.arch.layers + 1);
  am_record_set_number(run, "temperature", sol.T);
  am_record *ul = am_record_list(run, "U");
  if (!ul) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "cannot build the results record");
  for (uint32_t l = 1; l <= in.arch.layers; ++l) {
    const size_t d = am_arch_dim(&in.arch, l);
    am_array_view v = am::sdk::f64_view(sol.U.data() + am_theory_u_offset(th, l), {d, d}, true);
    if (am_status st = am_record_append_array(ul, &v)) return st;
  }
  const am_solve_report &rep = sol.rep;
  am_record_set_number(run, "U_a", rep.U_a);
  am_record_set_number(run, "action", rep.S_code);
  am_record_set_number(run, "energy", rep.energy);
  am_record_set_number(run, "entropy", rep.entropy);
  am_record *sv = am_record_object(run, "solver");
  am_record_set_number(sv, "iterations", rep.iterations);
  am_record_set_number(sv, "grad_max", rep.grad_max);
  am_record_set_number(sv, "grad_vech_norm", rep.grad_vech_norm);
  am_record_set_number(sv, "decrement", rep.decrement);
  am_record_set_number(sv, "hessian_min_eig", rep.hessian_min_eig);
  am_record_set_string(sv, "status", status_name(rep.status));
  if (!sol.message.empty()) am_record_set_string(sv, "message", sol.message.c_str());
  if (const am_record *pl = am_record_get(ds, "path_labels")) am_record_set_copy(run, "path_labels", pl);
  return AM_OK;
}

// Predictions of the renormalised (U) and GP predictors on every evaluation split: <split>{…}, gp.<split>{…}. The
// splits of one predictor in turn, then the GP action: the handle factors Γ once per predictor (it keeps the factor
// at the solution from the solve, then the GP point's).
am_status write_all_predictions(am_context *ctx, const Problem &in, am_theory *th, const double *U, const double *Ugp,
                                am_record *run) {
  am_record *gp = nullptr;
  for (const bool at_gp : {false, true})
    for (const Split *s : {&in.test, &in.val, &in.ood}) {
      if (!s->n) continue;
      if (!gp && !(gp = am_record_object(run, "gp")))
        return am_context_fail(ctx, AM_ERR_NO_MEMORY, "cannot build the results record");
      std::vector<double> mean(s->n), var(s->n);
      am_status st;
      if ((st = am_theory_predict(ctx, th, at_gp ? Ugp : U, s->n, s->xi.get(), mean.data(), var.data()))) return st;
      am_record *obj = am_record_object(at_gp ? gp : run, s->name);
      if ((st = write_predictions(ctx, obj, mean.data(), var.data(), s->y.get(), s->n))) return st;
    }
  if (gp) {
    am_action gpa{};
    gpa.struct_size = sizeof gpa;
    if (am_theory_action(ctx, th, Ugp, &gpa, nullptr, nullptr) == AM_OK) am_record_set_number(gp, "action", gpa.S_code);
  }
  return AM_OK;
}

// The heat maps of the kernels show the first and the last kKernelTrim training examples (report.hpp kernel_map).
constexpr size_t kKernelTrim = 25;

// al.<name> and al.<name>_eigenvalues (overlaps and the eigenvalues of its k leading components).
void set_alignment(am_record *al, const std::string &name, const std::vector<double> &o, const std::vector<double> &e) {
  am_record_set_vector(al, name.c_str(), o.data(), o.size());
  am_record_set_vector(al, (name + "_eigenvalues").c_str(), e.data(), e.size());
}

// The training examples whose kernel rows and columns the heat maps draw (report.hpp kernel_map: trim 25, so all
// of them up to 2·25 + 10, else the first and the last 25).
std::vector<size_t> kernel_examples(size_t P) {
  std::vector<size_t> ex;
  for (size_t i = 0; i < P; ++i)
    if (P <= 2 * kKernelTrim + 10 || i < kKernelTrim || i >= P - kKernelTrim) ex.push_back(i);
  return ex;
}

// The blocks of the kernels the heat maps draw (each m×m, path: m×m×H) and each whole kernel's smallest element.
struct KernelBlocks {
  std::vector<size_t> ex;  // kernel_examples
  std::vector<double> rn, gp, path, path_min;
  double rn_min = 0, gp_min = 0;
  KernelBlocks(size_t P, size_t H)
      : ex(kernel_examples(P)), rn(ex.size() * ex.size()), gp(rn.size()), path(rn.size() * H), path_min(H) {}
};

// kernels{rn, gp, path, examples, min{rn, gp, path}} from the blocks.
void set_kernel_blocks(const KernelBlocks &b, size_t H, am_record *kr) {
  const size_t m = b.ex.size();
  am_array_view v = am::sdk::f64_view(b.rn.data(), {m, m}, true);
  am_record_set_array(kr, "rn", &v);
  v = am::sdk::f64_view(b.gp.data(), {m, m}, true);
  am_record_set_array(kr, "gp", &v);
  v = am::sdk::f64_view(b.path.data(), {m, m, H}, true);  // element (a, b, π) at a + m·(b + m·π)
  am_record_set_array(kr, "path", &v);
  const std::vector<int64_t> idx(b.ex.begin(), b.ex.end());
  const size_t n = m;
  const am_array_view iv = am_array_view_make(AM_I64, 1, &n, 0, idx.data());
  am_record_set_array(kr, "examples", &iv);
  am_record *lo = am_record_object(kr, "min");
  am_record_set_number(lo, "rn", b.rn_min);
  am_record_set_number(lo, "gp", b.gp_min);
  am_record_set_vector(lo, "path", b.path_min.data(), H);
}

// One training kernel (K_U at U) from the executor as `out` asks, its alignment stored as al.<name> when k > 0.
am_status kernel_with_alignment(am_context *ctx, Executor &ex, const double *U, const std::vector<size_t> &examples,
                                size_t k, KernelOut *out, am_record *al, const char *name) {
  std::vector<double> o(k), e(k);
  out->overlaps = o.data();
  out->eigenvalues = e.data();
  const am_status st = ex.kernel(ctx, U, examples, k, out);
  out->overlaps = out->eigenvalues = nullptr;
  if (st) return st;
  if (k > 0) set_alignment(al, name, o, e);
  return AM_OK;
}

// The alignment of the renormalised (U) and GP (Ugp) kernels, and with store_kernels the blocks the plots draw
// (set_kernel_blocks): the executor builds one kernel at a time and hands back only these summaries.
am_status write_kernel_summaries(am_context *ctx, const Options &opt, const Problem &in, Executor &ex, const double *U,
                                 const double *Ugp, size_t k, am_record *run) {
  KernelBlocks b(opt.store_kernels ? in.P : 0, in.H);  // P = 0: no examples (the alignment only)
  am_record *al = k > 0 ? am_record_object(run, "alignment") : nullptr;
  KernelOut out;
  out.block = b.rn.data();
  if (am_status st = kernel_with_alignment(ctx, ex, U, b.ex, k, &out, al, "rn")) return st;
  b.rn_min = out.min;
  out.block = b.gp.data();
  if (am_status st = kernel_with_alignment(ctx, ex, Ugp, b.ex, k, &out, al, "gp")) return st;
  b.gp_min = out.min;
  if (!opt.store_kernels) return AM_OK;
  const size_t m = b.ex.size();
  for (size_t p = 0; p < in.H; ++p) {
    out.block = b.path.data() + p * m * m;
    if (am_status st = ex.prekernel(ctx, p, b.ex, &out)) return st;
    b.path_min[p] = out.min;
  }
  set_kernel_blocks(b, in.H, am_record_object(run, "kernels"));
  return AM_OK;
}

// kernels=full: the alignment and the whole kernels — rn and gp (P×P, both held while they are built and stored),
// then the H_tot path pre-kernels (P×P×H) once rn's buffer is freed.
am_status write_whole_kernels(am_context *ctx, const Problem &in, Executor &ex, const double *U, const double *Ugp,
                              size_t k, am_record *run) {
  const size_t P = in.P, H = in.H;
  std::vector<double> Krn(P * P), Kgp(P * P);
  am_record *al = k > 0 ? am_record_object(run, "alignment") : nullptr;
  KernelOut out;
  out.whole = Krn.data();
  if (am_status st = kernel_with_alignment(ctx, ex, U, {}, k, &out, al, "rn")) return st;
  out.whole = Kgp.data();
  if (am_status st = kernel_with_alignment(ctx, ex, Ugp, {}, k, &out, al, "gp")) return st;
  am_record *kr = am_record_object(run, "kernels");
  am_array_view v = am::sdk::f64_view(Krn.data(), {P, P}, true);
  am_record_set_array(kr, "rn", &v);
  v = am::sdk::f64_view(Kgp.data(), {P, P}, true);
  am_record_set_array(kr, "gp", &v);
  Krn.clear();
  Krn.shrink_to_fit();
  std::vector<double> C(H * P * P);
  for (size_t p = 0; p < H; ++p) {
    out.whole = C.data() + p * P * P;
    if (am_status st = ex.prekernel(ctx, p, {}, &out)) return st;
  }
  const am_array_view cv = am::sdk::f64_view(C.data(), {P, P, H}, true);  // element (μ, ν, π) at μ + P·(ν + P·π)
  am_record_set_array(kr, "path", &cv);
  return AM_OK;
}

// The training kernels: their alignment with the labels (alignment_k components), and with store_kernels the
// kernels themselves — whole (full_kernels) or the blocks the plots draw. A process that makes none (a distributed
// run's other ranks, when one rank builds whole kernels) stores none.
am_status write_kernels(am_context *ctx, const Options &opt, const Problem &in, Executor &ex, const double *U,
                        const double *Ugp, am_record *run) {
  if (opt.alignment_k == 0 && !opt.store_kernels) return AM_OK;
  const bool whole = opt.store_kernels && opt.full_kernels;
  if (!ex.makes_kernels(whole)) return AM_OK;
  const size_t k = std::min<size_t>(opt.alignment_k, in.P);
  return whole ? write_whole_kernels(ctx, in, ex, U, Ugp, k, run)
               : write_kernel_summaries(ctx, opt, in, ex, U, Ugp, k, run);
}

am_status write_head_scores(am_context *ctx, const am_arch &arch, const double *U, am_record *run) {
  size_t nh = 0;
  for (uint32_t l = 0; l < arch.layers; ++l) nh += arch.heads[l];
  std::vector<double> sc(nh);
  if (am_status st = am_head_scores(ctx, &arch, U, sc.data())) return st;
  am_record_set_vector(run, "head_scores", sc.data(), nh);
  am_record *hl = am_record_list(run, "head_labels");
  for (uint32_t l = 1; l <= arch.layers; ++l)
    for (uint32_t h = 1; h <= arch.heads[l - 1]; ++h)
      am_record_append_string(hl, ("l" + std::to_string(l) + "_h" + std::to_string(h)).c_str());
  return AM_OK;
}

// Path indices of one entry of the dataset's path_subsets (dataset.h), validated against H_tot.
am_status subset_paths(am_context *ctx, const am_record *e, size_t H, std::string *name, std::vector<size_t> *paths) {
  const char *nm = nullptr;
  if (am_record_get_string(e, "name", &nm) || !nm)
    return am_context_fail(ctx, AM_ERR_FORMAT, "dataset 'path_subsets': every entry needs a string 'name'");
  *name = nm;
  size_t n = 0;
  am_status st = am_record_get_vector(e, "paths", nullptr, 0, &n);
  if ((st && st != AM_ERR_BUFFER_TOO_SMALL) || n == 0)
    return am_context_fail(ctx, AM_ERR_FORMAT, "dataset 'path_subsets' entry '%s' needs a non-empty list 'paths'", nm);
  std::vector<double> v(n);
  if ((st = am_record_get_vector(e, "paths", v.data(), n, &n))) return am_context_fail(ctx, st, "path_subsets '%s' unreadable", nm);
  paths->clear();
  for (double x : v) {
    if (!(x >= 0) || x != std::floor(x) || x >= double(H) ||
        std::find(paths->begin(), paths->end(), size_t(x)) != paths->end())
      return am_context_fail(ctx, AM_ERR_DOMAIN, "path_subsets '%s': path %g is not a distinct index in 0..%zu", nm, x, H - 1);
    paths->push_back(size_t(x));
  }
  return AM_OK;
}

// ξ of the sub-network made of `paths`: the same path vectors, normalised by 1/√H_sub instead of 1/√H_tot.
std::vector<double> sub_xi(const Split &s, size_t N0, size_t H, const std::vector<size_t> &paths) {
  const size_t block = s.n * N0;
  const double r = std::sqrt(double(H) / double(paths.size()));
  std::vector<double> out(block * paths.size());
  for (size_t k = 0; k < paths.size(); ++k) {
    const double *src = s.xi.get() + paths[k] * block;
    for (size_t i = 0; i < block; ++i) out[k * block + i] = r * src[i];
  }
  return out;
}

// gp_subsets[…]: the GP limit of every sub-network of the dataset's path_subsets at temperature T. The
// sub-network's GP kernel is (s_1⋯s_L s_a / H_sub) Σ_{π∈sub} C^{ππ}: a one-layer theory over the selected
// path columns with s_1 = s_1⋯s_L has exactly this GP point.
am_status write_gp_subsets(am_context *ctx, const am_record *ds, const Problem &in, double T, Executor &ex,
                           am_record *run) {
  const am_record *subs = am_record_get(ds, "path_subsets");
  if (!subs || in.test.n == 0) return AM_OK;
  if (am_record_type_of(subs) != AM_REC_LIST) return am_context_fail(ctx, AM_ERR_FORMAT, "dataset 'path_subsets' must be a list");
  am_record *out = am_record_list(run, "gp_subsets");
  if (!out) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "cannot build the results record");
  for (size_t k = 0; k < am_record_size(subs); ++k) {
    std::string name;
    std::vector<size_t> paths;
    am_status st = subset_paths(ctx, am_record_at(subs, k), in.H, &name, &paths);
    if (st) return st;
    am_arch sub;
    am_arch_default(&sub);
    sub.layers = 1;
    sub.heads[0] = uint32_t(paths.size());
    sub.widths[0] = sub.widths[1] = *std::max_element(in.arch.widths, in.arch.widths + in.arch.layers + 1);
    sub.variances[0] = in.arch.variances[0];
    sub.variances[1] = 1.0;
    for (uint32_t l = 1; l <= in.arch.layers; ++l) sub.variances[1] *= in.arch.variances[l];
    sub.variances[2] = in.arch.variances[in.arch.layers + 1];
    const std::vector<double> xtr = sub_xi(in.train, in.N0, in.H, paths), xte = sub_xi(in.test, in.N0, in.H, paths);
    am_theory *t = nullptr;
    // the subset's ξ (xtr) outlives its handle (tp below): the handle reads it in place
    if ((st = am_theory_create_view(ctx, &t, &sub, in.P, in.N0, xtr.data(), in.train.y.get(), T))) return st;
    am::sdk::Theory tp(t);
    if ((st = ex.attach(ctx, t, in.P, in.N0, paths.size(), xtr.data(), in.train.y.get(), false))) return st;
    std::vector<double> U(am_theory_u_size(t)), mean(in.test.n), var(in.test.n);
    am_theory_gp_point(t, U.data());
    if ((st = am_theory_predict(ctx, t, U.data(), in.test.n, xte.data(), mean.data(), var.data()))) return st;
    am_record *e = am_record_append_object(out);
    am_record *pl = e ? am_record_list(e, "paths") : nullptr;
    if (!pl) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "cannot build the results record");
    am_record_set_string(e, "name", name.c_str());
    for (size_t p : paths) am_record_append_number(pl, double(p));
    if ((st = write_predictions(ctx, am_record_object(e, "test"), mean.data(), var.data(), in.test.y.get(), in.test.n)))
      return st;
  }
  return AM_OK;
}

// The whole run's peak, checked before the theory is built: the handle, the Newton solve, predictions on the largest
// split, the kernels and their alignment, on top of what the process already holds — measured (its resident set:
// the CLI's or the host's own footprint and the dataset included), else the ξ of every split. Where those matrices
// live — whole in this process, or a share on each rank — is the executor's to count.
am_status check_memory(am_context *ctx, const am_record *ds, const Options &opt, const Problem &in, Executor &ex) {
  RunShape s;
  s.arch = &in.arch;
  s.P = in.P;
  s.N0 = in.N0;
  s.H = in.H;
  s.Pt = std::max({in.test.n, in.val.n, in.ood.n});
  s.k = std::min<size_t>(opt.alignment_k, in.P);
  s.store_kernels = opt.store_kernels;
  s.whole_kernels = opt.store_kernels && opt.full_kernels;
  s.subsets = am_record_get(ds, "path_subsets") != nullptr;
  const double xi = double(in.P + in.test.n + in.val.n + in.ood.n) * double(in.N0) * double(in.H);
  s.extra_doubles = std::max(xi, resident_bytes() / 8.0);
  const std::string share = ex.share();
  char what[200];
  std::snprintf(what, sizeof what, "the run (P = %zu, N0 = %zu, %zu path%s%s%s)", in.P, in.N0, in.H,
                in.H == 1 ? "" : "s", s.k > 0 ? ", alignment" : "", share.c_str());
  return ex.check_memory(ctx, s, what);
}

// The solution and everything reported with it, into `run`.
am_status write_run(am_context *ctx, const am_record *ds, const Options &opt, const Problem &in, am_theory *th,
                    const Solution &sol, Executor &ex, am_record *run) {
  std::vector<double> Ugp(am_theory_u_size(th));
  am_theory_gp_point(th, Ugp.data());
  // After the solve: phases of P³ work (a factorisation per split and subset), then the kernels (P²·N0·H each, and
  // their alignment from the kernel's factor), told as they start so a long run's progress line names what it does.
  const auto cancelled = [&](int i, const char *what) {
    return am_context_progress(ctx, i, 3, (std::string("theory: ") + what).c_str()) != 0;
  };
  AM_SDK_TRY(write_solution(ctx, ds, in, th, sol, run));
  if (cancelled(0, "predictions")) return AM_CANCELLED;
  AM_SDK_TRY(write_all_predictions(ctx, in, th, sol.U.data(), Ugp.data(), run));
  ex.predictions_done();
  if (cancelled(1, "GP of the path subsets")) return AM_CANCELLED;
  AM_SDK_TRY(write_gp_subsets(ctx, ds, in, sol.T, ex, run));
  if (cancelled(2, opt.alignment_k > 0 ? "kernels and their alignment" : "kernels")) return AM_CANCELLED;
  AM_SDK_TRY(write_kernels(ctx, opt, in, ex, sol.U.data(), Ugp.data(), run));
  return write_head_scores(ctx, in.arch, sol.U.data(), run);
}

am_status estimate_run(am_context *ctx, const am_record *ds, const am_record *inputs, const PathInputs &xi,
                       const Options &opt, am_record *run) {
  Problem in(xi);
  AM_SDK_TRY(load_problem(ctx, ds, inputs, &in));
  std::vector<double> Ts;
  AM_SDK_TRY(temperature_list(ctx, ds, opt, in.T, &Ts));
  const std::unique_ptr<Executor> ex = make_executor(ctx);
  AM_SDK_TRY(check_memory(ctx, ds, opt, in, *ex));
  am_theory *th = nullptr;
  // The handle reads the training ξ and y in place (they outlive it: the caller's PathInputs).
  AM_SDK_TRY(am_theory_create_view(ctx, &th, &in.arch, in.P, in.N0, in.train.xi.get(), in.train.y.get(), Ts[0]));
  am::sdk::Theory thp(th);
  AM_SDK_TRY(ex->attach(ctx, th, in.P, in.N0, in.H, in.train.xi.get(), in.train.y.get(), true));
  Solution sol;
  AM_SDK_TRY(solve_run(ctx, th, opt, in, Ts, start_state(inputs, th, in), run, &sol));
  const am_status wst = write_run(ctx, ds, opt, in, th, sol, *ex, run);  // AM_CANCELLED: stopped between its phases
  if (wst < 0) return wst;
  if (sol.status == AM_ERR_NOT_CONVERGED) return am_context_fail(ctx, AM_ERR_NOT_CONVERGED, "%s", sol.message.c_str());
  return sol.status == AM_CANCELLED || wst == AM_CANCELLED ? AM_CANCELLED : AM_OK;
}

}  // namespace

namespace {

// The rows of split `name` this process holds when the dataset was made in parts (dataset.h key `part`: [begin,
// total], the rows [begin, begin + n) of `total`): AM_OK with *parted = true; a whole split: *parted = false.
am_status split_part(am_context *ctx, const am_record *ds, const char *name, bool *parted, size_t *begin,
                     size_t *total) {
  *parted = false;
  const am_record *part = am_record_get(ds, "part");
  if (!part || !am_record_get(part, name)) return AM_OK;
  double v[2] = {-1, -1};
  size_t n = 0;
  if (am_record_get_vector(part, name, v, 2, &n) != AM_OK || n != 2 || !(v[0] >= 0) || !(v[1] >= 1) ||
      v[0] != std::floor(v[0]) || v[1] != std::floor(v[1]))
    return am_context_fail(ctx, AM_ERR_FORMAT, "dataset 'part.%s' must be [begin, total]: the first row of X_%s and "
                           "the rows of the whole split", name, name);
  *parted = true;
  *begin = size_t(v[0]);
  *total = size_t(v[1]);
  return AM_OK;
}

// A split of which this process made rows [begin, begin + s->n): its ξ and labels made whole from every rank's rows
// (am::scalapack::gather_rows; every rank calls it, `mine` its status so far).
am_status gather_split(am_context *ctx, am_status mine, const am_record *ds, size_t begin, size_t total, Split *s) {
  am_arch arch;
  am_arch_default(&arch);
  size_t cols = 0;
  if (mine == AM_OK && (mine = am_dataset_arch(ctx, ds, &arch, nullptr)) == AM_OK) {
    size_t n0 = 0;
    am_array_view v;
    if (am_record_get_array(ds, (std::string("X_") + s->name).c_str(), &v) == AM_OK && v.ndim == 3) n0 = v.shape[2];
    cols = n0 * am_arch_paths(&arch);
  }
  const std::string what = std::string("ξ of X_") + s->name;
  double *xi = nullptr, *y = nullptr;
  am_status st = am::scalapack::gather_rows(ctx, mine, what.c_str(), s->xi.get(), s->n, cols, begin, total, &xi);
  s->xi = DoubleBuffer(xi, FreeDoubles{false});
  if (st) return st;
  st = am::scalapack::gather_rows(ctx, AM_OK, (std::string("y_") + s->name).c_str(), s->y.get(), s->n, 1, begin,
                                  total, &y);
  s->y = DoubleBuffer(y, FreeDoubles{false});
  s->n = st ? 0 : total;
  return st;
}

}  // namespace

am_status load_split(am_context *ctx, const am_record *ds, const char *name, size_t N0, Split *s, size_t *N0_out) {
  s->name = name;
  if (!am_record_get(ds, (std::string("X_") + name).c_str())) return AM_OK;
  bool parted = false;
  size_t begin = 0, total = 0;
  AM_SDK_TRY(split_part(ctx, ds, name, &parted, &begin, &total));
  double *a = nullptr, *b = nullptr;
  size_t n = 0, n0 = 0;
  am_array_view xv;
  const bool none = parted && am_record_get_array(ds, (std::string("X_") + name).c_str(), &xv) == AM_OK &&
                    xv.ndim == 3 && xv.shape[0] == 0;  // a part of no rows (more ranks than examples)
  am_status st = none ? AM_OK : am_dataset_xi(ctx, ds, name, &a, &n, &n0, &b);
  if (none) n0 = xv.shape[2];
  s->xi.reset(a);
  s->y.reset(b);
  s->n = n;
  if (st == AM_OK && N0 && n0 != N0)
    st = am_context_fail(ctx, AM_ERR_SHAPE, "X_%s has token dimension %zu, X_train %zu", name, n0, N0);
  if (parted) st = gather_split(ctx, st, ds, begin, total, s);  // every rank, whatever its own status
  if (st) return st;
  if (N0_out) *N0_out = n0;
  return AM_OK;
}

am_status load_path_inputs(am_context *ctx, const am_record *ds, PathInputs *out) {
  return am::sdk::guard(ctx, nullptr, [&]() -> am_status {
    AM_SDK_TRY(load_split(ctx, ds, "train", 0, &out->train, &out->N0));
    if (out->train.n == 0) return am_context_fail(ctx, AM_ERR_NOT_FOUND, "dataset has no array 'X_train'");
    out->P = out->train.n;
    AM_SDK_TRY(load_split(ctx, ds, "test", out->N0, &out->test));
    AM_SDK_TRY(load_split(ctx, ds, "val", out->N0, &out->val));
    return load_split(ctx, ds, "ood", out->N0, &out->ood);
  });
}

am_status estimate(am_context *ctx, const am_record *ds, const am_record *inputs, const PathInputs &xi,
                   const Options &opt, am_record *run) {
  return am::sdk::guard(ctx, nullptr, [&]() -> am_status {
    if (!ds || !inputs || !run) return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "dataset, inputs or run record is NULL");
    return estimate_run(ctx, ds, inputs, xi, opt, run);
  });
}

am_status estimate(am_context *ctx, const am_record *ds, const am_record *inputs, const Options &opt, am_record *run) {
  if (!ds) return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "dataset, inputs or run record is NULL");
  PathInputs xi;
  AM_SDK_TRY(load_path_inputs(ctx, ds, &xi));
  return estimate(ctx, ds, inputs, xi, opt, run);
}

}  // namespace attention
}  // namespace am
