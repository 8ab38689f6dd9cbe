// attnmech posterior — R̂ and ESS (see diagnostics.h).
#include "diagnostics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace am::posterior {

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();

size_t min_length(const Chains &c) {
  if (c.empty()) return 0;
  size_t n = c[0].size();
  for (const auto &v : c) n = std::min(n, v.size());
  return n;
}

double mean_of(const double *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += x[i];
  return s / static_cast<double>(n);
}

// Inverse of the standard normal CDF (Acklam's rational approximation refined by one Halley step
// with erfc, accurate to ~1e-15).
double inv_phi(double p) {
  if (p <= 0) return -std::numeric_limits<double>::infinity();
  if (p >= 1) return std::numeric_limits<double>::infinity();
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01,  -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  double x;
  if (p < 0.02425) {
    const double q = std::sqrt(-2 * std::log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else if (p > 1 - 0.02425) {
    const double q = std::sqrt(-2 * std::log(1 - p));
    x = -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  } else {
    const double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double e = 0.5 * std::erfc(-x / std::sqrt(2.0)) - p;
  const double u = e * std::sqrt(2 * M_PI) * std::exp(x * x / 2);
  return x - u / (1 + x * u / 2);
}
}  // namespace

double rhat_basic(const Chains &chains) {
  const size_t m = chains.size(), n = min_length(chains);
  if (m == 0 || n < 2) return kNaN;
  std::vector<double> means(m), vars(m);
  for (size_t c = 0; c < m; ++c) {
    const double mu = mean_of(chains[c].data(), n);
    double ss = 0;
    for (size_t i = 0; i < n; ++i) ss += (chains[c][i] - mu) * (chains[c][i] - mu);
    means[c] = mu;
    vars[c] = ss / static_cast<double>(n - 1);
  }
  const double W = mean_of(vars.data(), m);
  double B_over_n = 0;
  if (m > 1) {
    const double mm = mean_of(means.data(), m);
    for (double v : means) B_over_n += (v - mm) * (v - mm);
    B_over_n /= static_cast<double>(m - 1);
  }
  if (!(W > 0)) return kNaN;
  const double nd = static_cast<double>(n);
  const double var_plus = (nd - 1) / nd * W + B_over_n;
  return std::sqrt(var_plus / W);
}

double ess_basic(const Chains &chains) {
  const size_t m = chains.size(), n = min_length(chains);
  if (m == 0 || n < 4) return kNaN;
  const double nd = static_cast<double>(n);
  std::vector<double> means(m), chain_var(m);
  for (size_t c = 0; c < m; ++c) means[c] = mean_of(chains[c].data(), n);
  // biased autocovariance of chain c at lag t (divide by n)
  auto acov = [&](size_t c, size_t t) {
    const double *x = chains[c].data();
    const double mu = means[c];
    double s = 0;
    for (size_t i = 0; i + t < n; ++i) s += (x[i] - mu) * (x[i + t] - mu);
    return s / nd;
  };
  auto acov_mean = [&](size_t t) {
    double s = 0;
    for (size_t c = 0; c < m; ++c) s += acov(c, t);
    return s / static_cast<double>(m);
  };
  for (size_t c = 0; c < m; ++c) chain_var[c] = acov(c, 0) * nd / (nd - 1);
  const double mean_var = mean_of(chain_var.data(), m);
  double var_plus = mean_var * (nd - 1) / nd;
  if (m > 1) {
    const double mm = mean_of(means.data(), m);
    double b = 0;
    for (double v : means) b += (v - mm) * (v - mm);
    var_plus += b / static_cast<double>(m - 1);
  }
  if (!(var_plus > 0) || !std::isfinite(var_plus)) return kNaN;

  std::vector<double> rho(n, 0.0);
  double rho_even = 1.0;
  rho[0] = rho_even;
  double rho_odd = 1.0 - (mean_var - acov_mean(1)) / var_plus;
  rho[1] = rho_odd;
  size_t s = 1;
  while (s < n - 4 && (rho_even + rho_odd) > 0) {
    rho_even = 1.0 - (mean_var - acov_mean(s + 1)) / var_plus;
    rho_odd = 1.0 - (mean_var - acov_mean(s + 2)) / var_plus;
    if (rho_even + rho_odd >= 0) {
      rho[s + 1] = rho_even;
      rho[s + 2] = rho_odd;
    }
    s += 2;
  }
  const size_t max_s = s;
  // improved estimate (reduces variance in the antithetic case)
  if (rho_even > 0) rho[max_s + 1] = rho_even;
  // Geyer's initial monotone sequence
  for (size_t t = 1; t + 3 <= max_s; t += 2) {
    if (rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]) {
      rho[t + 1] = (rho[t - 1] + rho[t]) / 2;
      rho[t + 2] = rho[t + 1];
    }
  }
  const double total = static_cast<double>(m) * nd;
  double tau = -1.0;
  for (size_t t = 0; t < max_s; ++t) tau += 2.0 * rho[t];
  tau += rho[max_s + 1];
  tau = std::max(tau, 1.0 / std::log10(total));
  return total / tau;
}

Chains split_chains(const Chains &chains) {
  const size_t n = min_length(chains), half = n / 2;
  Chains out;
  out.reserve(2 * chains.size());
  for (const auto &c : chains) {
    out.emplace_back(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(half));
    out.emplace_back(c.begin() + static_cast<std::ptrdiff_t>(n - half), c.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return out;
}

Chains rank_normalize(const Chains &chains) {
  const size_t m = chains.size(), n = min_length(chains);
  const size_t S = m * n;
  std::vector<size_t> idx(S);
  std::iota(idx.begin(), idx.end(), size_t{0});
  auto val = [&](size_t k) { return chains[k / n][k % n]; };
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return val(a) < val(b); });
  Chains out(m, std::vector<double>(n));
  size_t i = 0;
  while (i < S) {
    size_t j = i;
    while (j + 1 < S && val(idx[j + 1]) == val(idx[i])) ++j;
    const double r = 0.5 * static_cast<double>(i + j) + 1.0;  // average 1-based rank
    const double z = inv_phi((r - 0.375) / (static_cast<double>(S) + 0.25));
    for (size_t k = i; k <= j; ++k) out[idx[k] / n][idx[k] % n] = z;
    i = j + 1;
  }
  return out;
}

Diagnostics diagnose(const Chains &chains_in) {
  Diagnostics d;
  const size_t n = min_length(chains_in), m = chains_in.size();
  Chains chains(m);
  for (size_t c = 0; c < m; ++c) chains[c].assign(chains_in[c].begin(), chains_in[c].begin() + static_cast<std::ptrdiff_t>(n));
  std::vector<double> all;
  all.reserve(m * n);
  for (const auto &c : chains) all.insert(all.end(), c.begin(), c.end());
  if (all.empty()) {
    d.rhat = d.ess_bulk = d.ess_mean = d.mean = d.sd = d.mcse = kNaN;
    return d;
  }
  d.mean = mean_of(all.data(), all.size());
  double ss = 0;
  for (double v : all) ss += (v - d.mean) * (v - d.mean);
  d.sd = all.size() > 1 ? std::sqrt(ss / static_cast<double>(all.size() - 1)) : kNaN;
  if (n < 8 || !(d.sd > 0)) {
    d.rhat = d.ess_bulk = d.ess_mean = d.mcse = kNaN;
    return d;
  }
  const Chains split = split_chains(chains);
  const double rhat_bulk = rhat_basic(rank_normalize(split));
  // folded draws |θ − median|
  std::vector<double> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  const size_t S = sorted.size();
  const double median = (S % 2) ? sorted[S / 2] : 0.5 * (sorted[S / 2 - 1] + sorted[S / 2]);
  Chains folded = split;
  for (auto &c : folded)
    for (double &v : c) v = std::fabs(v - median);
  const double rhat_tail = rhat_basic(rank_normalize(folded));
  d.rhat = std::max(rhat_bulk, rhat_tail);
  if (std::isnan(rhat_tail)) d.rhat = rhat_bulk;
  d.ess_bulk = ess_basic(rank_normalize(split));
  d.ess_mean = ess_basic(split);
  d.mcse = d.sd / std::sqrt(d.ess_mean);
  return d;
}

}  // namespace am::posterior
