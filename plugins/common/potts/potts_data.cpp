// potts_core — Potts sequence data: draw (J, U), sample sequences, the equilibration test, the
// "sequence" dataset (see potts_data.h). Shared by the task "potts" and the replica estimator's Potts panel.
#include "potts_data.h"

#include <attnmech/array.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace am::potts {

namespace {

const char kAmino[] = "ACDEFGHIKLMNPQRSTVWY";

// Tokens [M, L] (int32, row-major) as an array view.
am_array_view token_view(const std::vector<int32_t> &t, size_t M, int L) {
  const size_t shape[2] = {M, (size_t)L};
  return am_array_view_make(AM_I32, 2, shape, 0, t.data());
}

am_status set_tokens(am_record *obj, const char *key, const std::vector<int32_t> &t, size_t M, int L) {
  const am_array_view v = token_view(t, M, L);
  return am_record_set_array(obj, key, &v);
}

am_status load_square(am_context *ctx, const std::string &path, const char *what, std::vector<double> &out,
                      int *n) {
  am_array *a = nullptr;
  am_status st = am_npy_read(ctx, path.c_str(), &a);
  if (st != AM_OK) return st;
  const am_array_view v = am_array_get_view(a);
  if (v.ndim != 2 || v.shape[0] != v.shape[1] || v.shape[0] < 2) {
    am_array_destroy(&a);
    return am_context_fail(ctx, AM_ERR_SHAPE, "potts: %s in %s must be a square matrix (n ≥ 2)", what, path.c_str());
  }
  *n = (int)v.shape[0];
  out.resize(v.shape[0] * v.shape[1]);
  st = am_array_to_f64_fortran(ctx, &v, out.data(), out.size());
  am_array_destroy(&a);
  if (st != AM_OK) return st;
  for (double x : out)
    if (!std::isfinite(x)) return am_context_fail(ctx, AM_ERR_NONFINITE, "potts: %s in %s has non-finite entries", what, path.c_str());
  return AM_OK;
}

}  // namespace

am_status draw_model(am_context *ctx, const TaskOptions &o, const am_rng &task_rng, int draw, Model *m) {
  am_rng r;
  am_rng_split(&task_rng, 1000u + (uint64_t)draw, &r);
  m->beta = o.beta;
  m->L = o.L;
  m->C = o.C;
  if (o.couplings == "file") {
    int n = 0;
    am_status st = load_square(ctx, o.J_file, "J", m->J, &n);
    if (st != AM_OK) return st;
    m->L = n;
    symmetrize_zero_diag(m->J, n);
  } else if (o.couplings == "kregular") {
    if (!make_J_kregular(o.L, o.k, &r, m->J))
      return am_context_fail(ctx, AM_ERR_NOT_CONVERGED, "potts: no random %d-regular graph on %d sites found", o.k, o.L);
  } else if (o.couplings == "sinkhorn") {
    make_J_sinkhorn(o.L, &r, m->J, o.sinkhorn_scale);
  } else {
    return am_context_fail(ctx, AM_ERR_USAGE, "potts: unknown couplings '%s' (sinkhorn|kregular|file)", o.couplings.c_str());
  }
  if (!o.U_file.empty()) {
    int n = 0;
    am_status st = load_square(ctx, o.U_file, "U", m->U, &n);
    if (st != AM_OK) return st;
    m->C = n;
  } else {
    make_U_gaussian(m->C, &r, m->U);
  }
  return AM_OK;
}

am_status write_fasta(am_context *ctx, const std::string &path, const int32_t *tokens, size_t M, int L, int C) {
  if (C > 20) return am_context_fail(ctx, AM_ERR_DOMAIN, "potts: FASTA needs C ≤ 20 (C=%d)", C);
  FILE *f = std::fopen(path.c_str(), "w");
  if (!f) return am_context_fail(ctx, AM_ERR_IO, "potts: cannot write %s", path.c_str());
  std::vector<char> line((size_t)L + 2);
  for (size_t mu = 0; mu < M; ++mu) {
    for (int i = 0; i < L; ++i) line[i] = kAmino[tokens[mu * L + i]];
    line[L] = '\n';
    line[L + 1] = 0;
    std::fprintf(f, ">seq%zu\n%s", mu + 1, line.data());
  }
  const bool ok = std::fclose(f) == 0;
  return ok ? AM_OK : am_context_fail(ctx, AM_ERR_IO, "potts: error writing %s", path.c_str());
}

