// The pair scores of the alignment fit (msa_scores.h): APC by hand on a 4×4 example, the Frobenius norm of a
// zero-sum block by hand, gauge invariance, the gap state left out, plmc's formula written independently, ranking.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "msa_scores.h"

using namespace am::msa;

namespace {

size_t jx(int L, int C, int i, int j, int a, int b) { return (((size_t)i * L + j) * C + a) * C + b; }

std::vector<double> random_J(std::mt19937_64 &g, int L, int C) {
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<double> J((size_t)L * L * C * C);
  for (auto &x : J) x = n(g);
  for (int i = 0; i < L; ++i)
    for (int k = 0; k < C * C; ++k) J[jx(L, C, i, i, 0, 0) + k] = 0.0;
  return J;
}

}  // namespace

TEST_CASE("msa scores: APC by hand on a 4x4 example, and the ranking") {
  // F_01..F_23 = 1..6: row means over j ≠ i 2, 10/3, 4, 14/3; mean over the 6 pairs 7/2; S_ij = F_ij − r_i r_j / (7/2)
  const std::vector<double> F = {0, 1, 2, 3, 1, 0, 4, 5, 2, 4, 0, 6, 3, 5, 6, 0};
  const std::vector<double> S = apc_scores(F, 4);
  CHECK(S[0 * 4 + 1] == doctest::Approx(-19.0 / 21).epsilon(1e-14));
  CHECK(S[0 * 4 + 2] == doctest::Approx(-2.0 / 7).epsilon(1e-14));
  CHECK(S[0 * 4 + 3] == doctest::Approx(1.0 / 3).epsilon(1e-14));
  CHECK(S[1 * 4 + 2] == doctest::Approx(4.0 / 21).epsilon(1e-14));
  CHECK(S[1 * 4 + 3] == doctest::Approx(5.0 / 9).epsilon(1e-14));
  CHECK(S[2 * 4 + 3] == doctest::Approx(2.0 / 3).epsilon(1e-14));
  for (int i = 0; i < 4; ++i) {
    CHECK(S[i * 5] == 0.0);
    for (int j = 0; j < 4; ++j) CHECK(S[i * 4 + j] == S[j * 4 + i]);
  }
  const auto r = rank_pairs(S, 4);
  REQUIRE(r.size() == 6);
  const int order[6][2] = {{2, 3}, {1, 3}, {0, 3}, {1, 2}, {0, 2}, {0, 1}};
  for (int k = 0; k < 6; ++k) {
    CHECK(r[k].i == order[k][0]);
    CHECK(r[k].j == order[k][1]);
  }
}

TEST_CASE("msa scores: ties rank by i then j; all-zero F stays zero") {
  const std::vector<double> zero(25, 0.0);
  const auto S = apc_scores(zero, 5);
  for (double x : S) CHECK(x == 0.0);
  const auto r = rank_pairs(S, 5);
  REQUIRE(r.size() == 10);
  CHECK((r[0].i == 0 && r[0].j == 1));
  CHECK((r[3].i == 0 && r[3].j == 4));
  CHECK((r[4].i == 1 && r[4].j == 2));
  CHECK((r[9].i == 3 && r[9].j == 4));
}

TEST_CASE("msa scores: the Frobenius norm of a zero-sum block, symmetrised, by hand") {
  // C = 2, J_01 = [[x, −x], [−x, x]] is already zero-sum: F = 2|x|. J_10 is zero, so the symmetrised block is half.
  const int L = 2, C = 2;
  std::vector<double> J((size_t)L * L * C * C, 0.0);
  const double x = 0.75;
  J[jx(L, C, 0, 1, 0, 0)] = x;
  J[jx(L, C, 0, 1, 0, 1)] = -x;
  J[jx(L, C, 0, 1, 1, 0)] = -x;
  J[jx(L, C, 0, 1, 1, 1)] = x;
  const auto F = frobenius_scores(J.data(), L, C, -1);
  CHECK(F[1] == doctest::Approx(x).epsilon(1e-15));
  CHECK(F[2] == F[1]);
  CHECK(F[0] == 0.0);
}

