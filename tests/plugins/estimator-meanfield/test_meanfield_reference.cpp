// Mean-field DCA against a slow implementation written apart from it (meanfield.h): frequencies counted pair by pair
// over the rows, the whole correlation matrix, its inverse through the eigen-decomposition (dsyevd; the estimator
// uses Cholesky), the zero-sum gauge as the projection P E P, APC and the fields by their formulas. Agreement to a
// tolerance from the condition number; the scores equal the alignment fit's scoring code (msa_scores.h) on the
// estimator's own couplings, bit for bit.
#include <doctest/doctest.h>

#include <lapacke.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "meanfield_test_util.hpp"
#include "msa_scores.h"

using namespace mf_test;

namespace {

struct Reference {
  std::vector<double> J, h, F, S;  // J [L, L, C, C], h [L, C], F and S [L, L]
  double cond = 0.0;               // 2-norm condition number of the correlation matrix
  double inv_max = 0.0;            // max |C⁻¹|
};

// f̃_i(a) and f̃_ij(a, b) for every i, j (f̃_ii(a, b) = δ_ab f̃_i(a)), by their definition.
void frequencies(const Alignment &a, double lambda, std::vector<double> &f1, std::vector<double> &f2) {
  const int L = a.L, C = a.C;
  const size_t M = a.M();
  double W = 0.0;
  for (size_t mu = 0; mu < M; ++mu) W += a.w.empty() ? 1.0 : a.w[mu];
  f1.assign((size_t)L * C, 0.0);
  f2.assign((size_t)L * L * C * C, 0.0);
  for (size_t mu = 0; mu < M; ++mu) {
    const double w = (a.w.empty() ? 1.0 : a.w[mu]) / W;
    for (int i = 0; i < L; ++i) {
      f1[(size_t)i * C + a.tokens[mu * L + i]] += w;
      for (int j = 0; j < L; ++j)
        f2[(((size_t)i * L + j) * C + a.tokens[mu * L + i]) * C + a.tokens[mu * L + j]] += w;
    }
  }
  for (double &x : f1) x = (1 - lambda) * x + lambda / C;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      for (int p = 0; p < C; ++p)
        for (int q = 0; q < C; ++q) {
          double &x = f2[(((size_t)i * L + j) * C + p) * C + q];
          x = i != j ? (1 - lambda) * x + lambda / ((double)C * C) : (p == q ? f1[(size_t)i * C + p] : 0.0);
        }
}

// C⁻¹ of the full correlation matrix (states other than `ref`) as V Λ⁻¹ Vᵀ from dsyevd.
std::vector<double> inverse(const Alignment &a, int ref, const std::vector<double> &f1, const std::vector<double> &f2,
                            Reference &out) {
  const int L = a.L, C = a.C, K = C - 1;
  const size_t n = (size_t)L * K;
  auto var = [&](int i, int s) { return (size_t)i * K + (s < ref ? s : s - 1); };
  std::vector<double> A(n * n), lam(n), inv(n * n, 0.0);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      for (int p = 0; p < C; ++p)
        for (int q = 0; q < C; ++q)
          if (p != ref && q != ref)
            A[var(i, p) * n + var(j, q)] = f2[(((size_t)i * L + j) * C + p) * C + q] - f1[i * C + p] * f1[j * C + q];
  REQUIRE(LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', (lapack_int)n, A.data(), (lapack_int)n, lam.data()) == 0);
  REQUIRE(lam[0] > 0.0);
  out.cond = lam[n - 1] / lam[0];
  for (size_t k = 0; k < n; ++k)
    for (size_t r = 0; r < n; ++r)
      for (size_t s = 0; s < n; ++s) inv[r * n + s] += A[r * n + k] * A[s * n + k] / lam[k];
  for (double x : inv) out.inv_max = std::max(out.inv_max, std::fabs(x));
  return inv;
}

// ‖P E P‖_F over the states other than the gap, P = I − 11ᵀ/K.
double gauged_norm(const double *e, int C, int gap) {
  std::vector<int> st;
  for (int s = 0; s < C; ++s)
    if (s != gap) st.push_back(s);
  const size_t K = st.size();
  std::vector<double> P(K * K), E(K * K), T(K * K, 0.0), G(K * K, 0.0);
  for (size_t p = 0; p < K; ++p)
    for (size_t q = 0; q < K; ++q) {
      P[p * K + q] = (p == q) - 1.0 / K;
      E[p * K + q] = e[st[p] * C + st[q]];
    }
  for (size_t p = 0; p < K; ++p)
    for (size_t q = 0; q < K; ++q)
      for (size_t k = 0; k < K; ++k) T[p * K + q] += P[p * K + k] * E[k * K + q];
  double s2 = 0.0;
  for (size_t p = 0; p < K; ++p)
    for (size_t q = 0; q < K; ++q) {
      for (size_t k = 0; k < K; ++k) G[p * K + q] += T[p * K + k] * P[k * K + q];
      s2 += G[p * K + q] * G[p * K + q];
    }
  return std::sqrt(s2);
}

Reference reference(const Alignment &a, double lambda, int ref, int gap) {
  const int L = a.L, C = a.C, K = C - 1;
  const size_t CC = (size_t)C * C;
  Reference out;
  std::vector<double> f1, f2;
  frequencies(a, lambda, f1, f2);
  const std::vector<double> inv = inverse(a, ref, f1, f2, out);
  const size_t n = (size_t)L * K;
  auto var = [&](int i, int s) { return (size_t)i * K + (s < ref ? s : s - 1); };
  out.J.assign((size_t)L * L * CC, 0.0);
  out.h.assign((size_t)L * C, 0.0);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      for (int p = 0; p < C; ++p)
        for (int q = 0; q < C; ++q)
          if (i != j && p != ref && q != ref)
            out.J[((size_t)i * L + j) * CC + p * C + q] = -inv[var(i, p) * n + var(j, q)];
  for (int i = 0; i < L; ++i)
    for (int p = 0; p < C; ++p) {
      if (p == ref) continue;
      double s = std::log(f1[i * C + p] / f1[i * C + ref]);
      for (int j = 0; j < L; ++j)
        for (int q = 0; q < C; ++q) s -= out.J[((size_t)i * L + j) * CC + p * C + q] * f1[j * C + q];
      out.h[(size_t)i * C + p] = s;
    }
  out.F.assign((size_t)L * L, 0.0);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      if (i != j) out.F[(size_t)i * L + j] = gauged_norm(&out.J[((size_t)i * L + j) * CC], C, gap);
  std::vector<double> row(L, 0.0);
  double all = 0.0;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j) row[i] += out.F[(size_t)i * L + j] / (L - 1), all += out.F[(size_t)i * L + j];
  all /= (double)L * (L - 1);
  out.S = out.F;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      if (i != j) out.S[(size_t)i * L + j] -= row[i] * row[j] / all;
  return out;
}

double max_diff(const std::vector<double> &x, const std::vector<double> &y) {
  REQUIRE(x.size() == y.size());
  double d = 0.0;
  for (size_t k = 0; k < x.size(); ++k) d = std::max(d, std::fabs(x[k] - y[k]));
  return d;
}

// The estimator against the reference on `a`: couplings, fields, F and S within a tolerance from cond(C).
void compare(const Alignment &a, double lambda, int ref, int gap) {
  am::meanfield::Options o;
  o.pseudocount = lambda;
  Rec run;
  estimate(a, o, run, am::sdk::threads_loop(2));
  const Reference r = reference(a, lambda, ref, gap);
  const am_record *p = am_record_get(run.r, "params");
  const std::vector<double> J = numbers(p, "J"), h = numbers(p, "h"), F = numbers(run.r, "fn"),
                            S = numbers(run.r, "scores");
  // Both inverses are backward stable: each is within ~n·cond·ε of C⁻¹ relative to its largest entry (a factor
  // 10 of room for the constants of dsyevd and dpotri). F is 1-Lipschitz in a block's entries after the
  // (non-expansive) zero-sum projection: at most C·δJ; APC moves that by at most a few times more.
  const double n = (double)a.L * (a.C - 1), dJ = 10 * n * r.cond * DBL_EPSILON * r.inv_max;
  CAPTURE(r.cond);
  CAPTURE(dJ);
  CHECK(r.cond < 1e6);  // a meaningful comparison: the tolerance stays far below the couplings' size
  CHECK(max_diff(J, r.J) <= dJ);
  CHECK(max_diff(F, r.F) <= a.C * dJ);
  CHECK(max_diff(S, r.S) <= 4 * a.C * dJ);
  // the fields add L·C couplings times frequencies ≤ 1 to a logarithm computed the same way
  CHECK(max_diff(h, r.h) <= a.L * a.C * dJ + 1e-13);
  CHECK(number(run.r, "rcond") * r.cond >= 1.0 / n);  // 1-norm and 2-norm condition numbers differ by ≤ n
  // the scores are the alignment fit's code on these couplings, bit for bit
  CHECK(am::msa::frobenius_scores(J.data(), a.L, a.C, gap) == F);
  CHECK(am::msa::apc_scores(F, a.L) == S);
}

}  // namespace

TEST_CASE("meanfield: couplings, fields and scores agree with a dense eigen-decomposition inverse (alignment with a "
          "gap, weights, pseudocount 0.2)") {
  Alignment a = random_alignment(11, 60, 5, 4, 0.5);
  a.alphabet = "-ACD";  // the gap is state 0: the reference state, and left out of the scores
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> u(0.2, 1.0);
  for (size_t mu = 0; mu < a.M(); ++mu) a.w.push_back(u(g));
  compare(a, 0.2, 0, 0);
}

TEST_CASE("meanfield: the same without an alphabet (the potts task's shape: the last colour dropped, every state "
          "scored), pseudocount 0.5 and 0.05") {
  const Alignment a = random_alignment(12, 80, 6, 3, 0.6);
  compare(a, 0.5, 2, -1);
  compare(a, 0.05, 2, -1);
}
