// bench/msa — our pair scores (msa_scores.h: symmetrise, zero-sum gauge, Frobenius, APC) on plmc's own fitted
// parameters (its binary -o file, format of plm.c's OutputParametersFull), compared with plmc's -c scores file.
// Checks the scoring code against plmc's at its printed precision, and whether plmc's skipping the zero-sum gauge
// matters. Not built by meson (plmc's output is not a project input); build and run by hand:
//   g++ -O2 -std=c++17 -Iplugins/common/msa bench/msa/plmc_params_scores.cpp plugins/common/msa/msa_scores.cpp
//       -o /tmp/plmc_params_scores && /tmp/plmc_params_scores DHFR.params DHFR.couplings
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "msa_scores.h"

namespace {

struct PlmcParams {
  int L = 0, C = 0;
  std::vector<int32_t> offsets;
  std::string focus;
  std::vector<double> J;  // ours: L·L·C·C, J_ij(a, b) and J_ji(b, a) both from plmc's e_ij (i < j)
};

template <class T>
bool get(FILE *f, T *x, size_t n = 1) {
  return std::fread(x, sizeof(T), n, f) == n;
}

// Header: nSites, nCodes, nSeqs, nSkippedSeqs, maxIter (int32); theta, lh, le, lg, nEff (float); alphabet (nCodes
// int8); one weight per sequence incl. skipped (float); focus letters (nSites int8); offsets (nSites int32); then
// fi, hi (nSites·nCodes float), fij, eij (pairs·nCodes² float, pairs i < j in order).
bool read_plmc(const char *path, PlmcParams *p) {
  FILE *f = std::fopen(path, "rb");
  if (!f) return false;
  int32_t hdr[5];
  float fl[5];
  bool ok = get(f, hdr, 5) && get(f, fl, 5);
  p->L = hdr[0];
  p->C = hdr[1];
  const size_t L = p->L, C = p->C, pairs = L * (L - 1) / 2;
  std::vector<int8_t> alpha(C), focus(L);
  std::vector<float> w(hdr[2] + hdr[3]), skip(L * C * 2 + pairs * C * C), e(pairs * C * C);
  p->offsets.resize(L);
  ok = ok && get(f, alpha.data(), C) && get(f, w.data(), w.size()) && get(f, focus.data(), L) &&
       get(f, p->offsets.data(), L) && get(f, skip.data(), skip.size()) && get(f, e.data(), e.size());
  std::fclose(f);
  p->focus.assign(focus.begin(), focus.end());
  p->J.assign(L * L * C * C, 0.0);
  size_t k = 0;
  for (size_t i = 0; i < L; ++i)
    for (size_t j = i + 1; j < L; ++j)
      for (size_t a = 0; a < C; ++a)
        for (size_t b = 0; b < C; ++b, ++k) {
          p->J[((i * L + j) * C + a) * C + b] = e[k];
          p->J[((j * L + i) * C + b) * C + a] = e[k];
        }
  return ok;
}

// plmc's formula (no gauge): ‖e_ij‖ over all states, APC with means over j ≠ i and over pairs.
std::vector<double> plmc_formula(const PlmcParams &p) {
  const int L = p.L, C = p.C;
  std::vector<double> F((size_t)L * L, 0.0);
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j < L; ++j) {
      double s = 0.0;
      for (int k = 0; k < C * C; ++k) s += p.J[((size_t)i * L + j) * C * C + k] * p.J[((size_t)i * L + j) * C * C + k];
      F[(size_t)i * L + j] = F[(size_t)j * L + i] = std::sqrt(s);
    }
  return am::msa::apc_scores(F, L);
}

// Top-n pairs with separation ≥ 6 (site numbers), from a full score matrix.
std::set<std::pair<int, int>> top(const std::vector<double> &S, const PlmcParams &p, size_t n) {
  std::set<std::pair<int, int>> t;
  for (const auto &r : am::msa::rank_pairs(S, p.L)) {
    if (std::abs(p.offsets[r.j] - p.offsets[r.i]) < 6) continue;
    if (t.size() == n) break;
    t.insert({r.i, r.j});
  }
  return t;
}

double overlap(const std::set<std::pair<int, int>> &a, const std::set<std::pair<int, int>> &b) {
  size_t n = 0;
  for (const auto &x : a) n += b.count(x);
  return a.empty() ? 0.0 : (double)n / a.size();
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PLMC.params PLMC.couplings\n", argv[0]);
    return 2;
  }
  PlmcParams p;
  if (!read_plmc(argv[1], &p)) {
    std::fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  const int L = p.L;
  std::vector<double> printed((size_t)L * L, 0.0);
  FILE *f = std::fopen(argv[2], "r");
  if (!f) return 1;
  int si, sj;
  char ri, rj;
  double zero, sc;
  std::vector<int> index(100000, -1);
  for (int i = 0; i < L; ++i) index[p.offsets[i]] = i;
  size_t lines = 0;
  while (std::fscanf(f, "%d %c %d %c %lf %lf", &si, &ri, &sj, &rj, &zero, &sc) == 6) {
    const int i = index[si], j = index[sj];
    printed[(size_t)i * L + j] = printed[(size_t)j * L + i] = sc;
    ++lines;
  }
  std::fclose(f);
  const std::vector<double> ours = am::msa::apc_scores(am::msa::frobenius_scores(p.J.data(), L, p.C, -1), L);
  const std::vector<double> plmc = plmc_formula(p);
  double d_ours = 0, d_plmc = 0, mean_d = 0, top_score = 0;
  for (size_t k = 0; k < printed.size(); ++k) {
    d_ours = std::max(d_ours, std::fabs(ours[k] - printed[k]));
    mean_d += std::fabs(ours[k] - printed[k]) / ((double)L * (L - 1));
    top_score = std::max(top_score, printed[k]);
    d_plmc = std::max(d_plmc, std::fabs(plmc[k] - printed[k]));
  }
  std::printf("L = %d, C = %d, %zu pairs read\n", L, p.C, lines);
  std::printf("max |plmc formula on the params - printed| = %.3g (reader check; printed with 6 decimals)\n", d_plmc);
  std::printf("max |ours (zero-sum gauge) - printed|      = %.3g (mean %.3g; top printed score %.3g)\n", d_ours,
              mean_d, top_score);
  for (size_t n : {(size_t)L, (size_t)L / 2, (size_t)L / 5})
    std::printf("top-%zu overlap (|i-j| >= 6), ours vs printed: %.3f\n", n, overlap(top(ours, p, n), top(printed, p, n)));
  return 0;
}
