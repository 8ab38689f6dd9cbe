// estimator "meanfield" — the mathematics of mean-field DCA (meanfield.h): frequencies, the correlation matrix, its
// Cholesky inverse, the couplings, fields and Frobenius scores.
#include "meanfield.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <string>

#include "msa_scores.h"

namespace am::meanfield {

namespace {

// The pair (i, j), i > j, of index p in the order (1,0), (2,0), (2,1), (3,0), …: p = i(i − 1)/2 + j.
void pair_of(size_t p, int *i, int *j) {
  size_t r = (size_t)((1.0 + std::sqrt(1.0 + 8.0 * (double)p)) / 2.0);
  while (r * (r - 1) / 2 > p) --r;
  while ((r + 1) * r / 2 <= p) ++r;
  *i = (int)r;
  *j = (int)(p - r * (r - 1) / 2);
}

// Site-major tokens as variables within their site: r[i·M + μ] = a for a < ref, a − 1 above it, −1 for ref.
std::vector<int32_t> site_major(const Rows &x, int ref) {
  std::vector<int32_t> r((size_t)x.L * x.M);
  for (size_t mu = 0; mu < x.M; ++mu)
    for (int i = 0; i < x.L; ++i) {
      const int32_t a = x.tokens[mu * x.L + i];
      r[(size_t)i * x.M + mu] = a == ref ? -1 : (a < ref ? a : a - 1);
    }
  return r;
}

// f̃_i(a) = (1 − λ) Σ_μ w_μ [s^μ_i = a] / W + λ / C.
void single_sites(const Rows &x, double lambda, Correlations &c) {
  c.f.assign((size_t)x.L * x.C, 0.0);
  for (size_t mu = 0; mu < x.M; ++mu)
    for (int i = 0; i < x.L; ++i) c.f[(size_t)i * x.C + x.tokens[mu * x.L + i]] += x.w[mu];
  for (double &v : c.f) v = (1.0 - lambda) * (v / c.weight) + lambda / x.C;
}

// The full state of variable k of a site (k skips the reference state).
inline int state_of(int k, int ref) { return k < ref ? k : k + 1; }

// C(i a, i b) = δ_ab f̃_i(a) − f̃_i(a) f̃_i(b), the lower triangle of each diagonal block.
void diagonal_blocks(Correlations &c) {
  const int K = c.C - 1;
  for (int i = 0; i < c.L; ++i)
    for (int kb = 0; kb < K; ++kb)
      for (int ka = kb; ka < K; ++ka) {
        const double fa = c.f[(size_t)i * c.C + state_of(ka, c.ref)], fb = c.f[(size_t)i * c.C + state_of(kb, c.ref)];
        c.c[((size_t)i * K + ka) + ((size_t)i * K + kb) * c.n] = (ka == kb ? fa : 0.0) - fa * fb;
      }
}

// C(i a, j b) = (1 − λ) f_ij(a, b) + λ / C² − f̃_i(a) f̃_j(b) for i > j; f_ij counted in row order into blk [K·K].
void pair_block(const Rows &x, const std::vector<int32_t> &r, int i, int j, double lambda, std::vector<double> &blk,
                Correlations &c) {
  const int K = c.C - 1;
  std::fill(blk.begin(), blk.end(), 0.0);
  const int32_t *ri = r.data() + (size_t)i * x.M, *rj = r.data() + (size_t)j * x.M;
  for (size_t mu = 0; mu < x.M; ++mu)
    if (ri[mu] >= 0 && rj[mu] >= 0) blk[(size_t)ri[mu] * K + rj[mu]] += x.w[mu];
  const double u = lambda / ((double)c.C * c.C);
  for (int kb = 0; kb < K; ++kb) {
    const double fb = c.f[(size_t)j * c.C + state_of(kb, c.ref)];
    double *col = c.c.data() + ((size_t)j * K + kb) * c.n + (size_t)i * K;
    for (int ka = 0; ka < K; ++ka)
      col[ka] = (1.0 - lambda) * (blk[(size_t)ka * K + kb] / c.weight) + u -
                c.f[(size_t)i * c.C + state_of(ka, c.ref)] * fb;
  }
}

// "site 12 (state 'K')": the site number and letter of variable v, as `labels` name them.
std::string name_of(const Correlations &c, const Labels &labels, size_t v) {
  const int i = (int)(v / (c.C - 1)), a = state_of((int)(v % (c.C - 1)), c.ref);
  char site[64], state[64];
  std::snprintf(site, sizeof site, "%.0f", labels.sites.size() == (size_t)c.L ? labels.sites[i] : i + 1.0);
  if (labels.letters.size() == (size_t)c.C) std::snprintf(state, sizeof state, "'%c'", labels.letters[a]);
  else std::snprintf(state, sizeof state, "%d", a);
  return std::string("site ") + site + " (state " + state + ")";
}

// The upper triangle from the lower one (blocked: both sides stay in cache), so that every (r, s) is read down a
// column.
void symmetrize(Correlations &c) {
  const size_t n = c.n, B = 64;
  for (size_t s0 = 0; s0 < n; s0 += B)
    for (size_t r0 = s0; r0 < n; r0 += B)
      for (size_t s = s0; s < std::min(s0 + B, n); ++s)
        for (size_t r = std::max(r0, s + 1); r < std::min(r0 + B, n); ++r) c.c[s + r * n] = c.c[r + s * n];
}

}  // namespace

Correlations correlations(const Rows &x, int ref, double lambda, const am::sdk::ParallelFor &loop) {
  Correlations c;
  c.L = x.L;
  c.C = x.C;
  c.ref = ref;
  c.n = (size_t)x.L * (x.C - 1);
  c.weight = 0.0;
  for (size_t mu = 0; mu < x.M; ++mu) c.weight += x.w[mu];
  single_sites(x, lambda, c);
  c.c.assign(c.n * c.n, 0.0);
  diagonal_blocks(c);
  const std::vector<int32_t> r = site_major(x, ref);
  const size_t pairs = (size_t)x.L * (x.L - 1) / 2, K = (size_t)x.C - 1;
  loop(pairs, [&](size_t begin, size_t end, int) {
    std::vector<double> blk(K * K);
    for (size_t p = begin; p < end; ++p) {
      int i = 0, j = 0;
      pair_of(p, &i, &j);
      pair_block(x, r, i, j, lambda, blk, c);
    }
  });
  return c;
}

am_status invert(am_context *ctx, Correlations &c, const Labels &labels, double lambda, double *rcond) {
  const lapack_int n = (lapack_int)c.n;
  const double anorm = LAPACKE_dlansy(LAPACK_COL_MAJOR, '1', 'L', n, c.c.data(), n);
  lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, c.c.data(), n);
  if (info > 0)
    return am_context_fail(ctx, AM_ERR_SINGULAR,
                           "meanfield: the correlation matrix is not positive definite: its Cholesky factorisation "
                           "stops at %s with pseudocount %g (a state never seen at a site, or sites whose states "
                           "determine each other, make it singular without pseudocounts; a pseudocount > 0, e.g. "
                           "the default 0.5, makes it positive definite)",
                           name_of(c, labels, (size_t)info - 1).c_str(), lambda);
  if (info < 0) return am_context_fail(ctx, AM_ERR_NONFINITE, "meanfield: the correlation matrix is not finite");
  *rcond = 0.0;
  info = LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', n, c.c.data(), n, anorm, rcond);
  const double floor = (double)c.n * DBL_EPSILON;
  if (info != 0 || !(*rcond >= floor))
    return am_context_fail(ctx, AM_ERR_SINGULAR,
                           "meanfield: the correlation matrix is numerically singular: reciprocal condition number "
                           "%.3g < n·ε = %.3g (n = %zu) with pseudocount %g (sites whose states determine each "
                           "other; a pseudocount > 0, e.g. the default 0.5, makes it well conditioned)",
                           *rcond, floor, c.n, lambda);
  info = LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', n, c.c.data(), n);
  if (info != 0)
    return am_context_fail(ctx, AM_ERR_SINGULAR, "meanfield: the inverse of the correlation matrix failed (dpotri %d)",
                           (int)info);
  symmetrize(c);
  return AM_OK;
}

