// attnmech — predictor metrics, kernel–task alignment and head scores.
#include <algorithm>
#include <cmath>
#include <vector>

#include "attnmech/theory.h"
#include "abi.hpp"
#include "internal.hpp"
#include "linalg.hpp"
#include "theory.hpp"

using am::la::vec;

extern "C" {

AM_API double am_accuracy(const double *mean, const double *y, size_t n) {
  if (!mean || !y || n == 0) return NAN;
  size_t ok = 0;
  for (size_t i = 0; i < n; ++i) {
    const int sm = (mean[i] > 0) - (mean[i] < 0), sy = (y[i] > 0) - (y[i] < 0);
    ok += (sm != 0 && sm == sy);
  }
  return (double)ok / (double)n;
}

AM_API am_status am_regression_errors(am_context *ctx, const double *mean, const double *var, const double *y, size_t n,
                                      double *bias, double *variance, double *full_accuracy) {
  if (!mean || !var || !y) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "NULL argument to am_regression_errors");
  if (n == 0) return am::fail(ctx, AM_ERR_SHAPE, "no test points");
  double b = 0, v = 0, f = 0;
  for (size_t i = 0; i < n; ++i) {
    b += (mean[i] - y[i]) * (mean[i] - y[i]);
    v += var[i];
    // Φ(y f̄ / √δf²); a zero variance makes it a step
    const double z = y[i] * mean[i];
    f += var[i] > 0 ? 0.5 * std::erfc(-z / std::sqrt(2.0 * var[i])) : (z > 0 ? 1.0 : (z < 0 ? 0.0 : 0.5));
  }
  if (bias) *bias = b / (double)n;
  if (variance) *variance = v / (double)n;
  if (full_accuracy) *full_accuracy = f / (double)n;
  return AM_OK;
}

AM_API am_status am_kernel_alignment(am_context *ctx, const double *K, size_t P, size_t ldk, const double *y, size_t k,
                                     double *overlaps, double *eigenvalues) {
  return am::guarded(ctx, [&]() -> am_status {
    if (!K || !y || !overlaps) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "NULL argument to am_kernel_alignment");
    if (P == 0 || ldk < P) return am::fail(ctx, AM_ERR_SHAPE, "bad kernel size P = %zu, ldk = %zu", P, ldk);
    if (k > P) return am::fail(ctx, AM_ERR_SHAPE, "asked for %zu principal components of a %zu×%zu kernel", k, P, P);
    if (k == 0) return AM_OK;
    am::theory_sizes sz;
    sz.P = (double)P;
    sz.k = (double)k;
    if (am_status st = am::theory_memory_check(ctx, sz, am::kMemAlignment,
                                               am::format("the alignment of a %zu×%zu kernel", P, P).c_str()))
      return st;
    vec A(P * P), w(k), Z(P * k);
    const auto copy_kernel = [&] {
      for (size_t j = 0; j < P; ++j)
        for (size_t i = 0; i < P; ++i) A[i + j * P] = K[i + j * ldk];
    };
    copy_kernel();
    if (!am::all_finite(A.data(), A.size())) return am::fail(ctx, AM_ERR_NONFINITE, "kernel has non-finite entries");
    // Only the k leading components: dsyevr with an index range (the back-transform is k vectors, not P). If it
    // fails, the whole spectrum by dsyevd from a fresh copy; its 2·P² workspace is checked when it is needed.
    if (!am::la::syevr_top(A.data(), P, P, k, w.data(), Z.data())) {
      sz.k = 0;
      sz.extra_doubles = 2.0 * (double)P * (double)P + 6.0 * (double)P;
      if (am_status st = am::theory_memory_check(ctx, sz, am::kMemAlignment,
                                                 am::format("dsyevd on a %zu×%zu kernel", P, P).c_str()))
        return st;
      copy_kernel();
      if (!am::la::syevd_top(A.data(), P, P, k, w.data(), Z.data()))
        return am::fail(ctx, AM_ERR_INTERNAL, "dsyevr and dsyevd failed on the kernel");
    }
    const double ny = cblas_dnrm2((int)P, y, 1);
    for (size_t r = 0; r < k; ++r) {
      const size_t c = k - 1 - r;  // eigenvalues ascending: the largest first
      overlaps[r] = ny > 0 ? std::fabs(cblas_ddot((int)P, Z.data() + c * P, 1, y, 1)) / ny : 0.0;
      if (eigenvalues) eigenvalues[r] = w[c];
    }
    return AM_OK;
  });
}

