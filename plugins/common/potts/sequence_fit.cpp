// potts_core — what both sequence estimators share (potts_estimators.h): reading a "sequence" dataset, the
// training curves and the run keys every fit writes (data sizes, losses, ε*, the reconstruction of J and U).
#include "potts_estimators.h"

#include <attnmech/array.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace am::potts {

namespace {

// The tokens of an integer [M, L] array (C or Fortran order) into `out` in C order, each checked against the colours
// 0..C−1 in C order (the first one outside is named): integers all the way, no float copy.
template <class T, class Outside>
am_status copy_tokens(const am_array_view &v, size_t M, int L, int C, std::vector<int32_t> &out, const Outside &outside) {
  const T *p = static_cast<const T *>(v.data);
  out.resize(M * (size_t)L);
  for (size_t mu = 0; mu < M; ++mu)
    for (int i = 0; i < L; ++i) {
      const T x = v.fortran_order ? p[mu + M * (size_t)i] : p[mu * (size_t)L + i];
      if (x < 0 || x >= C) return outside((double)x);
      out[mu * (size_t)L + i] = (int32_t)x;
    }
  return AM_OK;
}

// The tokens the tasks write are int32 (potts_data.cpp, plugins/common/msa/dataset.cpp) and are read as integers;
// a float array (a user's dataset) is converted once, each value checked to be a whole colour.
am_status read_tokens(am_context *ctx, const am_record *ds, const char *key, int L_expect, int C, int *L,
                      size_t *M, std::vector<int32_t> &out) {
  am_array_view v{};
  am_status st = am_record_get_array(ds, key, &v);
  if (st != AM_OK) return st;
  if (v.ndim != 2) return am_context_fail(ctx, AM_ERR_SHAPE, "sequence dataset: '%s' must be a [M, L] array", key);
  if (v.dtype != AM_I32 && v.dtype != AM_I64 && v.dtype != AM_F64 && v.dtype != AM_F32)
    return am_context_fail(ctx, AM_ERR_FORMAT, "sequence dataset: '%s' has an unsupported dtype", key);
  *M = v.shape[0];
  *L = (int)v.shape[1];
  if (L_expect > 0 && *L != L_expect)
    return am_context_fail(ctx, AM_ERR_SHAPE, "sequence dataset: '%s' has L=%d, expected %d", key, *L, L_expect);
  const auto outside = [&](double x) {
    return am_context_fail(ctx, AM_ERR_DOMAIN, "sequence dataset: '%s' holds %g, outside the colours 0..%d", key, x,
                           C - 1);
  };
  if (v.dtype == AM_I32) return copy_tokens<int32_t>(v, *M, *L, C, out, outside);
  if (v.dtype == AM_I64) return copy_tokens<int64_t>(v, *M, *L, C, out, outside);
  std::vector<double> tmp(*M * (size_t)*L);
  if ((st = am_array_to_f64_c(ctx, &v, tmp.data(), tmp.size())) != AM_OK) return st;
  out.resize(tmp.size());
  for (size_t k = 0; k < tmp.size(); ++k) {
    const double x = tmp[k];
    if (!(x >= 0 && x < C) || x != std::floor(x)) return outside(x);
    out[k] = (int32_t)x;
  }
  return AM_OK;
}

am_status read_matrix(am_context *ctx, const am_record *obj, const char *key, int n, std::vector<double> &out) {
  am_array_view v{};
  am_status st = am_record_get_array(obj, key, &v);
  if (st != AM_OK) return st;
  if (v.ndim != 2 || (int)v.shape[0] != n || (int)v.shape[1] != n)
    return am_context_fail(ctx, AM_ERR_SHAPE, "sequence dataset: truth.%s must be %d×%d", key, n, n);
  out.resize((size_t)n * n);
  return am_array_to_f64_fortran(ctx, &v, out.data(), out.size());
}

double number_or(const am_record *p, const char *key, double def) {
  double v;
  return am_record_get_number(p, key, &v) == AM_OK ? v : def;
}

void centre_columns(const double *V, int C, std::vector<double> &out) {
  out.assign(V, V + (size_t)C * C);
  for (int b = 0; b < C; ++b) {
    double m = 0.0;
    for (int a = 0; a < C; ++a) m += out[a + (size_t)C * b];
    m /= C;
    for (int a = 0; a < C; ++a) out[a + (size_t)C * b] -= m;
  }
}

}  // namespace

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void Curves::write(am_record *run) const {
  am_record *c = am_record_object(run, "curves");
  if (!c) return;
  if (std::isfinite(eps_star)) am_record_set_number(c, "epsilon_star", eps_star);
  am_record_set_vector(c, "epoch", epoch.data(), epoch.size());
  am_record_set_vector(c, "train_loss", train.data(), train.size());
  am_record_set_vector(c, "test_loss", test.data(), test.size());
  am_record_set_vector(c, "recon_error", recon.data(), recon.size());
}

