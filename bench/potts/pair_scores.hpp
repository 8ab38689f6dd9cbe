// bench/potts — the reconstruction figures of the bench and of the stopping-rule study: couplings of every pair i < j
// as a C×C block in the zero-sum gauge against the truth β J_ij U_ab; Pearson correlation of all entries
// ("couplings") and of the per-pair Frobenius norms ("pair scores").
#ifndef ATTNMECH_BENCH_POTTS_PAIR_SCORES_HPP
#define ATTNMECH_BENCH_POTTS_PAIR_SCORES_HPP

#include <cmath>
#include <cstddef>
#include <vector>

#include "factored.h"
#include "potts_model.h"

namespace am::potts::bench {

// Couplings e[(p, a, b)] for pairs p = (i < j) in lexicographic order, zero-sum gauged per C×C block.
inline void zero_sum(std::vector<double> &e, int L, int C) {
  const size_t P = (size_t)L * (L - 1) / 2, CC = (size_t)C * C;
  std::vector<double> rm(C), cm(C);
  for (size_t p = 0; p < P; ++p) {
    double *b = e.data() + p * CC;  // b[a * C + c]
    double all = 0.0;
    std::fill(rm.begin(), rm.end(), 0.0);
    std::fill(cm.begin(), cm.end(), 0.0);
    for (int a = 0; a < C; ++a)
      for (int c = 0; c < C; ++c) {
        rm[a] += b[a * C + c];
        cm[c] += b[a * C + c];
        all += b[a * C + c];
      }
    for (int a = 0; a < C; ++a)
      for (int c = 0; c < C; ++c) b[a * C + c] += -rm[a] / C - cm[c] / C + all / ((double)C * C);
  }
}

inline std::vector<double> truth_couplings(const Model &m) {
  const int L = m.L, C = m.C;
  std::vector<double> e((size_t)L * (L - 1) / 2 * C * C);
  size_t p = 0;
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j < L; ++j, ++p)
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b)
          e[(p * C + a) * C + b] = m.beta * m.J[i + (size_t)L * j] * m.U[a + (size_t)C * b];
  zero_sum(e, L, C);
  return e;
}

inline std::vector<double> factored_couplings(const FactoredModel &fm, const double *th) {
  const int L = fm.L(), C = fm.C();
  std::vector<double> e((size_t)L * (L - 1) / 2 * C * C, 0.0), A((size_t)L * L);
  for (int h = 0; h < fm.heads(); ++h) {
    attention_from_W(fm.W(th, h), L, A.data());
    const double *V = fm.V(th, h);
    size_t p = 0;
    for (int i = 0; i < L; ++i)
      for (int j = i + 1; j < L; ++j, ++p)
        for (int a = 0; a < C; ++a)
          for (int b = 0; b < C; ++b)
            e[(p * C + a) * C + b] +=
                0.5 * (A[i + (size_t)L * j] * V[a + (size_t)C * b] + A[j + (size_t)L * i] * V[b + (size_t)C * a]);
  }
  zero_sum(e, L, C);
  return e;
}

// Pair scores: the Frobenius norm of each pair's (gauged) C×C block, one value per pair i < j.
inline std::vector<double> frobenius_scores(const std::vector<double> &e, int C) {
  const size_t CC = (size_t)C * C, P = e.size() / CC;
  std::vector<double> f(P);
  for (size_t p = 0; p < P; ++p) {
    double t = 0.0;
    for (size_t k = 0; k < CC; ++k) t += e[p * CC + k] * e[p * CC + k];
    f[p] = std::sqrt(t);
  }
  return f;
}

inline double pearson(const std::vector<double> &x, const std::vector<double> &y) {
  const size_t n = x.size();
  double mx = 0, my = 0;
  for (size_t k = 0; k < n; ++k) {
    mx += x[k];
    my += y[k];
  }
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t k = 0; k < n; ++k) {
    sxy += (x[k] - mx) * (y[k] - my);
    sxx += (x[k] - mx) * (x[k] - mx);
    syy += (y[k] - my) * (y[k] - my);
  }
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace am::potts::bench
#endif
