// The factored model's block-streamed couplings (msa_model.cpp, 3.8): for every block size (1 site .. all L, so
// 1..L blocks dealt to up to 32 groups) the objective and gradient equal the slow reference (msa_reference.hpp,
// which builds the whole J) and central finite differences; the same bits on 1 and 2 threads whatever the split;
// pair_rows equals the symmetrised reference couplings; every block size within round-off of every other.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "msa_fixtures.hpp"
#include "msa_model.h"
#include "msa_reference.hpp"
#include "../potts/test_host.hpp"

using am::msa::MsaBatch;
using am::msa::MsaKind;
using am::msa::MsaModel;

namespace {

double max_abs(const std::vector<double> &v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

std::unique_ptr<MsaModel> factored(const msa_ref::Shape &s, size_t block) {
  auto m = std::make_unique<MsaModel>(MsaKind::Factored, s.L, s.C, s.H, s.fields);
  m->set_symmetric(s.symmetric);
  m->set_logit_scale(s.logit_scale);
  m->set_site_block(block);
  return m;
}

}  // namespace

TEST_CASE("streamed couplings: every block size gives the reference's objective and gradient") {
  // The reference sums the same O(M·L²) terms in another order (J whole, every conditional from scratch): as in
  // test_msa_model.cpp the objective agrees to 1e-12 relative (a few thousand ulps of an O(1) sum) and the
  // gradient to 1e-10 of its largest entry (sums of M·L residuals of O(1/N), cancelling to O(1/N)).
  std::mt19937_64 g(41);
  for (int rep = 0; rep < 16; ++rep) {
    std::uniform_int_distribution<int> Ld(3, 40), Cd(2, 21), Hd(1, 4);
    msa_ref::Shape s{true, Ld(g), Cd(g), Hd(g), rep % 2 == 0};
    s.symmetric = rep % 3 == 1;
    s.logit_scale = rep % 4 == 3 ? 2.5 : 1.0;
    const size_t M = 1 + (size_t)(rep * 7 % 30);
    const msa_test::RandomProblem rp(g, s, M);
    const auto &tok = rp.tok;
    const auto &w = rp.w;
    const auto &th = rp.th;
    const MsaBatch b{M, rp.tok.data(), rp.w.data()};
    std::vector<double> gr(th.size()), gb(th.size());
    const double fr = msa_ref::objective(s, th.data(), M, tok.data(), w.data(), 0.01, 16.0, gr.data());
    for (size_t block : {(size_t)1, (size_t)2, (size_t)3, (size_t)s.L / 2 + 1, (size_t)s.L}) {
      INFO("rep " << rep << ": L=" << s.L << " C=" << s.C << " H=" << s.H << " fields=" << s.fields
                  << " symmetric=" << s.symmetric << " M=" << M << " block=" << block);
      auto pm = factored(s, block);
      MsaModel &m = *pm;
      CHECK(m.site_block() == std::max<size_t>(1, std::min(block, (size_t)s.L)));
      const double fb = m.objective(th.data(), b, 0.01, 16.0, gb.data());
      CHECK(fb == doctest::Approx(fr).epsilon(1e-12));
      double err = 0.0;
      for (size_t k = 0; k < gb.size(); ++k) err = std::max(err, std::fabs(gb[k] - gr[k]));
      CHECK(err <= 1e-10 * max_abs(gr));
      CHECK(m.mean_nll(th.data(), b) ==
            doctest::Approx(msa_ref::mean_nll(s, th.data(), M, tok.data(), w.data())).epsilon(1e-12));
    }
  }
}

TEST_CASE("streamed couplings: the gradient equals central finite differences") {
  // Step 1e-4 on θ of O(0.5): the central difference's truncation error is h²/6·|f'''| ≲ 1e-8 (f''' is O(1) at
  // these logits) and its round-off ε·|f|/h ≈ 1e-12, so 1e-6 absolute leaves a wide margin over both.
  std::mt19937_64 g(42);
  for (int rep = 0; rep < 4; ++rep) {
    msa_ref::Shape s{true, 7 + rep, 3 + 2 * rep, 2, rep % 2 == 0};
    s.symmetric = rep >= 2;
    s.logit_scale = 1.5;
    const size_t M = 25;
    msa_test::RandomProblem rp(g, s, M);
    auto &th = rp.th;
    const MsaBatch b{M, rp.tok.data(), rp.w.data()};
    auto pm = factored(s, 2);
    MsaModel &m = *pm;
    std::vector<double> grad(th.size());
    m.objective(th.data(), b, 0.01, 16.0, grad.data());
    std::uniform_int_distribution<size_t> pick(0, th.size() - 1);
    const double h = 1e-4;
    for (int t = 0; t < 24; ++t) {
      const size_t k = t < 2 ? m.fields_size() + (size_t)t * (s.L + 1) : pick(g);  // W's diagonal: gradient 0
      const double x = th[k];
      th[k] = x + h;
      const double fp = m.objective(th.data(), b, 0.01, 16.0, nullptr);
      th[k] = x - h;
      const double fm = m.objective(th.data(), b, 0.01, 16.0, nullptr);
      th[k] = x;
      INFO("rep " << rep << " symmetric=" << s.symmetric << " k=" << k);
      CHECK(std::fabs((fp - fm) / (2 * h) - grad[k]) <= 1e-6);
    }
  }
}

TEST_CASE("streamed couplings: the same bits on 1 and 2 threads, 1..L blocks in up to 32 groups") {
  std::mt19937_64 g(43);
  for (int rep = 0; rep < 4; ++rep) {
    msa_ref::Shape s{true, rep < 2 ? 9 : 70, 21, 3, rep % 2 == 0};
    s.symmetric = rep == 1;
    const size_t M = 300;
    const msa_test::RandomProblem rp(g, s, M);
    const auto &th = rp.th;
    const MsaBatch b{M, rp.tok.data(), rp.w.data()};
    for (size_t block : {(size_t)1, (size_t)2, (size_t)0}) {
      INFO("rep " << rep << " L=" << s.L << " block=" << block);
      auto p1 = factored(s, block), p2 = factored(s, block);
      MsaModel &m1 = *p1, &m2 = *p2;
      m1.set_parallel(potts_test::host_threads(1));
      m2.set_parallel(potts_test::host_threads(2));
      std::vector<double> g1(th.size()), g2(th.size());
      const double f1 = m1.objective(th.data(), b, 0.01, 16.0, g1.data());
      const double f2 = m2.objective(th.data(), b, 0.01, 16.0, g2.data());
      CHECK(std::memcmp(&f1, &f2, sizeof f1) == 0);
      CHECK(std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(double)) == 0);
      const double n1 = m1.mean_nll(th.data(), b), n2 = m2.mean_nll(th.data(), b);
      CHECK(std::memcmp(&n1, &n2, sizeof n1) == 0);
    }
  }
}

