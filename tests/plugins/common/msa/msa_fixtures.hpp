// tests/plugins/common/potts — random alignments and parameters for the MsaModel tests (test_msa_*.cpp).
#ifndef ATTNMECH_TESTS_POTTS_MSA_FIXTURES_HPP
#define ATTNMECH_TESTS_POTTS_MSA_FIXTURES_HPP

#include <cstdint>
#include <random>
#include <vector>

#include "msa_reference.hpp"

namespace msa_test {

// M sequences of L colours 0..C−1, each token missing (−1) with probability p_missing.
inline std::vector<int32_t> random_tokens(std::mt19937_64 &g, size_t M, int L, int C, double p_missing) {
  std::uniform_int_distribution<int> col(0, C - 1);
  std::bernoulli_distribution miss(p_missing);
  std::vector<int32_t> t(M * L);
  for (auto &x : t) x = miss(g) ? -1 : col(g);
  return t;
}

// Weights uniform in [0.1, 2] (plmc's weights are 1/cluster size ≤ 1; larger ones exercise the algebra the same way).
inline std::vector<double> random_weights(std::mt19937_64 &g, size_t M) {
  std::uniform_real_distribution<double> u(0.1, 2.0);
  std::vector<double> w(M);
  for (auto &x : w) x = u(g);
  return w;
}

// θ ~ N(0, scale²): logits of order one, so every softmax is far from saturation and the sums are well conditioned.
inline std::vector<double> random_theta(std::mt19937_64 &g, const msa_ref::Shape &s, double scale) {
  std::normal_distribution<double> n(0.0, scale);
  std::vector<double> th(msa_ref::n_params(s));
  for (auto &x : th) x = n(g);
  return th;
}

// One random problem: tokens (10 % missing), weights and θ ~ N(0, 0.5²), drawn from g in that order.
struct RandomProblem {
  std::vector<int32_t> tok;
  std::vector<double> w, th;
  RandomProblem(std::mt19937_64 &g, const msa_ref::Shape &s, size_t M)
      : tok(random_tokens(g, M, s.L, s.C, 0.1)), w(random_weights(g, M)), th(random_theta(g, s, 0.5)) {}
};

}  // namespace msa_test
#endif