void write_common(am_record *run, const SeqData &d, double train_loss, double test_loss, const double *A,
                  const double *V) {
  am_record_set_number(run, "M", (double)d.M);
  am_record_set_number(run, "M_test", (double)d.M_test);
  am_record_set_number(run, "L", d.L);
  am_record_set_number(run, "C", d.C);
  am_record_set_number(run, "train_loss", train_loss);
  am_record_set_number(run, "test_loss", test_loss);
  am_record_set_number(run, "log_C", std::log((double)d.C));
  am_record_set_number(run, "excess_rule", ((double)d.L * d.L + (double)d.C * d.C) / (2.0 * d.M * d.L));
  if (A) am_record_set_matrix(run, "A", A, d.L, d.L, d.L);
  if (V) {
    am_record_set_matrix(run, "V", V, d.C, d.C, d.C);
    std::vector<double> vc;
    centre_columns(V, d.C, vc);
    am_record_set_matrix(run, "V_centred", vc.data(), d.C, d.C, d.C);
  }
  if (!d.has_truth) {
    am_record_set_null(run, "epsilon_star");
    am_record_set_null(run, "excess");
    am_record_set_null(run, "recon_error");
    am_record_set_null(run, "v_corr");
    return;
  }
  am_record_set_number(run, "beta", d.truth.beta);
  am_record_set_number(run, "r", d.r);
  am_record_set_number(run, "epsilon_star", d.eps_star);
  am_record_set_number(run, "epsilon_star_train", d.eps_star_train);
  am_record_set_number(run, "excess", test_loss - d.eps_star);
  am_record_set_number(run, "train_excess", train_loss - d.eps_star_train);
  am_record_set_matrix(run, "J", d.truth.J.data(), d.L, d.L, d.L);
  std::vector<double> Jr(d.truth.J);
  for (auto &x : Jr) x /= d.r;
  double jj = 0.0;
  for (int i = 0; i < d.L; ++i)
    for (int j = 0; j < d.L; ++j)
      if (i != j) jj += Jr[i + (size_t)d.L * j] * Jr[i + (size_t)d.L * j];
  jj /= (double)d.L * (d.L - 1);
  am_record_set_number(run, "mean_J2", jj);
  if (A) {
    const double e = recon_error(A, d.truth.J, d.L, d.r);
    am_record_set_number(run, "recon_error", e);
    am_record_set_number(run, "recon_error_rel", e / jj);
  } else {
    am_record_set_null(run, "recon_error");
  }
  std::vector<double> target(d.truth.U);
  for (auto &x : target) x *= d.truth.beta * d.r;
  std::vector<double> tc;
  centre_columns(target.data(), d.C, tc);
  am_record_set_matrix(run, "V_target_centred", tc.data(), d.C, d.C, d.C);
  if (V)
    am_record_set_number(run, "v_corr", v_corr(V, d.truth.U, d.C, d.truth.beta * d.r));
  else
    am_record_set_null(run, "v_corr");
}

double recon_error(const double *A, const std::vector<double> &J, int L, double r) {
  double e = 0.0;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      if (i != j) {
        const double t = A[i + (size_t)L * j] - J[i + (size_t)L * j] / r;
        e += t * t;
      }
  return e / ((double)L * (L - 1));
}