TEST_CASE("msa scores: invariant under gauge changes; the gap state does not count") {
  std::mt19937_64 g(21);
  std::normal_distribution<double> n(0.0, 1.0);
  const int L = 6, C = 5;
  for (int gap : {-1, 0, 3}) {
    const auto J = random_J(g, L, C);
    auto J2 = J;
    for (int i = 0; i < L; ++i)  // J_ij(a, b) + u_ij(a) + v_ij(b): what fields and couplings trade in the PL
      for (int j = 0; j < L; ++j) {
        if (i == j) continue;
        std::vector<double> u(C), v(C);
        for (int a = 0; a < C; ++a) u[a] = n(g), v[a] = n(g);
        for (int a = 0; a < C; ++a)
          for (int b = 0; b < C; ++b) J2[jx(L, C, i, j, a, b)] += u[a] + v[b];
      }
    if (gap >= 0)  // anything in the gap's row and column
      for (int i = 0; i < L; ++i)
        for (int j = 0; j < L; ++j)
          for (int a = 0; a < C; ++a) {
            J2[jx(L, C, i, j, gap, a)] += 10 * n(g);
            J2[jx(L, C, i, j, a, gap)] += 10 * n(g);
          }
    const auto F = frobenius_scores(J.data(), L, C, gap), F2 = frobenius_scores(J2.data(), L, C, gap);
    const auto S = apc_scores(F, L), S2 = apc_scores(F2, L);
    for (size_t k = 0; k < S.size(); ++k) CHECK(S2[k] == doctest::Approx(S[k]).epsilon(1e-12));  // round-off of O(10) sums
  }
}

TEST_CASE("msa scores: a symmetric zero-sum J gives plmc's scores (its formula written independently)") {
  // plmc (OutputCouplingScores): norm of e_ij over all states for i < j, C_pos_avg[i] accumulated as norm/(L−1),
  // C_avg as norm/nPairs, score = norm − C_pos_avg[i]·C_pos_avg[j]/C_avg. On a J already symmetric and zero-sum
  // (as plmc's fields+ℓ2 optimum nearly is) the gauge step changes nothing and both must agree.
  std::mt19937_64 g(22);
  const int L = 7, C = 4;
  auto J = random_J(g, L, C);
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j < L; ++j) {
      std::vector<double> e(C * C);
      double all = 0.0;
      std::vector<double> row(C, 0.0), col(C, 0.0);
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b) {
          e[a * C + b] = J[jx(L, C, i, j, a, b)];
          row[a] += e[a * C + b] / C, col[b] += e[a * C + b] / C, all += e[a * C + b] / (C * C);
        }
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b)
          J[jx(L, C, i, j, a, b)] = J[jx(L, C, j, i, b, a)] = e[a * C + b] - row[a] - col[b] + all;
    }
  std::vector<double> norm((size_t)L * L, 0.0), pos(L, 0.0);
  double avg = 0.0;
  const double pairs = L * (L - 1) / 2.0;
  for (int i = 0; i < L - 1; ++i)
    for (int j = i + 1; j < L; ++j) {
      double s = 0.0;
      for (int a = 0; a < C; ++a)
        for (int b = 0; b < C; ++b) s += J[jx(L, C, i, j, a, b)] * J[jx(L, C, i, j, a, b)];
      norm[i * L + j] = std::sqrt(s);
      pos[i] += norm[i * L + j] / (L - 1);
      pos[j] += norm[i * L + j] / (L - 1);
      avg += norm[i * L + j] / pairs;
    }
  const auto S = apc_scores(frobenius_scores(J.data(), L, C, -1), L);
  for (int i = 0; i < L - 1; ++i)
    for (int j = i + 1; j < L; ++j)
      CHECK(S[i * L + j] == doctest::Approx(norm[i * L + j] - pos[i] * pos[j] / avg).epsilon(1e-12));
}