AM_API am_status am_head_scores(am_context *ctx, const am_arch *arch_in, const double *U1, double *scores) {
  am_arch copy;
  if (am_status st = am::arch_in(ctx, arch_in, &copy)) return st;
  const am_arch *arch = &copy;
  if (!U1 || !scores) return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "NULL argument to am_head_scores");
  const size_t H = am_arch_paths(arch);
  if (!am::all_finite(U1, H * H)) return am::fail(ctx, AM_ERR_NONFINITE, "U_1 has non-finite entries");
  size_t off = 0;
  double best = 0;
  for (uint32_t l = 1; l <= arch->layers; ++l) {
    const size_t Hl = arch->heads[l - 1], below = am_arch_dim(arch, l + 1);
    for (size_t h = 0; h < Hl; ++h) {
      // Σ over pairs (π, π') where either path goes through head h of layer l
      double s = 0;
      for (size_t b = 0; b < H; ++b) {
        const bool in_b = (b / below) % Hl == h;
        for (size_t a = 0; a < H; ++a) {
          const bool in_a = (a / below) % Hl == h;
          if (in_a || in_b) s += std::fabs(U1[a + b * H]);
        }
      }
      scores[off + h] = s;
      best = std::max(best, s);
    }
    off += Hl;
  }
  if (best > 0)
    for (size_t i = 0; i < off; ++i) scores[i] /= best;
  return AM_OK;
}

AM_API double am_log_likelihood(const double *mean, const double *var, const double *y, size_t n, double noise) {
  const double two_pi = 6.283185307179586476925286766559;
  if (!mean || !var || !y || n == 0) return NAN;
  double sum = 0;
  for (size_t i = 0; i < n; ++i) {
    const double s = var[i] + noise, r = y[i] - mean[i];
    if (!(s > 0)) return NAN;
    sum += -0.5 * (std::log(two_pi * s) + r * r / s);
  }
  return sum / (double)n;
}

}  // extern "C"

namespace {

// Likelihoods this close to the best count as equal: two cells whose solutions agree to the solver's tolerance
// (e.g. both at the GP point) differ by round-off only (~1e-13 relative seen); a real difference is far larger.
constexpr double kLikelihoodTie = 1e-9;

double at(const double *v, size_t i) { return v ? v[i] : 0.0; }

// Candidate i is nearer the GP limit than j: a larger smallest width, then a larger sum of widths, then a larger T.
bool nearer_gp(const double *wmin, const double *wsum, const double *T, size_t i, size_t j) {
  if (at(wmin, i) != at(wmin, j)) return at(wmin, i) > at(wmin, j);
  if (at(wsum, i) != at(wsum, j)) return at(wsum, i) > at(wsum, j);
  return at(T, i) > at(T, j);
}

}  // namespace

extern "C" {

AM_API am_status am_select_validation(am_context *ctx, size_t n, const double *accuracy, const double *log_likelihood,
                                      const double *width_min, const double *width_sum, const double *temperature,
                                      size_t *chosen) {
  if (!chosen || (n > 0 && !accuracy))
    return am::fail(ctx, AM_ERR_INVALID_ARGUMENT, "NULL argument to am_select_validation");
  *chosen = n;
  double acc = -INFINITY, ll = -INFINITY;
  for (size_t i = 0; i < n; ++i)
    if (!std::isnan(accuracy[i])) acc = std::max(acc, accuracy[i]);
  if (acc == -INFINITY) return am::fail(ctx, AM_ERR_NOT_CONVERGED, "no candidate to select: every solve failed");
  for (size_t i = 0; i < n; ++i)
    if (accuracy[i] == acc && log_likelihood && std::isfinite(log_likelihood[i])) ll = std::max(ll, log_likelihood[i]);
  const double floor = ll == -INFINITY ? -INFINITY : ll - kLikelihoodTie * std::max(1.0, std::fabs(ll));
  for (size_t i = 0; i < n; ++i) {
    if (accuracy[i] != acc || (ll != -INFINITY && !(log_likelihood[i] >= floor))) continue;
    if (*chosen == n || nearer_gp(width_min, width_sum, temperature, i, *chosen)) *chosen = i;
  }
  return AM_OK;
}

}  // extern "C"
