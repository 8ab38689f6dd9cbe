// attnmech — the theory estimator on an attention dataset: ξ → Newton solve → predictions, GP limit,
// alignment, head scores, written into a results record (keys: docs/results-schema.md).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "attnmech/dataset.h"
#include "attnmech/theory.h"
#include "internal.hpp"

namespace {

struct freer {
  void operator()(double *p) const { std::free(p); }
};
using dbuf = std::unique_ptr<double, freer>;

am_array_view matrix_view(const double *m, size_t rows, size_t cols) {
  am_array_view v;
  std::memset(&v, 0, sizeof v);
  v.dtype = AM_F64;
  v.ndim = 2;
  v.shape[0] = rows;
  v.shape[1] = cols;
  v.fortran_order = 1;
  v.data = m;
  return v;
}

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

}  // namespace

extern "C" {

AM_API void am_theory_default_options(am_theory_options *o) {
  if (!o) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  am_solve_default_settings(&o->solve);
  o->alignment_k = 30;
  o->store_kernels = 0;
}

AM_API am_status am_theory_estimate(am_context *ctx, const am_record *ds, const am_theory_options *opt_in,
                                    am_record *run) {
  return am::guarded(ctx, [&]() -> am_status {
    if (!ds || !run) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "dataset or run record is NULL");
    am_theory_options opt;
    am_theory_default_options(&opt);
    if (opt_in) {
      if (opt_in->struct_size < offsetof(am_theory_options, store_kernels))
        return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "am_theory_options.struct_size too small");
      std::memcpy(&opt, opt_in, std::min<size_t>(opt_in->struct_size, sizeof opt));
      opt.struct_size = sizeof opt;
    }
    am_arch arch;
    double T = 0;
    am_status st = am_dataset_arch(ctx, ds, &arch, &T);
    if (st) return st;
    double *xr = nullptr, *yr = nullptr;
    size_t P = 0, N0 = 0;
    if ((st = am_dataset_xi(ctx, ds, "train", &xr, &P, &N0, &yr))) return st;
    dbuf xi(xr), y(yr);
    const size_t H = am_arch_paths(&arch);
    dbuf xit, yt;
    size_t Pt = 0, N0t = 0;
    const bool has_test = am_record_get(ds, "X_test") != nullptr;
    if (has_test) {
      double *a = nullptr, *b = nullptr;
      if ((st = am_dataset_xi(ctx, ds, "test", &a, &Pt, &N0t, &b))) return st;
      xit.reset(a);
      yt.reset(b);
      if (N0t != N0) return am::fail(ctx, AM_ERR_SHAPE, "X_test has token dimension %zu, X_train %zu", N0t, N0);
    }
    am_theory *th = nullptr;
    if ((st = am_theory_create(ctx, &th, &arch, P, N0, xi.get(), y.get(), T))) return st;
    std::unique_ptr<am_theory, void (*)(am_theory *)> thp(th, [](am_theory *t) { am_theory_destroy(&t); });

    std::vector<double> U(am_theory_u_size(th)), Ugp(am_theory_u_size(th));
    am_theory_gp_point(th, Ugp.data());
    am_solve_report rep;
    std::memset(&rep, 0, sizeof rep);
    const am_status solve_st = am_theory_solve(ctx, th, &opt.solve, U.data(), &rep);
    if (solve_st < 0 && solve_st != AM_ERR_NOT_CONVERGED) return solve_st;
    std::string solve_msg = solve_st == AM_ERR_NOT_CONVERGED ? am_context_last_error(ctx) : "";

    // --- order parameters and action
    am_record_set_vector(run, "widths", arch.widths, arch.layers + 1);
    am_record_set_number(run, "temperature", T);
    am_record *ul = am_record_list(run, "U");
    if (!ul) return am::fail(ctx, AM_ERR_NO_MEMORY, "cannot build the results record");
    for (uint32_t l = 1; l <= arch.layers; ++l) {
      const size_t d = am_arch_dim(&arch, l);
      am_array_view v = matrix_view(U.data() + am_theory_u_offset(th, l), d, d);
      if ((st = am_record_append_array(ul, &v))) return st;
    }
    am_record_set_number(run, "U_a", rep.action.U_a);
    am_record_set_number(run, "action", rep.action.S_code);
    am_record_set_number(run, "energy", rep.action.energy);
    am_record_set_number(run, "entropy", rep.action.entropy);
    am_record *sv = am_record_object(run, "solver");
    am_record_set_number(sv, "iterations", rep.iterations);
    am_record_set_number(sv, "grad_max", rep.grad_max);
    am_record_set_number(sv, "grad_vech_norm", rep.grad_vech_norm);
    am_record_set_number(sv, "decrement", rep.decrement);
    am_record_set_number(sv, "hessian_min_eig", rep.hessian_min_eig);
    am_record_set_string(sv, "status", status_name(rep.status));
    if (!solve_msg.empty()) am_record_set_string(sv, "message", solve_msg.c_str());
    if (const am_record *pl = am_record_get(ds, "path_labels")) am_record_set_copy(run, "path_labels", pl);

    // --- predictions (renormalised and GP)
    if (has_test) {
      std::vector<double> mean(Pt), var(Pt);
      if ((st = am_theory_predict(ctx, th, U.data(), Pt, xit.get(), mean.data(), var.data()))) return st;
      if ((st = write_predictions(ctx, am_record_object(run, "test"), mean.data(), var.data(), yt.get(), Pt))) return st;
      if ((st = am_theory_predict(ctx, th, Ugp.data(), Pt, xit.get(), mean.data(), var.data()))) return st;
      am_record *gp = am_record_object(run, "gp");
      if ((st = write_predictions(ctx, am_record_object(gp, "test"), mean.data(), var.data(), yt.get(), Pt))) return st;
      am_action gpa{};
      if (am_theory_action(ctx, th, Ugp.data(), &gpa, nullptr, nullptr) == AM_OK) am_record_set_number(gp, "action", gpa.S_code);
    }

    // --- alignment and kernels
    if (opt.alignment_k > 0 || opt.store_kernels) {
      std::vector<double> Krn(P * P), Kgp(P * P);
      if ((st = am_theory_kernel(ctx, th, U.data(), Krn.data()))) return st;
      if ((st = am_theory_kernel(ctx, th, Ugp.data(), Kgp.data()))) return st;
      if (opt.alignment_k > 0) {
        const size_t k = std::min<size_t>(opt.alignment_k, P);
        std::vector<double> o(k), e(k);
        am_record *al = am_record_object(run, "alignment");
        if ((st = am_kernel_alignment(ctx, Krn.data(), P, P, y.get(), k, o.data(), e.data()))) return st;
        am_record_set_vector(al, "rn", o.data(), k);
        am_record_set_vector(al, "rn_eigenvalues", e.data(), k);
        if ((st = am_kernel_alignment(ctx, Kgp.data(), P, P, y.get(), k, o.data(), e.data()))) return st;
        am_record_set_vector(al, "gp", o.data(), k);
        am_record_set_vector(al, "gp_eigenvalues", e.data(), k);
      }
      if (opt.store_kernels) {
        am_record *kr = am_record_object(run, "kernels");
        am_array_view v = matrix_view(Krn.data(), P, P);
        am_record_set_array(kr, "rn", &v);
        v = matrix_view(Kgp.data(), P, P);
        am_record_set_array(kr, "gp", &v);
        std::vector<double> C(H * P * P);
        for (size_t p = 0; p < H; ++p)
          if ((st = am_prekernel(ctx, N0, H, P, xi.get(), p, p, C.data() + p * P * P, P))) return st;
        am_array_view cv;
        std::memset(&cv, 0, sizeof cv);
        cv.dtype = AM_F64;
        cv.ndim = 3;
        cv.shape[0] = P;
        cv.shape[1] = P;
        cv.shape[2] = H;
        cv.fortran_order = 1;  // element (μ, ν, π) at μ + P·(ν + P·π)
        cv.data = C.data();
        am_record_set_array(kr, "path", &cv);
      }
    }

    // --- head scores
    {
      size_t nh = 0;
      for (uint32_t l = 0; l < arch.layers; ++l) nh += arch.heads[l];
      std::vector<double> sc(nh);
      if ((st = am_head_scores(ctx, &arch, U.data(), sc.data()))) return st;
      am_record_set_vector(run, "head_scores", sc.data(), nh);
      am_record *hl = am_record_list(run, "head_labels");
      for (uint32_t l = 1; l <= arch.layers; ++l)
        for (uint32_t h = 1; h <= arch.heads[l - 1]; ++h) am_record_append_string(hl, ("l" + std::to_string(l) + "_h" + std::to_string(h)).c_str());
    }
    if (solve_st == AM_ERR_NOT_CONVERGED) return am::fail(ctx, AM_ERR_NOT_CONVERGED, "%s", solve_msg.c_str());
    return solve_st == AM_CANCELLED ? AM_CANCELLED : AM_OK;
  });
}

}  // extern "C"
