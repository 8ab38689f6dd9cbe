// MsaModel (msa_model.h, the fast loss and gradient of the alignment fit) against the slow reference
// (msa_reference.hpp) on random shapes: L 2..12, C 2..21, 1..5 heads, ~10 % missing tokens, random weights, fields
// on and off, both parametrisations (factored also symmetric and with a logit scale); the same bits on 1 and 2
// threads.
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

struct Case {
  msa_ref::Shape s;
  size_t M;
  std::vector<int32_t> tok;
  std::vector<double> w, th;
};

Case random_case(std::mt19937_64 &g, int rep) {
  std::uniform_int_distribution<int> Ld(2, 12), Cd(2, 21), Hd(1, 5), Md(1, 40);
  Case c;
  c.s = {rep % 3 != 0, Ld(g), Cd(g), Hd(g), (rep / 2) % 2 == 0};
  c.s.symmetric = c.s.factored && rep % 3 == 2;
  c.s.logit_scale = c.s.factored && rep % 4 == 1 ? 2.5 : 1.0;
  c.M = Md(g);
  c.tok = msa_test::random_tokens(g, c.M, c.s.L, c.s.C, 0.1);
  c.w = msa_test::random_weights(g, c.M);
  c.th = msa_test::random_theta(g, c.s, 0.5);
  return c;
}

std::unique_ptr<MsaModel> make_model(const msa_ref::Shape &s) {
  auto m = std::make_unique<MsaModel>(s.factored ? MsaKind::Factored : MsaKind::Potts, s.L, s.C, s.H, s.fields);
  m->set_symmetric(s.symmetric);
  m->set_logit_scale(s.logit_scale);
  return m;
}

double max_abs(const std::vector<double> &v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

}  // namespace

TEST_CASE("MsaModel: objective, gradient, couplings and attention equal the slow reference on random shapes") {
  // Both sum the same O(M·L²) terms in different orders: the objective agrees to a few ulps of its O(1) value
  // (1e-12 relative leaves 1e4 ulps), the gradient to round-off relative to its largest entry (1e-10 of max|g|).
  std::mt19937_64 g(11);
  for (int rep = 0; rep < 48; ++rep) {
    Case c = random_case(g, rep);
    const auto &s = c.s;
    INFO("rep " << rep << ": L=" << s.L << " C=" << s.C << " H=" << s.H << " factored=" << s.factored
                << " fields=" << s.fields << " symmetric=" << s.symmetric << " scale=" << s.logit_scale << " M=" << c.M);
    auto pm = make_model(s);
    MsaModel &m = *pm;
    REQUIRE(m.n_params() == msa_ref::n_params(s));
    CHECK(m.fields_size() == msa_ref::fields_size(s));
    const MsaBatch b{c.M, c.tok.data(), c.w.data()};
    std::vector<double> gf(c.th.size()), gr(c.th.size());
    const double ff = m.objective(c.th.data(), b, 0.01, 16.0, gf.data());
    const double fr = msa_ref::objective(s, c.th.data(), c.M, c.tok.data(), c.w.data(), 0.01, 16.0, gr.data());
    CHECK(ff == doctest::Approx(fr).epsilon(1e-12));
    CHECK(m.objective(c.th.data(), b, 0.01, 16.0, nullptr) == doctest::Approx(fr).epsilon(1e-12));
    double err = 0.0;
    for (size_t k = 0; k < gf.size(); ++k) err = std::max(err, std::fabs(gf[k] - gr[k]));
    CHECK(err <= 1e-10 * max_abs(gr));
    CHECK(m.mean_nll(c.th.data(), b) ==
          doctest::Approx(msa_ref::mean_nll(s, c.th.data(), c.M, c.tok.data(), c.w.data())).epsilon(1e-12));
    const auto Jr = msa_ref::couplings(s, c.th.data());
    std::vector<double> J(Jr.size());
    m.couplings(c.th.data(), J.data());
    double ej = 0.0;
    for (size_t k = 0; k < J.size(); ++k) ej = std::max(ej, std::fabs(J[k] - Jr[k]));
    CHECK(ej <= 1e-13 * std::max(1.0, max_abs(Jr)));  // a sum of H products: round-off only
    if (s.factored) {
      const auto Ar = msa_ref::attention(s, c.th.data());
      std::vector<double> A(Ar.size());
      m.attention(c.th.data(), A.data());
      double ea = 0.0;
      for (size_t k = 0; k < A.size(); ++k) ea = std::max(ea, std::fabs(A[k] - Ar[k]));
      CHECK(ea <= 1e-14);  // softmax entries in [0, 1]
    }
  }
}