double v_corr(const double *V, const std::vector<double> &U, int C, double beta_r) {
  std::vector<double> a, b, t(U);
  for (auto &x : t) x *= beta_r;
  centre_columns(V, C, a);
  centre_columns(t.data(), C, b);
  double ma = 0, mb = 0;
  const size_t n = a.size();
  for (size_t k = 0; k < n; ++k) {
    ma += a[k];
    mb += b[k];
  }
  ma /= n;
  mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t k = 0; k < n; ++k) {
    sab += (a[k] - ma) * (b[k] - mb);
    saa += (a[k] - ma) * (a[k] - ma);
    sbb += (b[k] - mb) * (b[k] - mb);
  }
  return (saa > 0 && sbb > 0) ? sab / std::sqrt(saa * sbb) : 0.0;
}

bool sequence_dataset_shape(const am_record *ds, size_t M_use, size_t *M, size_t *M_test, int *L, int *C) {
  am_array_view v{}, t{};
  double c = 0;
  if (!ds || am_record_get_array(ds, "tokens", &v) != AM_OK || v.ndim != 2 ||
      am_record_get_number(ds, "C", &c) != AM_OK || !(c >= 2 && c < 1e9))
    return false;
  *M = M_use > 0 ? std::min<size_t>(M_use, v.shape[0]) : v.shape[0];
  *L = (int)std::min<size_t>(v.shape[1], (size_t)1 << 30);
  *C = (int)c;
  *M_test = am_record_get_array(ds, "tokens_test", &t) == AM_OK && t.ndim == 2 ? t.shape[0] : 0;
  return true;
}

am_status read_sequence_dataset(am_context *ctx, const am_record *ds, size_t M_use, SeqData *out) {
  if (!ds) return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "this estimator needs a sequence dataset");
  const char *kind = nullptr;
  if (am_record_get_string(ds, "kind", &kind) != AM_OK || !kind || std::string(kind) != "sequence")
    return am_context_fail(ctx, AM_ERR_FORMAT, "dataset kind must be \"sequence\"");
  double C = 0;
  if (am_record_get_number(ds, "C", &C) != AM_OK || !(C >= 2) || C != std::floor(C))
    return am_context_fail(ctx, AM_ERR_FORMAT, "sequence dataset: 'C' (number of colours ≥ 2) missing");
  out->C = (int)C;
  am_status st = read_tokens(ctx, ds, "tokens", 0, out->C, &out->L, &out->M, out->train);
  if (st == AM_ERR_NOT_FOUND) return am_context_fail(ctx, st, "sequence dataset: 'tokens' missing");
  if (st != AM_OK) return st;
  if (out->L < 2) return am_context_fail(ctx, AM_ERR_SHAPE, "sequence dataset: L must be ≥ 2");
  if (M_use > 0 && M_use < out->M) {
    out->M = M_use;
    out->train.resize(M_use * (size_t)out->L);
  }
  if (out->M == 0) return am_context_fail(ctx, AM_ERR_SHAPE, "sequence dataset: no training sequences");
  int Lt = 0;
  st = read_tokens(ctx, ds, "tokens_test", out->L, out->C, &Lt, &out->M_test, out->test);
  if (st == AM_ERR_NOT_FOUND) {
    out->M_test = 0;
    out->test.clear();
  } else if (st != AM_OK) {
    return st;
  }
  const am_record *truth = am_record_get(ds, "truth");
  out->has_truth = false;
  if (truth && am_record_type_of(truth) == AM_REC_OBJECT && am_record_get(truth, "J") && am_record_get(truth, "U")) {
    Model &m = out->truth;
    m.L = out->L;
    m.C = out->C;
    m.beta = number_or(truth, "beta", 1.0);
    if ((st = read_matrix(ctx, truth, "J", out->L, m.J)) != AM_OK) return st;
    if ((st = read_matrix(ctx, truth, "U", out->C, m.U)) != AM_OK) return st;
    symmetrize_zero_diag(m.J, m.L);
    out->r = row_sum_mean(m.J, m.L);
    out->has_truth = true;
    // ε* with the true conditionals on exactly the sequences this run uses
    out->eps_star = out->M_test ? epsilon_star(m, out->test.data(), out->M_test) : NAN;
    out->eps_star_train = epsilon_star(m, out->train.data(), out->M);
  }
  return AM_OK;
}

}  // namespace am::potts