TEST_CASE("streamed couplings: pair_rows gives the symmetrised couplings (J_ij(a,b) + J_ji(b,a))/2 row by row") {
  std::mt19937_64 g(44);
  for (int rep = 0; rep < 6; ++rep) {
    msa_ref::Shape s{true, 2 + rep * 3, 2 + rep * 3, 1 + rep % 3, rep % 2 == 0};
    s.symmetric = rep % 3 == 2;
    const auto th = msa_test::random_theta(g, s, 0.5);
    const auto Js = msa_ref::symmetrised(s, msa_ref::couplings(s, th.data()));
    auto pm = factored(s, 0);
    const auto rows = pm->pair_rows(th.data());
    std::vector<double> out((size_t)s.L * s.C * s.C);
    double err = 0.0;
    for (int i = 0; i < s.L; ++i) {
      rows(i, out.data());
      for (int j = i + 1; j < s.L; ++j)
        for (int a = 0; a < s.C; ++a)
          for (int c = 0; c < s.C; ++c)
            err = std::max(err, std::fabs(out[((size_t)(j - i - 1) * s.C + a) * s.C + c] -
                                          Js[msa_ref::jidx(s, i, j, a, c)]));
    }
    INFO("rep " << rep << " L=" << s.L << " C=" << s.C << " H=" << s.H << " symmetric=" << s.symmetric);
    CHECK(err <= 1e-13 * std::max(1.0, max_abs(Js)));  // sums of 2H products: round-off only
  }
}
