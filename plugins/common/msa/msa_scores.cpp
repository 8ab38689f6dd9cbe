// msa_core — APC-corrected Frobenius pair scores and the ranked contact list (msa_scores.h).
#include "msa_scores.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace am::msa {

namespace {

// ‖J̃‖_F of one symmetrised block (J̃[a·C + b], C×C) over the non-gap states after the zero-sum gauge: J̃ minus its
// row and column means plus the grand mean.
double gauged_norm(const double *Jt, int C, int gap_state) {
  std::vector<int> st;
  for (int a = 0; a < C; ++a)
    if (a != gap_state) st.push_back(a);
  const size_t K = st.size();
  std::vector<double> e(K * K), row(K, 0.0), col(K, 0.0);
  double all = 0.0;
  for (size_t p = 0; p < K; ++p)
    for (size_t q = 0; q < K; ++q) {
      const double v = Jt[(size_t)st[p] * C + st[q]];
      e[p * K + q] = v;
      row[p] += v / K;
      col[q] += v / K;
      all += v / ((double)K * K);
    }
  double s = 0.0;
  for (size_t p = 0; p < K; ++p)
    for (size_t q = 0; q < K; ++q) {
      const double v = e[p * K + q] - row[p] - col[q] + all;
      s += v * v;
    }
  return std::sqrt(s);
}

}  // namespace

std::vector<double> frobenius_scores(const double *J, int L, int C, int gap_state) {
  return frobenius_scores(L, C, gap_state, [&](int i, double *out) {
    for (int j = i + 1; j < L; ++j)
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b)
          out[((size_t)(j - i - 1) * C + a) * C + b] =
              0.5 * (J[(((size_t)i * L + j) * C + a) * C + b] + J[(((size_t)j * L + i) * C + b) * C + a]);
  });
}

std::vector<double> frobenius_scores(int L, int C, int gap_state, const PairRows &rows) {
  std::vector<double> F((size_t)L * L, 0.0), Jt((size_t)std::max(L - 1, 0) * C * C);
  for (int i = 0; i < L; ++i) {
    rows(i, Jt.data());
    for (int j = i + 1; j < L; ++j)
      F[(size_t)i * L + j] = F[(size_t)j * L + i] = gauged_norm(Jt.data() + (size_t)(j - i - 1) * C * C, C, gap_state);
  }
  return F;
}

std::vector<double> apc_scores(const std::vector<double> &F, int L) {
  std::vector<double> mean_i(L, 0.0);
  double mean = 0.0;
  const double pairs = 0.5 * L * (L - 1.0);
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      if (j != i) {
        mean_i[i] += F[(size_t)i * L + j] / (L - 1);
        if (j > i) mean += F[(size_t)i * L + j] / pairs;
      }
  std::vector<double> S(F);
  if (!(mean > 0.0)) return S;
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < L; ++j)
      if (j != i) S[(size_t)i * L + j] = F[(size_t)i * L + j] - mean_i[i] * mean_i[j] / mean;
  return S;
}

std::vector<RankedPair> rank_pairs(const std::vector<double> &S, int L) {
  std::vector<RankedPair> r;
  r.reserve((size_t)L * (L - 1) / 2);
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j < L; ++j) r.push_back({i, j, S[(size_t)i * L + j]});
  std::stable_sort(r.begin(), r.end(), [](const RankedPair &x, const RankedPair &y) { return x.score > y.score; });
  return r;
}

}  // namespace am::msa
