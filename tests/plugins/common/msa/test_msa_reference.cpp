// The slow reference of the alignment objective (msa_reference.hpp) checked on its own: closed forms at θ = 0 and
// for fields alone, the symmetric Potts penalty, weights as repeated sequences, and its gradient against central
// finite differences — so that it can serve as the oracle of the fast MsaModel (test_msa_model.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "msa_fixtures.hpp"
#include "msa_reference.hpp"

using msa_ref::Shape;

TEST_CASE("msa reference: theta = 0 gives log C per scored token, missing tokens neither scored nor context") {
  std::mt19937_64 g(1);
  for (bool factored : {true, false}) {
    const Shape s{factored, 5, 7, 2, true};
    const std::vector<double> th(msa_ref::n_params(s), 0.0);
    const auto tok = msa_test::random_tokens(g, 9, s.L, s.C, 0.3);
    const auto w = msa_test::random_weights(g, 9);
    // every conditional is uniform over C colours: −log p = log C exactly, whatever the weights; the weighted
    // mean of n ≤ 9·5 such terms (two sums of n and a division) is within (2n + 1)·u relative (u = ε/2: 5e-15;
    // 1.1e-15 seen, where 1e-15 left 0.38 of the tolerance)
    const double tol = (2.0 * 9 * 5 + 1) * DBL_EPSILON / 2;
    CHECK(msa_ref::objective(s, th.data(), 9, tok.data(), w.data(), 0.01, 16.0, nullptr) ==
          doctest::Approx(std::log(7.0)).epsilon(tol));
    CHECK(msa_ref::mean_nll(s, th.data(), 9, tok.data(), w.data()) == doctest::Approx(std::log(7.0)).epsilon(tol));
  }
}

TEST_CASE("msa reference: fields alone give the independent-site model, plus plmc's field penalty") {
  // J = 0 (θ has zero couplings): p(s_i = a) = exp(h_i(a)) / Σ_b exp(h_i(b)); penalty λ_h Σ h²; both by hand.
  const Shape s{false, 3, 3, 0, true};
  std::vector<double> th(msa_ref::n_params(s), 0.0);
  const double h[9] = {0.5, -0.2, 0.1, 0.0, 1.0, -1.0, 0.3, 0.3, -0.6};
  std::copy(h, h + 9, th.begin());
  const std::vector<int32_t> tok = {0, 1, 2, 2, -1, 0};
  const std::vector<double> w = {1.5, 0.5};
  auto nll = [&](int i, int a) {
    const double z = std::exp(h[3 * i]) + std::exp(h[3 * i + 1]) + std::exp(h[3 * i + 2]);
    return std::log(z) - h[3 * i + a];
  };
  const double sum = 1.5 * (nll(0, 0) + nll(1, 1) + nll(2, 2)) + 0.5 * (nll(0, 2) + nll(2, 0));
  const double N = 1.5 * 3 + 0.5 * 2;
  double h2 = 0.0;
  for (double x : h) h2 += x * x;
  CHECK(msa_ref::objective(s, th.data(), 2, tok.data(), w.data(), 0.25, 16.0, nullptr) ==
        doctest::Approx((sum + 0.25 * h2) / N).epsilon(1e-14));
}

TEST_CASE("msa reference: the Potts penalty is plmc's lambda_e * sum_{i<j} |e_ij|^2, and a weight is a repeat") {
  std::mt19937_64 g(2);
  const Shape s{false, 4, 3, 0, false};
  const auto th = msa_test::random_theta(g, s, 0.4);
  const auto tok = msa_test::random_tokens(g, 1, 4, 3, 0.0);
  double e2 = 0.0;
  for (double x : th) e2 += x * x;
  // one sequence of weight 1: f = nll + λ_e Σ e² (each e_ij appears as J_ij and J_ji in the (λ_e/2) Σ_{i≠j} sum)
  const double w1 = 1.0;
  const double f = msa_ref::objective(s, th.data(), 1, tok.data(), &w1, 0.0, 3.0, nullptr);
  const double nll = msa_ref::mean_nll(s, th.data(), 1, tok.data(), &w1) * 4.0;
  CHECK(f == doctest::Approx((nll + 3.0 * e2) / 4.0).epsilon(1e-14));
  // weight 2 on a sequence = the sequence twice with weight 1
  const auto tok2 = msa_test::random_tokens(g, 3, 4, 3, 0.2);
  const std::vector<double> wa = {2.0, 1.0, 0.5}, wb = {1.0, 1.0, 1.0, 0.5};
  std::vector<int32_t> rep(tok2.begin(), tok2.begin() + 4);
  rep.insert(rep.end(), tok2.begin(), tok2.end());
  CHECK(msa_ref::objective(s, th.data(), 3, tok2.data(), wa.data(), 0.1, 2.0, nullptr) ==
        doctest::Approx(msa_ref::objective(s, th.data(), 4, rep.data(), wb.data(), 0.1, 2.0, nullptr)).epsilon(1e-14));
}