void coupling_block(const Correlations &inv, int i, int j, double *e) {
  const int C = inv.C;
  for (int b = 0; b < C; ++b) {  // down the columns of C⁻¹
    const double *col = b == inv.ref ? nullptr : inv.c.data() + inv.var(j, b) * inv.n;
    for (int a = 0; a < C; ++a) e[(size_t)a * C + b] = !col || a == inv.ref ? 0.0 : -col[inv.var(i, a)];
  }
}

std::vector<double> frobenius(const Correlations &inv, int gap_state, const am::sdk::ParallelFor &loop) {
  const int L = inv.L, C = inv.C;
  const size_t CC = (size_t)C * C;
  std::vector<double> F((size_t)L * L, 0.0);
  loop((size_t)L * (L - 1) / 2, [&](size_t begin, size_t end, int) {
    // the pair as a two-site table in the alignment fit's layout: J[0,1](a, b) = e_ji(a, b), J[1,0](b, a) = e_ij(b, a)
    std::vector<double> J2(4 * CC, 0.0), e(CC);
    for (size_t p = begin; p < end; ++p) {
      int i = 0, j = 0;
      pair_of(p, &i, &j);  // i > j
      coupling_block(inv, j, i, e.data());
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b) J2[CC + (size_t)a * C + b] = J2[2 * CC + (size_t)b * C + a] = e[(size_t)a * C + b];
      F[(size_t)i * L + j] = F[(size_t)j * L + i] = am::msa::frobenius_scores(J2.data(), 2, C, gap_state)[1];
    }
  });
  return F;
}

