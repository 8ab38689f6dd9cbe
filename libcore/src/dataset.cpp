// attnmech — helpers for "attention" datasets (conventions in dataset.h).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attnmech/dataset.h"
#include "abi.hpp"
#include "internal.hpp"
#include "theory.hpp"

namespace {

am_status read_list(am_context *ctx, const am_record *ds, const char *key, std::vector<double> &out) {
  size_t n = 0;
  am_status st = am_record_get_vector(ds, key, nullptr, 0, &n);
  if (st == AM_ERR_NOT_FOUND) return am::fail(ctx, AM_ERR_NOT_FOUND, "dataset has no '%s'", key);
  if (st && st != AM_ERR_BUFFER_TOO_SMALL) return am::fail(ctx, st, "dataset key '%s' is not a list of numbers", key);
  out.resize(n);
  if (n && (st = am_record_get_vector(ds, key, out.data(), n, &n)))
    return am::fail(ctx, st, "dataset key '%s' is not a list of numbers", key);
  return AM_OK;
}

// A dataset's heads in layer order, with the storage their column-major matrices live in.
struct head_set {
  std::vector<am_head> heads;
  std::vector<std::vector<double>> store;
};

am_status f64_fortran(am_context *ctx, const am_array_view &v, std::vector<double> &out, const std::string &what) {
  out.resize(am_array_view_count(&v));
  am_status st = am_array_to_f64_fortran(ctx, &v, out.data(), out.size());
  if (st) return am::fail(ctx, st, "%s: cannot convert to double", what.c_str());
  if (!am::all_finite(out.data(), out.size())) return am::fail(ctx, AM_ERR_NONFINITE, "%s has non-finite entries", what.c_str());
  return AM_OK;
}

am_status load_heads(am_context *ctx, const am_record *ds, const am_arch &arch, size_t N0, head_set &hs) {
  const am_record *att = am_record_get(ds, "attention");
  if (!att || am_record_type_of(att) != AM_REC_OBJECT)
    return am::fail(ctx, AM_ERR_NOT_FOUND, "dataset has no 'attention' object with the heads");
  size_t total = 0;
  for (uint32_t l = 0; l < arch.layers; ++l) total += arch.heads[l];
  hs.heads.resize(total);
  hs.store.reserve(2 * total);
  size_t k = 0;
  for (uint32_t l = 1; l <= arch.layers; ++l)
    for (uint32_t h = 1; h <= arch.heads[l - 1]; ++h, ++k) {
      const std::string key = "l" + std::to_string(l) + "_h" + std::to_string(h);
      const am_record *node = am_record_get(att, key.c_str());
      if (!node) return am::fail(ctx, AM_ERR_NOT_FOUND, "dataset has no attention head '%s'", key.c_str());
      am_head &hd = hs.heads[k];
      std::memset(&hd, 0, sizeof hd);
      hd.struct_size = sizeof hd;
      am_array_view v;
      if (am_record_type_of(node) == AM_REC_ARRAY) {
        am_record_array(node, &v);
        if (v.ndim != 2 || v.shape[0] != N0 || v.shape[1] != N0)
          return am::fail(ctx, AM_ERR_SHAPE, "head %s: W must be [%zu, %zu]", key.c_str(), N0, N0);
        hs.store.emplace_back();
        if (am_status st = f64_fortran(ctx, v, hs.store.back(), "head " + key + " W")) return st;
        hd.form = AM_HEAD_BILINEAR;
        hd.W = hs.store.back().data();
      } else if (am_record_type_of(node) == AM_REC_OBJECT) {
        am_array_view q, kk;
        if (am_record_get_array(node, "Q", &q) || am_record_get_array(node, "K", &kk))
          return am::fail(ctx, AM_ERR_NOT_FOUND, "head %s: a query/key head needs arrays Q and K", key.c_str());
        if (q.ndim != 2 || kk.ndim != 2 || q.shape[1] != N0 || kk.shape[1] != N0 || q.shape[0] != kk.shape[0] ||
            q.shape[0] == 0)
          return am::fail(ctx, AM_ERR_SHAPE, "head %s: Q and K must both be [G, %zu]", key.c_str(), N0);
        hs.store.emplace_back();
        if (am_status st = f64_fortran(ctx, q, hs.store.back(), "head " + key + " Q")) return st;
        const double *Q = hs.store.back().data();
        hs.store.emplace_back();
        if (am_status st = f64_fortran(ctx, kk, hs.store.back(), "head " + key + " K")) return st;
        hd.form = AM_HEAD_QK;
        hd.G = q.shape[0];
        hd.Q = Q;
        hd.K = hs.store.back().data();
      } else {
        return am::fail(ctx, AM_ERR_FORMAT, "head %s must be an array W or an object {Q, K}", key.c_str());
      }
    }
  return AM_OK;
}

// " (from '<file>')" when the task recorded where the dataset key came from (dataset.h `sources`), else "".
std::string source_of(const am_record *ds, const std::string &key) {
  const char *f = nullptr;
  if (am_record_get_string(am_record_get(ds, "sources"), key.c_str(), &f) != AM_OK || !f || !*f) return std::string();
  return std::string(" (from '") + f + "')";
}

double sum_squares(const double *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += x[i] * x[i];
  return s;
}

double max_abs(const double *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

// The labels y_<split> (P of them), checked finite and with a finite sum of squares.
am_status read_labels(am_context *ctx, const am_record *ds, const std::string &yk, size_t P, std::vector<double> &y) {
  am_array_view yv;
  if (am_record_get_array(ds, yk.c_str(), &yv)) return am::fail(ctx, AM_ERR_NOT_FOUND, "dataset has no array '%s'", yk.c_str());
  if (am_array_view_count(&yv) != P)
    return am::fail(ctx, AM_ERR_SHAPE, "'%s' has %zu labels for %zu examples", yk.c_str(), am_array_view_count(&yv), P);
  y.resize(P);
  if (am_status st = am_array_to_f64_c(ctx, &yv, y.data(), P)) return st;
  if (!am::all_finite(y.data(), P))
    return am::fail(ctx, AM_ERR_NONFINITE, "'%s'%s has non-finite entries", yk.c_str(), source_of(ds, yk).c_str());
  // The action holds yᵀ(K + T)⁻¹y: labels whose squares overflow cannot give a finite result.
  if (!std::isfinite(sum_squares(y.data(), P)))
    return am::fail(ctx, AM_ERR_NONFINITE, "'%s'%s is too large for float64: the sum of squared labels overflows "
                    "(largest |y| = %g); rescale the labels", yk.c_str(), source_of(ds, yk).c_str(), max_abs(y.data(), P));
  return AM_OK;
}

// The dataset's readout (last when it names none).
am_status read_readout(am_context *ctx, const am_record *ds, am_readout &readout) {
  const char *ro = "last";
  am_record_get_string(ds, "readout", &ro);
  if (!std::strcmp(ro, "last")) readout = AM_READOUT_LAST;
  else if (!std::strcmp(ro, "first")) readout = AM_READOUT_FIRST;
  else if (!std::strcmp(ro, "mean")) readout = AM_READOUT_MEAN;
  else return am::fail(ctx, AM_ERR_FORMAT, "readout '%s' is not one of last|first|mean", ro);
  return AM_OK;
}

// ξ computed from X_<split> [P, S, N0] and the dataset's heads and readout, into a malloc'd buffer.
am_status compute_xi(am_context *ctx, const am_record *ds, const char *split, const std::string &xk,
                     const am_array_view &xv, const am_arch &arch, size_t H, double **xi_out) {
  const size_t P = xv.shape[0], S = xv.shape[1], N0 = xv.shape[2];
  // X as float64 in C order: the dataset's own array when it is one (the tasks' usual), else a converted copy.
  std::vector<double> copy;
  const double *X = static_cast<const double *>(xv.data);
  if (xv.dtype != AM_F64 || xv.fortran_order) {
    copy.resize(P * S * N0);
    if (am_status st = am_array_to_f64_c(ctx, &xv, copy.data(), copy.size())) return st;
    X = copy.data();
  }
  const size_t nx = P * S * N0;
  if (!am::all_finite(X, nx))
    return am::fail(ctx, AM_ERR_NONFINITE, "'%s'%s has non-finite entries", xk.c_str(), source_of(ds, xk).c_str());
  am_readout readout = AM_READOUT_LAST;
  if (am_status st = read_readout(ctx, ds, readout)) return st;
  head_set hs;
  if (am_status st = load_heads(ctx, ds, arch, N0, hs)) return st;
  double *xi = static_cast<double *>(std::malloc(P * N0 * H * sizeof(double)));
  if (!xi) return am::fail(ctx, AM_ERR_NO_MEMORY, "out of memory for ξ (%zu doubles)", P * N0 * H);
  const am_status xst = am_xi(ctx, &arch, hs.heads.data(), readout, P, N0, S, X, xi);
  if (xst && xst != AM_ERR_NONFINITE) {  // non-finite ξ from finite X: named below, with its input file
    std::free(xi);
    return xst;
  }
  // Kernels are sums of products of ξ entries: ξ whose squares overflow names its input, not a solver symptom.
  if (xst || !std::isfinite(sum_squares(xi, P * N0 * H))) {
    std::free(xi);
    return am::fail(ctx, AM_ERR_NONFINITE, "the path inputs ξ of split '%s' overflow float64: '%s'%s holds entries "
                    "up to |x| = %g (attention and path products multiply them); rescale the inputs", split,
                    xk.c_str(), source_of(ds, xk).c_str(), max_abs(X, nx));
  }
  *xi_out = xi;
  return AM_OK;
}

// The architecture of ds with the widths of `wsrc` (ds itself, or a run's inputs), validated.
am_status read_arch(am_context *ctx, const am_record *ds, const am_record *wsrc, am_arch *arch_out, double *temperature) {
  return am::guarded(ctx, [&]() -> am_status {
    if (!ds || !arch_out) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "dataset or arch is NULL");
    if (arch_out->struct_size < am::kMinArch)
      return am::fail(ctx, AM_ERR_INVALID_ARGUMENT,
                      "am_arch.struct_size is %u: set it first (am_arch_default), at least %zu bytes",
                      arch_out->struct_size, am::kMinArch);
    am_arch full;
    am_arch *arch = &full;
    const char *kind = nullptr;
    if (am_record_get_string(ds, "kind", &kind) || std::strcmp(kind, AM_DATASET_ATTENTION) != 0)
      return am::fail(ctx, AM_ERR_FORMAT, "dataset is not of kind \"attention\"");
    std::vector<double> heads, widths, vars;
    if (am_status st = read_list(ctx, ds, "heads", heads)) return st;
    if (am_status st = read_list(ctx, wsrc, "widths", widths)) return st;
    if (am_status st = read_list(ctx, ds, "variances", vars)) return st;
    const size_t L = heads.size();
    if (L < 1 || L > AM_MAX_LAYERS) return am::fail(ctx, AM_ERR_SHAPE, "dataset has %zu layers (1..%d supported)", L, AM_MAX_LAYERS);
    if (widths.size() != L + 1)
      return am::fail(ctx, AM_ERR_SHAPE, "'widths' has %zu entries; %zu layers need %zu (W_0..W_L)", widths.size(), L, L + 1);
    if (vars.size() != L + 2)
      return am::fail(ctx, AM_ERR_SHAPE, "'variances' has %zu entries; %zu layers need %zu (s_0..s_L, s_a)", vars.size(), L, L + 2);
    am_arch_default(arch);
    arch->layers = (uint32_t)L;
    for (size_t l = 0; l < L; ++l) {
      if (!(heads[l] >= 1) || heads[l] != std::floor(heads[l]))
        return am::fail(ctx, AM_ERR_DOMAIN, "layer %zu has %g heads; need a whole number >= 1", l + 1, heads[l]);
      arch->heads[l] = (uint32_t)heads[l];
    }
    for (size_t l = 0; l <= L; ++l) {
      if (!(widths[l] >= 1 && widths[l] <= AM_WIDTH_MAX) || widths[l] != std::floor(widths[l]))
        return am::fail(ctx, AM_ERR_USAGE, "width W_%zu = %g; widths are whole numbers in [1, %g]", l, widths[l],
                        AM_WIDTH_MAX);
      arch->widths[l] = widths[l];
    }
    for (size_t l = 0; l < L + 2; ++l) arch->variances[l] = vars[l];
    if (am_status st = am_arch_validate(ctx, arch)) return st;
    if (am_status st = am::emit_struct(ctx, arch_out, full, "am_arch")) return st;
    if (temperature) {
      if (am_record_get_number(ds, "temperature", temperature))
        return am::fail(ctx, AM_ERR_NOT_FOUND, "dataset has no number 'temperature'");
      if (!(*temperature >= AM_TEMPERATURE_MIN && *temperature <= AM_TEMPERATURE_MAX))
        return am::fail(ctx, AM_ERR_DOMAIN, "temperature T = %g is outside [%g, %g]", *temperature, AM_TEMPERATURE_MIN,
                        AM_TEMPERATURE_MAX);
    }
    return AM_OK;
  });
}

}  // namespace