TEST_CASE("MsaModel: no weights means weights 1") {
  std::mt19937_64 g(12);
  Case c = random_case(g, 0);
  auto pm = make_model(c.s);
  MsaModel &m = *pm;
  const std::vector<double> ones(c.M, 1.0);
  const MsaBatch none{c.M, c.tok.data(), nullptr}, one{c.M, c.tok.data(), ones.data()};
  CHECK(m.objective(c.th.data(), none, 0.01, 16.0, nullptr) == m.objective(c.th.data(), one, 0.01, 16.0, nullptr));
}

TEST_CASE("MsaModel: the same bits on 1 and 2 threads") {
  // M = 1100 spans several blocks of sequences, so the 2-thread run really splits the sum.
  std::mt19937_64 g(13);
  for (int rep = 0; rep < 4; ++rep) {
    msa_ref::Shape s{rep % 2 == 0, 9, 21, 3, rep < 2};
    s.symmetric = rep == 2;
    const size_t M = 1100;
    const msa_test::RandomProblem rp(g, s, M);
    const auto &th = rp.th;
    const MsaBatch b{M, rp.tok.data(), rp.w.data()};
    std::vector<double> g1(th.size()), g2(th.size());
    auto p1 = make_model(s), p2 = make_model(s);
    MsaModel &m1 = *p1, &m2 = *p2;
    m1.set_parallel(potts_test::host_threads(1));
    m2.set_parallel(potts_test::host_threads(2));
    const double f1 = m1.objective(th.data(), b, 0.01, 16.0, g1.data());
    const double f2 = m2.objective(th.data(), b, 0.01, 16.0, g2.data());
    CHECK(std::memcmp(&f1, &f2, sizeof f1) == 0);
    CHECK(std::memcmp(g1.data(), g2.data(), g1.size() * sizeof(double)) == 0);
  }
}

TEST_CASE("MsaModel: init — zero-sum fields from the weighted counts, W = 0, e = 0, V drawn at init_scale") {
  std::mt19937_64 g(14);
  for (bool factored : {true, false}) {
    const msa_ref::Shape s{factored, 6, 5, 2, true};
    const size_t M = 50;
    const auto tok = msa_test::random_tokens(g, M, s.L, s.C, 0.1);
    const auto w = msa_test::random_weights(g, M);
    auto pm = make_model(s);
    MsaModel &m = *pm;
    std::vector<double> th(m.n_params(), 7.0);
    am_rng rng;
    am_rng_init(&rng, 5, 0);
    m.init(th.data(), MsaBatch{M, tok.data(), w.data()}, rng, 1e-2);
    // plmc's start: log(f_i(a)·Neff + 1), f_i the weighted frequencies among site i's present tokens, Neff = Σ w
    std::vector<double> n((size_t)s.L * s.C, 0.0), tot(s.L, 0.0);
    double neff = 0.0;
    for (size_t mu = 0; mu < M; ++mu) {
      neff += w[mu];
      for (int i = 0; i < s.L; ++i)
        if (tok[mu * s.L + i] >= 0) n[(size_t)i * s.C + tok[mu * s.L + i]] += w[mu], tot[i] += w[mu];
    }
    for (int i = 0; i < s.L; ++i) {
      double sum = 0.0;
      for (int a = 0; a < s.C; ++a) sum += th[(size_t)i * s.C + a];
      CHECK(std::fabs(sum) < 1e-12);
      const double h0 = std::log(n[(size_t)i * s.C] / tot[i] * neff + 1);
      for (int a = 1; a < s.C; ++a)  // up to the constant the zero-sum removes
        CHECK(th[(size_t)i * s.C + a] - th[(size_t)i * s.C] ==
              doctest::Approx(std::log(n[(size_t)i * s.C + a] / tot[i] * neff + 1) - h0).epsilon(1e-12));
    }
    if (!factored) {
      CHECK(max_abs(std::vector<double>(th.begin() + m.fields_size(), th.end())) == 0.0);
      continue;
    }
    for (int h = 0; h < s.H; ++h)
      for (int k = 0; k < s.L * s.L; ++k) CHECK(th[msa_ref::w_offset(s, h) + k] == 0.0);
    const std::vector<double> V(th.begin() + msa_ref::v_offset(s, 0), th.end());
    CHECK(max_abs(V) > 0.0);
    CHECK(max_abs(V) < 0.1);  // 50 draws of N(0, 1e-4): beyond 10 σ has probability ~1e-21
  }
}