TEST_CASE("msa reference: gradient equals central finite differences (both kinds, symmetric, logit scale, fields "
          "on/off, missing, weights)") {
  // Step ε = 1e-5: the central difference's truncation error is ε²/6·|∂³f| ≲ 1e-10 (θ and the logits are O(1) and
  // f is a mean per token, so its third derivatives are O(1)); its round-off is ~1e-16·|f|/ε ≈ 1e-11. A tolerance
  // of 1e-7 leaves three orders of magnitude for both, while a wrong term in the gradient is O(1e-3) or more.
  std::mt19937_64 g(3);
  std::uniform_int_distribution<int> Ld(2, 6), Cd(2, 5), Hd(1, 3), Md(3, 12);
  for (int rep = 0; rep < 36; ++rep) {
    Shape s{rep % 3 != 0, Ld(g), Cd(g), Hd(g), (rep / 2) % 2 == 0};
    s.symmetric = s.factored && rep % 3 == 2;
    s.logit_scale = rep % 4 == 1 ? 2.5 : 1.0;
    const size_t M = Md(g);
    const auto tok = msa_test::random_tokens(g, M, s.L, s.C, 0.1);
    const auto w = msa_test::random_weights(g, M);
    auto th = msa_test::random_theta(g, s, 0.5);
    std::vector<double> grad(th.size());
    msa_ref::objective(s, th.data(), M, tok.data(), w.data(), 0.3, 1.7, grad.data());
    double worst = 0.0;
    for (size_t k = 0; k < th.size(); ++k) {
      const double x = th[k], eps = 1e-5;
      th[k] = x + eps;
      const double fp = msa_ref::objective(s, th.data(), M, tok.data(), w.data(), 0.3, 1.7, nullptr);
      th[k] = x - eps;
      const double fm = msa_ref::objective(s, th.data(), M, tok.data(), w.data(), 0.3, 1.7, nullptr);
      th[k] = x;
      worst = std::max(worst, std::fabs((fp - fm) / (2 * eps) - grad[k]));
    }
    INFO("L=" << s.L << " C=" << s.C << " H=" << s.H << " factored=" << s.factored << " fields=" << s.fields
              << " symmetric=" << s.symmetric << " scale=" << s.logit_scale);
    CHECK(worst < 1e-7);
  }
}

TEST_CASE("msa reference: couplings — factored J_ij = sum_h A_ij V, rows of A sum to one; Potts J_ji(b,a) = J_ij(a,b)") {
  std::mt19937_64 g(4);
  const Shape f{true, 5, 3, 2, true}, p{false, 5, 3, 0, false};
  const auto tf = msa_test::random_theta(g, f, 1.0), tp = msa_test::random_theta(g, p, 1.0);
  const auto A = msa_ref::attention(f, tf.data());
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 5; ++i) {
      double row = 0.0;
      for (int j = 0; j < 5; ++j) row += A[(h * 5 + i) * 5 + j];
      CHECK(row == doctest::Approx(1.0).epsilon(1e-15));
      CHECK(A[(h * 5 + i) * 5 + i] == 0.0);
    }
  const auto Jp = msa_ref::couplings(p, tp.data());
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j)
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) CHECK(Jp[msa_ref::jidx(p, i, j, a, b)] == Jp[msa_ref::jidx(p, j, i, b, a)]);
  CHECK(Jp[msa_ref::jidx(p, 0, 1, 1, 2)] == tp[1 * 3 + 2]);  // e_01 is the first block, e[a·C + b]
}
