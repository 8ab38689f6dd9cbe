// attnmech — pruning of a trained network in path form (dataset.h `network`), evaluated from ξ:
//   f(X) = (N0·H_tot/s_0)^{1/2} Σ_π c_π w_π·ξ_π,   c_π = Π_l m_{l,h_l} (Σ_h m_{l,h})^{-1/2},
// so the per-example path outputs z_{μπ} = w_π·ξ_π(μ) are computed once and every mask is a weighted sum.
#include "prune.hpp"

#include "../common/sign_accuracy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <string>

namespace am::theory_prune {

namespace {

struct freer {
  void operator()(double *p) const { am_free(p); }
};
using dbuf = std::unique_ptr<double, freer>;

// The network evaluated on the test split: z (n × H_tot, row μ), labels, and the head layout.
struct PathOutputs {
  am_arch arch;
  size_t n = 0, H = 0, nh = 0;
  std::vector<double> z;   // z[μ·H + π] = (N0·H_tot/s_0)^{1/2} w_π·ξ_π(μ)
  dbuf y;
};

am_status path_outputs(am_context *ctx, const am_record *ds, PathOutputs *po) {
  am_arch_default(&po->arch);
  am_status st = am_dataset_arch(ctx, ds, &po->arch, nullptr);
  if (st) return st;
  po->H = am_arch_paths(&po->arch);
  for (uint32_t l = 0; l < po->arch.layers; ++l) po->nh += po->arch.heads[l];
  double *xr = nullptr, *yr = nullptr;
  size_t N0 = 0;
  if ((st = am_dataset_xi(ctx, ds, "test", &xr, &po->n, &N0, &yr))) return st;
  dbuf xi(xr);
  po->y.reset(yr);
  am_array_view wv;
  if (am_record_get_array(am_record_get(ds, "network"), "path_weights", &wv))
    return am_context_fail(ctx, AM_ERR_NOT_FOUND, "theory: dataset has no array network.path_weights");
  if (am_array_view_count(&wv) != po->H * N0)
    return am_context_fail(ctx, AM_ERR_SHAPE, "theory: network.path_weights must be [%zu, %zu] (H_tot, N0)", po->H, N0);
  std::vector<double> w(po->H * N0);
  if ((st = am_array_to_f64_c(ctx, &wv, w.data(), w.size()))) return st;
  const size_t n = po->n, H = po->H;
  const double scale = std::sqrt(double(N0) * double(H) / po->arch.variances[0]);
  po->z.assign(n * H, 0.0);
  for (size_t p = 0; p < H; ++p)
    for (size_t mu = 0; mu < n; ++mu) {
      const double *x = xi.get() + mu + n * N0 * p;
      double acc = 0;
      for (size_t i = 0; i < N0; ++i) acc += w[p * N0 + i] * x[n * i];
      po->z[mu * H + p] = scale * acc;
    }
  return AM_OK;
}

// c_π for a head mask (index: layer-1 heads first), paths in packing order (h_1 most significant).
std::vector<double> path_coefs(const am_arch &a, const std::vector<double> &mask) {
  const uint32_t L = a.layers;
  std::vector<size_t> off(L + 1, 0);
  for (uint32_t l = 0; l < L; ++l) off[l + 1] = off[l] + a.heads[l];
  std::vector<double> c(L, 0.0);
  for (uint32_t l = 0; l < L; ++l) {
    double kept = 0;
    for (size_t h = 0; h < a.heads[l]; ++h) kept += mask[off[l] + h];
    c[l] = kept > 0 ? 1.0 / std::sqrt(kept) : 0.0;
  }
  const size_t H = am_arch_paths(&a);
  std::vector<double> coef(H, 1.0);
  for (size_t p = 0; p < H; ++p) {
    size_t rem = p;
    for (uint32_t l = L; l-- > 0;) {
      const size_t h = rem % a.heads[l];
      rem /= a.heads[l];
      coef[p] *= c[l] * mask[off[l] + h];
    }
  }
  return coef;
}

double masked_accuracy(const PathOutputs &po, const std::vector<double> &mask) {
  const std::vector<double> coef = path_coefs(po.arch, mask);
  std::vector<double> f(po.n, 0.0);
  for (size_t mu = 0; mu < po.n; ++mu) {
    double fe = 0;
    for (size_t p = 0; p < po.H; ++p)
      if (coef[p] != 0) fe += coef[p] * po.z[mu * po.H + p];
    f[mu] = fe;
  }
  return am::common::sign_accuracy(f.data(), po.y.get(), po.n);
}

// Accuracy after pruning order[0..k-1], k = 0 .. nh-1.
std::vector<double> cumulative(const PathOutputs &po, const std::vector<size_t> &order, double base) {
  std::vector<double> a(po.nh), mask(po.nh, 1.0);
  a[0] = base;
  for (size_t k = 1; k < po.nh; ++k) {
    mask[order[k - 1]] = 0;
    a[k] = masked_accuracy(po, mask);
  }
  return a;
}

am_status random_orders_record(am_context *ctx, const PathOutputs &po, double base, size_t count, am_rng r,
                               am_record *pr) {
  const size_t nh = po.nh;
  std::vector<double> sum(nh, 0.0), sq(nh, 0.0);
  for (size_t k = 0; k < count; ++k) {
    std::vector<size_t> order(nh);
    std::iota(order.begin(), order.end(), 0);
    for (size_t i = nh; i > 1; --i) std::swap(order[i - 1], order[size_t(am_rng_below(&r, i))]);
    const auto a = cumulative(po, order, base);
    for (size_t i = 0; i < nh; ++i) {
      sum[i] += a[i];
      sq[i] += a[i] * a[i];
    }
    if (am_context_progress(ctx, 2 + double(k + 1) / double(count), 3, "theory: pruning")) return AM_CANCELLED;
  }
  if (count == 0) return AM_OK;
  std::vector<double> mean(nh), sd(nh);
  for (size_t i = 0; i < nh; ++i) {
    mean[i] = sum[i] / double(count);
    sd[i] = std::sqrt(std::max(0.0, sq[i] / double(count) - mean[i] * mean[i]));
  }
  am_record_set_vector(pr, "random_order_accuracy_mean", mean.data(), nh);
  am_record_set_vector(pr, "random_order_accuracy_std", sd.data(), nh);
  am_record_set_number(pr, "random_orders", double(count));
  return AM_OK;
}

}  // namespace

double spearman(const std::vector<double> &a, const std::vector<double> &b) {
  auto ranks = [](const std::vector<double> &v) {
    std::vector<size_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(), [&](size_t i, size_t j) { return v[i] < v[j]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < idx.size();) {
      size_t j = i;
      while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
      for (size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * double(i + j);
      i = j + 1;
    }
    return r;
  };
  const auto ra = ranks(a), rb = ranks(b);
  const double n = double(a.size());
  if (n < 2 || a.size() != b.size()) return NAN;
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ma += ra[i];
    mb += rb[i];
  }
  ma /= n;
  mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : NAN;
}

bool has_network(const am_record *ds) {
  return ds && am_record_get(am_record_get(ds, "network"), "path_weights") && am_record_get(ds, "X_test");
}

am_status prune(am_context *ctx, const am_record *ds, const std::vector<double> &scores, size_t random_orders,
                am_rng rng, am_record *run) {
  PathOutputs po;
  am_status st = path_outputs(ctx, ds, &po);
  if (st) return st;
  const size_t nh = po.nh;
  am_record *pr = am_record_object(run, "pruning");
  if (!pr) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "theory: cannot build the results record");
  const double base = masked_accuracy(po, std::vector<double>(nh, 1.0));
  am_record_set_number(pr, "base_accuracy", base);
  std::vector<double> single(nh), drop(nh);
  for (size_t j = 0; j < nh; ++j) {
    std::vector<double> mask(nh, 1.0);
    mask[j] = 0;
    single[j] = masked_accuracy(po, mask);
    drop[j] = base - single[j];
  }
  am_record_set_vector(pr, "single_accuracy", single.data(), nh);
  am_record_set_vector(pr, "single_drop", drop.data(), nh);
  const bool scored = scores.size() == nh;
  if (scored) am_record_set_number(pr, "spearman_score_drop", spearman(scores, drop));
  if (am_context_progress(ctx, 1, 3, "theory: pruning")) return AM_CANCELLED;
  std::vector<double> npr(nh);
  std::iota(npr.begin(), npr.end(), 0.0);
  am_record_set_vector(pr, "n_pruned", npr.data(), nh);
  if (scored) {
    std::vector<size_t> order(nh);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) { return scores[i] < scores[j]; });
    const auto a = cumulative(po, order, base);
    const std::vector<double> od(order.begin(), order.end());
    am_record_set_vector(pr, "score_order", od.data(), nh);
    am_record_set_vector(pr, "score_order_accuracy", a.data(), nh);
    std::reverse(order.begin(), order.end());
    const auto ar = cumulative(po, order, base);
    am_record_set_vector(pr, "reverse_score_order_accuracy", ar.data(), nh);
  }
  return random_orders_record(ctx, po, base, random_orders, rng, pr);
}

}  // namespace am::theory_prune