namespace {

// Tokens where each sequence copies most of the previous one (as in an alignment), so the plan's chain has
// short differences; a fraction `fresh` of the sites is redrawn (missing included).
std::vector<int32_t> related_tokens(std::mt19937_64 &g, size_t M, int L, int C, double fresh) {
  auto tok = msa_test::random_tokens(g, M, L, C, 0.1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (size_t mu = 1; mu < M; ++mu)
    for (int i = 0; i < L; ++i)
      if (u(g) > fresh) tok[mu * L + i] = tok[(mu - 1) * L + i];
  // Shuffle the rows, so the neighbours are not next to each other in the input and the plan has to find them.
  std::vector<size_t> perm(M);
  for (size_t k = 0; k < M; ++k) perm[k] = k;
  std::shuffle(perm.begin(), perm.end(), g);
  std::vector<int32_t> out(tok.size());
  for (size_t k = 0; k < M; ++k) std::copy_n(tok.data() + perm[k] * L, L, out.data() + k * L);
  return out;
}

}  // namespace

TEST_CASE("make_msa_plan: a permutation, the changed sites exactly, and the same plan for any thread count") {
  std::mt19937_64 g(21);
  const size_t M = 300;
  const int L = 17;
  const auto tok = related_tokens(g, M, L, 5, 0.3);
  const auto plan1 = am::msa::make_msa_plan(tok.data(), M, L, nullptr, 128);  // windows of 128: three of them
  const auto plan2 = am::msa::make_msa_plan(tok.data(), M, L, potts_test::host_threads(2), 128);
  CHECK(plan1.order == plan2.order);
  CHECK(plan1.diff_site == plan2.diff_site);
  std::vector<size_t> sorted = plan1.order;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < M; ++k) CHECK(sorted[k] == k);
  REQUIRE(plan1.diff_begin.size() == M + 1);
  for (size_t k = 1; k < M; ++k) {
    std::vector<int> want;
    for (int j = 0; j < L; ++j)
      if (tok[plan1.order[k - 1] * L + j] != tok[plan1.order[k] * L + j]) want.push_back(j);
    const std::vector<int> got(plan1.diff_site.begin() + plan1.diff_begin[k],
                               plan1.diff_site.begin() + plan1.diff_begin[k + 1]);
    CHECK(got == want);
  }
  // Within a window the chain goes to a nearest unvisited sequence: never farther than the next one in the
  // input order would be from the same place, summed over the chain it beats the input order.
  size_t chain = 0, input = 0;
  for (size_t k = 1; k < M; ++k) {
    chain += plan1.diff_begin[k + 1] - plan1.diff_begin[k];
    for (int j = 0; j < L; ++j) input += tok[(k - 1) * L + j] != tok[k * L + j];
  }
  CHECK(chain <= input);
}

TEST_CASE("MsaModel with a visiting plan: the same objective and gradient as without it and as the reference") {
  // The plan changes the order of the additions only (previous logits + changed rows; prefix sums of the
  // residuals), and a full gather every 64 visits bounds the drift: the same tolerances as the reference test.
  std::mt19937_64 g(22);
  for (int rep = 0; rep < 12; ++rep) {
    msa_ref::Shape s{rep % 3 != 0, 3 + rep % 7, 2 + (rep * 5) % 20, 1 + rep % 4, rep % 2 == 0};
    s.symmetric = s.factored && rep % 4 == 1;
    const size_t M = 20 + (size_t)rep * 17;  // up to 207 sequences: several blocks of 64 visits
    const auto tok = related_tokens(g, M, s.L, s.C, 0.25);
    const auto w = msa_test::random_weights(g, M);
    const auto th = msa_test::random_theta(g, s, 0.5);
    INFO("rep " << rep << ": L=" << s.L << " C=" << s.C << " H=" << s.H << " factored=" << s.factored << " M=" << M);
    const auto plan = am::msa::make_msa_plan(tok.data(), M, s.L, nullptr);
    const MsaBatch plain{M, tok.data(), w.data()}, planned{M, tok.data(), w.data(), &plan};
    auto pm = make_model(s);
    std::vector<double> g0(th.size()), g1(th.size()), gr(th.size());
    const double f0 = pm->objective(th.data(), plain, 0.01, 16.0, g0.data());
    const double f1 = pm->objective(th.data(), planned, 0.01, 16.0, g1.data());
    const double fr = msa_ref::objective(s, th.data(), M, tok.data(), w.data(), 0.01, 16.0, gr.data());
    CHECK(f1 == doctest::Approx(f0).epsilon(1e-12));
    CHECK(f1 == doctest::Approx(fr).epsilon(1e-12));
    double e0 = 0.0, er = 0.0;
    for (size_t k = 0; k < th.size(); ++k) {
      e0 = std::max(e0, std::fabs(g1[k] - g0[k]));
      er = std::max(er, std::fabs(g1[k] - gr[k]));
    }
    CHECK(e0 <= 1e-10 * max_abs(g0));
    CHECK(er <= 1e-10 * max_abs(gr));
    CHECK(pm->mean_nll(th.data(), planned) == doctest::Approx(pm->mean_nll(th.data(), plain)).epsilon(1e-12));
    // Same bits on two threads with the plan (sites are owned by workers).
    auto p2 = make_model(s);
    p2->set_parallel(potts_test::host_threads(2));
    std::vector<double> g2(th.size());
    CHECK(p2->objective(th.data(), planned, 0.01, 16.0, g2.data()) == f1);
    CHECK(std::memcmp(g1.data(), g2.data(), sizeof(double) * g1.size()) == 0);
  }
}