namespace {

// The (J, U) draw the data come from: draw o.draw, or with redraw the first of the next max_redraws draws that
// passes the equilibration test. *rep is the test's report of the chosen draw; `tried` lists every draw tested.
struct Drawn {
  Model m;
  EquilibrationReport rep;
  int draw = 0;
  bool equilibrated = false;
};

am_status draw_equilibrated(am_context *ctx, const TaskOptions &o, const am_rng &task_rng, am_record *tried,
                            Drawn *out) {
  am_status st;
  int draw = o.draw;
  const int last = o.redraw ? o.draw + std::max(0, o.max_redraws) : o.draw;
  out->equilibrated = !o.equilibration_test;
  for (; draw <= last; ++draw) {
    if ((st = draw_model(ctx, o, task_rng, draw, &out->m)) != AM_OK) return st;
    if (!o.equilibration_test) break;
    EquilibrationOptions eo;
    eo.burnin = o.burnin;
    eo.chains = o.equil_chains;
    eo.entropy_tol = o.entropy_tol;
    eo.max_freq_limit = o.max_freq_limit;
    eo.parallel = o.parallel;
    am_rng er;
    am_rng_split(&task_rng, 5000u + (uint64_t)draw, &er);
    EquilibrationReport &rep = out->rep;
    if ((st = equilibration_report(ctx, out->m, eo, er, rep)) != AM_OK) return st;
    am_record *t = am_record_append_object(tried);
    if (t) {
      am_record_set_number(t, "draw", draw);
      am_record_set_number(t, "entropy_B", rep.entropy_B);
      am_record_set_number(t, "entropy_2B", rep.entropy_2B);
      am_record_set_number(t, "max_site_freq", rep.max_site_freq);
      am_record_set_bool(t, "equilibrated", rep.equilibrated);
    }
    am_context_log(ctx, AM_LOG_INFO,
                   "potts: draw %d: conditional entropy %.4f after %d sweeps, %.4f after %d (diff %.4f ± %.4f), "
                   "tau_int(E) = %.2f sweeps, top site-colour frequency %.3f -> %s",
                   draw, rep.entropy_B, o.burnin, rep.entropy_2B, 2 * o.burnin, rep.entropy_diff, rep.entropy_diff_se,
                   rep.tau_int_energy, rep.max_site_freq, rep.equilibrated ? "equilibrated" : "NOT equilibrated");
    out->equilibrated = rep.equilibrated;
    if (out->equilibrated || !o.redraw) break;
  }
  out->draw = draw > last ? last : draw;
  return AM_OK;
}

// The warning of a draw that did not pass the equilibration test (logged, and kept for the extras).
std::string equilibration_warning(am_context *ctx, const TaskOptions &o, const Drawn &dr) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "draw %d of J,U at beta=%g did not pass the equilibration test (conditional entropy after %d vs %d "
                "sweeps: %.4f vs %.4f, tolerance %.3f; top single-site colour frequency %.3f, limit %.2f)%s",
                dr.draw, o.beta, o.burnin, 2 * o.burnin, dr.rep.entropy_B, dr.rep.entropy_2B, o.entropy_tol,
                dr.rep.max_site_freq, o.max_freq_limit,
                o.redraw ? "; no equilibrating draw within max_redraws" : "; use --set redraw=1 to move on to the next draw");
  am_context_log(ctx, AM_LOG_WARN, "potts: %s", buf);
  return buf;
}

// extras.equilibration: the test's curve and verdict.
void write_equilibration(am_record *extras, const TaskOptions &o, const EquilibrationReport &rep) {
  am_record *e = am_record_object(extras, "equilibration");
  if (!e) return;
  am_record_set_vector(e, "sweeps", rep.sweeps.data(), rep.sweeps.size());
  am_record_set_vector(e, "cond_entropy", rep.cond_entropy.data(), rep.cond_entropy.size());
  am_record_set_vector(e, "cond_entropy_se", rep.cond_entropy_se.data(), rep.cond_entropy_se.size());
  am_record_set_number(e, "burnin", o.burnin);
  am_record_set_number(e, "chains", o.equil_chains);
  am_record_set_number(e, "entropy_B", rep.entropy_B);
  am_record_set_number(e, "entropy_2B", rep.entropy_2B);
  am_record_set_number(e, "entropy_diff", rep.entropy_diff);
  am_record_set_number(e, "entropy_diff_se", rep.entropy_diff_se);
  am_record_set_number(e, "entropy_tol", o.entropy_tol);
  am_record_set_number(e, "tau_int_energy", rep.tau_int_energy);
  am_record_set_number(e, "max_site_freq", rep.max_site_freq);
  am_record_set_number(e, "max_freq_limit", o.max_freq_limit);
  am_record_set_bool(e, "entropy_ok", rep.entropy_ok);
  am_record_set_bool(e, "freq_ok", rep.freq_ok);
  am_record_set_bool(e, "equilibrated", rep.equilibrated);
}