std::vector<double> fields(const Correlations &inv) {
  const int L = inv.L, C = inv.C;
  // v = C⁻¹ g with g(j b) = f̃_j(b): the sum over every site; the site's own block is taken out below
  std::vector<double> g(inv.n), v(inv.n, 0.0), h((size_t)L * C, 0.0);
  for (int j = 0; j < L; ++j)
    for (int b = 0; b < C; ++b)
      if (b != inv.ref) g[inv.var(j, b)] = inv.f[(size_t)j * C + b];
  cblas_dsymv(CblasColMajor, CblasLower, (int)inv.n, 1.0, inv.c.data(), (int)inv.n, g.data(), 1, 0.0, v.data(), 1);
  for (int i = 0; i < L; ++i)
    for (int a = 0; a < C; ++a) {
      if (a == inv.ref) continue;
      const size_t r = inv.var(i, a);
      double s = std::log(inv.f[(size_t)i * C + a] / inv.f[(size_t)i * C + inv.ref]) + v[r];  // −Σ_j e_ij f̃_j
      for (int b = 0; b < C; ++b)
        if (b != inv.ref) s -= inv.at(r, inv.var(i, b)) * g[inv.var(i, b)];
      h[(size_t)i * C + a] = std::isfinite(s) ? s : NAN;  // pseudocount 0: an unseen state has no finite field
    }
  return h;
}

std::vector<double> couplings(const Correlations &inv) {
  const size_t L = inv.L, CC = (size_t)inv.C * inv.C;
  std::vector<double> J(L * L * CC, 0.0);
  for (size_t i = 0; i < L; ++i)
    for (size_t j = 0; j < L; ++j)
      if (i != j) coupling_block(inv, (int)i, (int)j, J.data() + (i * L + j) * CC);
  return J;
}

}  // namespace am::meanfield