extern "C" {

AM_API am_status am_dataset_arch(am_context *ctx, const am_record *ds, am_arch *arch, double *temperature) {
  return read_arch(ctx, ds, ds, arch, temperature);
}

AM_API am_status am_dataset_arch_for(am_context *ctx, const am_record *ds, const am_record *inputs, am_arch *arch,
                                     double *temperature) {
  return read_arch(ctx, ds, inputs && am_record_get(inputs, "widths") ? inputs : ds, arch, temperature);
}

AM_API am_status am_dataset_xi(am_context *ctx, const am_record *ds, const char *split, double **xi_out, size_t *P_out,
                               size_t *N0_out, double **y_out) {
  return am::guarded(ctx, [&]() -> am_status {
    if (!ds || !split || !xi_out || !P_out || !N0_out) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "NULL argument to am_dataset_xi");
    *xi_out = nullptr;
    if (y_out) *y_out = nullptr;
    am_arch arch;
    am_arch_default(&arch);
    if (am_status st = am_dataset_arch(ctx, ds, &arch, nullptr)) return st;
    const std::string xk = std::string("X_") + split, yk = std::string("y_") + split;
    am_array_view xv;
    if (am_record_get_array(ds, xk.c_str(), &xv)) return am::fail(ctx, AM_ERR_NOT_FOUND, "dataset has no array '%s'", xk.c_str());
    if (xv.ndim != 3) return am::fail(ctx, AM_ERR_SHAPE, "'%s' must be [P, S, N0]; it has %u dimensions", xk.c_str(), xv.ndim);
    const size_t P = xv.shape[0], S = xv.shape[1], N0 = xv.shape[2];
    if (P == 0 || S == 0 || N0 == 0) return am::fail(ctx, AM_ERR_SHAPE, "'%s' is empty", xk.c_str());
    std::vector<double> y;
    if (y_out)
      if (am_status st = read_labels(ctx, ds, yk, P, y)) return st;
    const size_t H = am_arch_paths(&arch);
    am::theory_sizes sz = am::theory_sizes_of(arch, double(P), double(N0));
    sz.S = double(S);
    if (am_status st = am::theory_memory_check(ctx, sz, am::kMemXi,
                                               am::format("ξ of '%s' (P = %zu, S = %zu, N0 = %zu, %zu path%s)",
                                                          xk.c_str(), P, S, N0, H, H == 1 ? "" : "s").c_str()))
      return st;
    double *xi = nullptr;
    if (am_status st = compute_xi(ctx, ds, split, xk, xv, arch, H, &xi)) return st;
    if (y_out) {
      *y_out = static_cast<double *>(std::malloc(P * sizeof(double)));
      if (!*y_out) {
        std::free(xi);
        return am::fail(ctx, AM_ERR_NO_MEMORY, "out of memory");
      }
      std::memcpy(*y_out, y.data(), P * sizeof(double));
    }
    *xi_out = xi;
    *P_out = P;
    *N0_out = N0;
    return AM_OK;
  });
}

}  // extern "C"