// out_sequences: PREFIX_train/_test as .npy (and .fasta when C <= 20), listed in extras.sequence_files.
am_status write_sequences(am_context *ctx, const TaskOptions &o, const std::vector<int32_t> &train,
                          const std::vector<int32_t> &test, int L, int C, am_record *extras) {
  am_record *files = am_record_list(extras, "sequence_files");
  for (int part = 0; part < 2; ++part) {
    const std::vector<int32_t> &t = part ? test : train;
    const size_t n = part ? o.M_test : o.M;
    if (n == 0) continue;
    const std::string base = o.out_sequences + (part ? "_test" : "_train");
    const am_array_view v = token_view(t, n, L);
    am_status st;
    if ((st = am_npy_write(ctx, (base + ".npy").c_str(), &v)) != AM_OK) return st;
    if (files) am_record_append_string(files, (base + ".npy").c_str());
    if (C <= 20) {
      if ((st = write_fasta(ctx, base + ".fasta", t.data(), n, L, C)) != AM_OK) return st;
      if (files) am_record_append_string(files, (base + ".fasta").c_str());
    }
  }
  return AM_OK;
}

// The task's extras: sizes, the truth, ε*, and the equilibration test.
void write_extras(am_record *extras, const TaskOptions &o, const Drawn &dr, double r, double eps_test,
                  double eps_train, const std::vector<int32_t> &train, const std::string &warning) {
  const Model &m = dr.m;
  const int L = m.L, C = m.C;
  am_record_set_number(extras, "L", L);
  am_record_set_number(extras, "C", C);
  am_record_set_number(extras, "beta", m.beta);
  am_record_set_number(extras, "M", (double)o.M);
  am_record_set_number(extras, "M_test", (double)o.M_test);
  am_record_set_number(extras, "draw", dr.draw);
  am_record_set_string(extras, "couplings", o.couplings.c_str());
  am_record_set_number(extras, "r", r);
  am_record_set_number(extras, "epsilon_star", eps_test);
  am_record_set_number(extras, "epsilon_star_train", eps_train);
  am_record_set_number(extras, "log_C", std::log((double)C));
  double jj = 0.0;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      if (i != j) jj += m.J[i + (size_t)L * j] * m.J[i + (size_t)L * j];
  am_record_set_number(extras, "mean_J2", jj / ((double)L * (L - 1)));
  am_record_set_matrix(extras, "J", m.J.data(), L, L, L);
  am_record_set_matrix(extras, "U", m.U.data(), C, C, C);
  am_record_set_number(extras, "max_site_freq_train", max_site_frequency(train.data(), o.M, L, C));
  am_record_set_bool(extras, "equilibrated", dr.equilibrated);
  if (!warning.empty()) am_record_set_string(extras, "warning", warning.c_str());
  if (o.equilibration_test) write_equilibration(extras, o, dr.rep);
}

}  // namespace

am_status make_dataset(am_context *ctx, const TaskOptions &o, const am_rng &task_rng, am_record *dataset,
                       am_record *extras) {
  Drawn dr;
  am_status st = draw_equilibrated(ctx, o, task_rng, am_record_list(extras, "draws_tried"), &dr);
  if (st != AM_OK) return st;
  const std::string warning = dr.equilibrated ? std::string() : equilibration_warning(ctx, o, dr);
  // data: training and test sets from independent streams of the task rng (nested in M: the first M'
  // chains of a run with M > M' are the chains of the run with M')
  const Model &m = dr.m;
  const int L = m.L, C = m.C;
  SampleOptions so;
  so.burnin = o.burnin;
  so.thin = o.thin;
  so.parallel = o.parallel;
  am_rng rtrain, rtest;
  am_rng_split(&task_rng, 2, &rtrain);
  am_rng_split(&task_rng, 3, &rtest);
  std::vector<int32_t> train, test;
  size_t done = 0;
  st = sample(ctx, m, o.M, so, rtrain, train, &done);
  if (st == AM_CANCELLED) return st;
  if (st == AM_OK && o.M_test > 0) st = sample(ctx, m, o.M_test, so, rtest, test, &done);
  if (st != AM_OK) return st;
  const double r = row_sum_mean(m.J, L);
  const double eps_test = o.M_test ? epsilon_star(m, test.data(), o.M_test) : NAN;
  const double eps_train = epsilon_star(m, train.data(), o.M);
  // dataset
  am_record_set_string(dataset, "kind", "sequence");
  if ((st = set_tokens(dataset, "tokens", train, o.M, L)) != AM_OK) return st;
  if (o.M_test && (st = set_tokens(dataset, "tokens_test", test, o.M_test, L)) != AM_OK) return st;
  am_record_set_number(dataset, "C", C);
  am_record_set_number(dataset, "L", L);
  am_record *truth = am_record_object(dataset, "truth");
  if (!truth) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "potts: cannot build the dataset record");
  am_record_set_matrix(truth, "J", m.J.data(), L, L, L);
  am_record_set_matrix(truth, "U", m.U.data(), C, C, C);
  am_record_set_number(truth, "beta", m.beta);
  am_record_set_number(truth, "r", r);
  am_record_set_number(truth, "epsilon_star", eps_test);
  am_record_set_number(truth, "epsilon_star_train", eps_train);
  am_record_set_number(truth, "draw", dr.draw);
  write_extras(extras, o, dr, r, eps_test, eps_train, train, warning);
  return o.out_sequences.empty() ? AM_OK : write_sequences(ctx, o, train, test, L, C, extras);
}

}  // namespace am::potts
