// Potts model: conditionals vs brute-force enumeration, sampler vs exact marginals, couplings.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "potts_model.h"
#include "test_host.hpp"

using namespace am::potts;

namespace {

// Exact Boltzmann weights of all C^L states (state index = Σ s_i C^i).
std::vector<double> exact_distribution(const Model &m) {
  size_t n = 1;
  for (int i = 0; i < m.L; ++i) n *= m.C;
  std::vector<double> p(n);
  std::vector<int32_t> s(m.L);
  double z = 0.0;
  for (size_t k = 0; k < n; ++k) {
    size_t t = k;
    for (int i = 0; i < m.L; ++i) {
      s[i] = (int32_t)(t % m.C);
      t /= m.C;
    }
    p[k] = std::exp(-m.beta * energy(m, s.data()));
    z += p[k];
  }
  for (auto &x : p) x /= z;
  return p;
}

size_t index_of(const int32_t *s, int L, int C) {
  size_t k = 0, f = 1;
  for (int i = 0; i < L; ++i) {
    k += f * s[i];
    f *= C;
  }
  return k;
}

}  // namespace

TEST_CASE("conditional equals brute-force enumeration (L=4, C=3)") {
  const Model m = potts_test::sinkhorn_model(4, 3, 1.7, 11);
  const auto p = exact_distribution(m);
  std::vector<int32_t> s(4);
  std::vector<double> logp(3);
  for (size_t k = 0; k < p.size(); ++k) {
    size_t t = k;
    for (int i = 0; i < 4; ++i) {
      s[i] = (int32_t)(t % 3);
      t /= 3;
    }
    for (int i = 0; i < 4; ++i) {
      log_conditional(m, s.data(), i, logp.data());
      std::vector<int32_t> r = s;
      double den = 0.0;
      for (int b = 0; b < 3; ++b) {
        r[i] = b;
        den += p[index_of(r.data(), 4, 3)];
      }
      for (int a = 0; a < 3; ++a) {
        r[i] = a;
        // both sides are exact; 1e-12 covers round-off of exp/log on O(1) numbers
        CHECK(std::exp(logp[a]) == doctest::Approx(p[index_of(r.data(), 4, 3)] / den).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("energy difference reproduces the conditional ratio") {
  // p(s_i=a|·)/p(s_i=b|·) = exp(-β(H(a) - H(b))) with the ½Σ_{i≠j} normalisation of spec §1.1
  const Model m = potts_test::sinkhorn_model(6, 4, 2.0, 5);
  std::vector<int32_t> s = {0, 1, 2, 3, 1, 0};
  std::vector<double> lp(4);
  log_conditional(m, s.data(), 2, lp.data());
  auto sa = s, sb = s;
  sa[2] = 3;
  sb[2] = 0;
  CHECK(lp[3] - lp[0] == doctest::Approx(-m.beta * (energy(m, sa.data()) - energy(m, sb.data()))).epsilon(1e-12));
}

TEST_CASE("Sinkhorn couplings: symmetric, zero diagonal, unit row sums") {
  am_rng rng;
  am_rng_init(&rng, 3, 0);
  std::vector<double> J;
  make_J_sinkhorn(20, &rng, J);
  double dev = 1.0;
  CHECK(row_sum_mean(J, 20, &dev) == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(dev < 1e-12);  // 2000 Sinkhorn iterations converge to machine precision (spec §1.3)
  for (int i = 0; i < 20; ++i) {
    CHECK(J[i + 20 * i] == 0.0);
    for (int j = 0; j < 20; ++j) CHECK(J[i + 20 * j] == J[j + 20 * i]);
  }
  std::vector<double> K;
  REQUIRE(make_J_kregular(20, 4, &rng, K));
  for (int i = 0; i < 20; ++i) {
    int deg = 0;
    for (int j = 0; j < 20; ++j) {
      CHECK(K[i + 20 * j] == K[j + 20 * i]);
      deg += K[i + 20 * j] > 0;
    }
    CHECK(deg == 4);
    CHECK(K[i + 20 * i] == 0.0);
  }
}

TEST_CASE("gauge: a column shift of U leaves every conditional unchanged") {
  Model m = potts_test::sinkhorn_model(5, 4, 2.0, 9);
  Model g = m;
  // U_ab → U_ab + c_b shifts every logit h_i(a) by β Σ_j J_ij c_{s_j}, independent of a (spec §1.2)
  const double c[4] = {0.3, -1.2, 2.0, 0.7};
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) g.U[a + 4 * b] = m.U[a + 4 * b] + c[b];
  std::vector<int32_t> s = {0, 3, 1, 2, 3};
  std::vector<double> l1(4), l2(4);
  for (int i = 0; i < 5; ++i) {
    log_conditional(m, s.data(), i, l1.data());
    log_conditional(g, s.data(), i, l2.data());
    for (int a = 0; a < 4; ++a) CHECK(l1[a] == doctest::Approx(l2[a]).epsilon(1e-12));
  }
}

TEST_CASE("sampler: marginals and pair correlations match exact enumeration (chi-square)") {
  const Model m = potts_test::sinkhorn_model(4, 3, 1.5, 21);
  const auto p = exact_distribution(m);
  const size_t M = 20000;
  am_rng rng;
  am_rng_init(&rng, 77, 0);
  SampleOptions o;
  o.burnin = 30;  // L=4 mixes in a few sweeps
  o.parallel = potts_test::host_threads(2);
  std::vector<int32_t> tok;
  REQUIRE(sample(nullptr, m, M, o, rng, tok) == AM_OK);
  // exact single-site and pair marginals
  std::vector<double> p1(4 * 3, 0.0), p2(4 * 4 * 9, 0.0);
  std::vector<int32_t> s(4);
  for (size_t k = 0; k < p.size(); ++k) {
    size_t t = k;
    for (int i = 0; i < 4; ++i) {
      s[i] = (int32_t)(t % 3);
      t /= 3;
    }
    for (int i = 0; i < 4; ++i) {
      p1[i * 3 + s[i]] += p[k];
      for (int j = i + 1; j < 4; ++j) p2[((i * 4 + j) * 9) + s[i] * 3 + s[j]] += p[k];
    }
  }
  std::vector<double> n1(4 * 3, 0.0), n2(4 * 4 * 9, 0.0);
  for (size_t mu = 0; mu < M; ++mu) {
    const int32_t *x = tok.data() + mu * 4;
    for (int i = 0; i < 4; ++i) {
      n1[i * 3 + x[i]] += 1;
      for (int j = i + 1; j < 4; ++j) n2[((i * 4 + j) * 9) + x[i] * 3 + x[j]] += 1;
    }
  }
  // Pearson χ² per table: each has (cells − 1) degrees of freedom; independent chains → exact multinomial.
  // Accept χ² < dof + 5·sqrt(2·dof) (a 5-sigma bound of the χ² distribution's normal approximation).
  for (int i = 0; i < 4; ++i) {
    double chi = 0.0;
    for (int a = 0; a < 3; ++a) {
      const double e = M * p1[i * 3 + a];
      chi += (n1[i * 3 + a] - e) * (n1[i * 3 + a] - e) / e;
    }
    CHECK(chi < 2 + 5 * std::sqrt(4.0));
  }
  for (int i = 0; i < 4; ++i)
    for (int j = i + 1; j < 4; ++j) {
      double chi = 0.0;
      for (int ab = 0; ab < 9; ++ab) {
        const double e = M * p2[(i * 4 + j) * 9 + ab];
        const double d = n2[(i * 4 + j) * 9 + ab] - e;
        chi += d * d / e;
      }
      CHECK(chi < 8 + 5 * std::sqrt(16.0));
    }
  // a wrong sampler (e.g. β ignored) would be far off: check the connected correlation is resolved
  double exact_c = p2[(0 * 4 + 1) * 9 + 0] - p1[0] * p1[3];
  double emp_c = n2[(0 * 4 + 1) * 9 + 0] / M - (n1[0] / M) * (n1[3] / M);
  CHECK(std::fabs(emp_c - exact_c) < 5 * std::sqrt(0.25 / M) + 1e-9);
}

TEST_CASE("sampler: single long chain with thinning matches exact marginals") {
  const Model m = potts_test::sinkhorn_model(4, 3, 1.5, 21);
  const auto p = exact_distribution(m);
  const size_t M = 20000;
  am_rng rng;
  am_rng_init(&rng, 78, 0);
  SampleOptions o;
  o.burnin = 30;
  o.thin = 3;
  std::vector<int32_t> tok;
  REQUIRE(sample(nullptr, m, M, o, rng, tok) == AM_OK);
  std::vector<double> p1(4 * 3, 0.0);
  std::vector<int32_t> s(4);
  for (size_t k = 0; k < p.size(); ++k) {
    size_t t = k;
    for (int i = 0; i < 4; ++i) {
      s[i] = (int32_t)(t % 3);
      t /= 3;
    }
    for (int i = 0; i < 4; ++i) p1[i * 3 + s[i]] += p[k];
  }
  for (int i = 0; i < 4; ++i)
    for (int a = 0; a < 3; ++a) {
      double n = 0;
      for (size_t mu = 0; mu < M; ++mu) n += tok[mu * 4 + i] == a;
      // thinned samples are nearly independent at L=4; allow 6 binomial sigmas (×√2 for residual correlation)
      CHECK(std::fabs(n / M - p1[i * 3 + a]) < 6 * std::sqrt(2 * p1[i * 3 + a] * (1 - p1[i * 3 + a]) / M));
    }
}

TEST_CASE("sampler output does not depend on the thread count") {
  const Model m = potts_test::sinkhorn_model(8, 5, 2.0, 4);
  am_rng rng;
  am_rng_init(&rng, 5, 1);
  SampleOptions o;
  o.burnin = 20;
  std::vector<int32_t> a, b;
  o.parallel = potts_test::host_threads(1);
  REQUIRE(sample(nullptr, m, 700, o, rng, a) == AM_OK);
  o.parallel = potts_test::host_threads(2);
  REQUIRE(sample(nullptr, m, 700, o, rng, b) == AM_OK);
  CHECK(a == b);
}

TEST_CASE("integrated autocorrelation time of an AR(1) series") {
  // x_t = φ x_{t-1} + noise has τ_int = (1+φ)/(1−φ) = 3 for φ = 0.5
  am_rng rng;
  am_rng_init(&rng, 8, 0);
  std::vector<double> x(200000);
  double v = 0.0;
  for (auto &y : x) y = v = 0.5 * v + am_rng_normal(&rng);
  // statistical error of τ with Sokal windowing ≈ τ·sqrt(2(2W+1)/n) ≈ 1%; allow 5%
  CHECK(tau_int(x.data(), x.size()) == doctest::Approx(3.0).epsilon(0.05));
}

TEST_CASE("equilibration report at beta=2 (spec recipe, L=C=10)") {
  const Model m = potts_test::sinkhorn_model(10, 10, 2.0, 1);
  EquilibrationOptions o;
  o.burnin = 100;
  o.chains = 1000;
  o.tau_chains = 2;
  o.tau_sweeps = 500;
  o.parallel = potts_test::host_threads(2);
  am_rng rng;
  am_rng_init(&rng, 12, 0);
  EquilibrationReport r;
  REQUIRE(equilibration_report(nullptr, m, o, rng, r) == AM_OK);
  CHECK(r.sweeps.front() == 0);
  CHECK(r.sweeps.back() == 200);
  // uniform start: conditional entropy is below log C and finite
  CHECK(r.cond_entropy.back() < std::log(10.0));
  // equilibrated at β=2: the B and 2B ensembles agree within 5 standard errors of their difference
  CHECK(std::fabs(r.entropy_diff) < 5 * r.entropy_diff_se);
  CHECK(r.entropy_diff_se > 0.0);
  CHECK(r.tau_int_energy >= 0.5);
  CHECK(r.max_site_freq < 1.0);
}
