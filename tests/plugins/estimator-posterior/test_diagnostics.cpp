// R̂ and ESS on sequences with known answers.
#include "diagnostics.h"

#include <attnmech/rng.h>
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

using namespace am::posterior;

namespace {
// m chains of an AR(1) process x_t = ρ x_{t−1} + √(1−ρ²) ε_t started in stationarity.
Chains ar1(double rho, size_t m, size_t n, uint64_t seed, double shift_last = 0) {
  am_rng root;
  am_rng_init(&root, seed, 0);
  Chains c(m, std::vector<double>(n));
  for (size_t k = 0; k < m; ++k) {
    am_rng r;
    am_rng_split(&root, k, &r);
    double x = am_rng_normal(&r);
    for (size_t t = 0; t < n; ++t) {
      c[k][t] = x + (k + 1 == m ? shift_last : 0.0);
      x = rho * x + std::sqrt(1 - rho * rho) * am_rng_normal(&r);
    }
  }
  return c;
}
}  // namespace

TEST_CASE("ESS and R-hat of i.i.d. draws") {
  const Chains c = ar1(0.0, 4, 2000, 21);
  const Diagnostics d = diagnose(c);
  // ESS of 8000 independent draws: the estimator's relative spread is a few per cent
  CHECK(d.ess_bulk == doctest::Approx(8000).epsilon(0.1));
  CHECK(d.ess_mean == doctest::Approx(8000).epsilon(0.1));
  // split-R̂ of well-mixed chains: 1 + O(1/n)
  CHECK(d.rhat < 1.01);
  CHECK(d.rhat > 0.995);
  CHECK(d.mcse == doctest::Approx(d.sd / std::sqrt(d.ess_mean)).epsilon(1e-12));
}

TEST_CASE("ESS of AR(1) sequences: ESS/N = (1 − ρ)/(1 + ρ)") {
  for (double rho : {0.5, 0.9}) {
    CAPTURE(rho);
    const size_t m = 4, n = 10000;
    const Chains c = ar1(rho, m, n, 22);
    const double expected = (1 - rho) / (1 + rho) * m * n;
    const Diagnostics d = diagnose(c);
    // relative error of the Geyer estimate ~ √(2·τ·(lag window)/N): ~5 % for ρ = 0.5, ~12 % for ρ = 0.9
    const double tol = rho < 0.7 ? 0.1 : 0.2;
    CHECK(d.ess_mean == doctest::Approx(expected).epsilon(tol));
    CHECK(d.ess_bulk == doctest::Approx(expected).epsilon(tol));
    CHECK(ess_basic(c) == doctest::Approx(expected).epsilon(tol));
    CHECK(d.rhat < 1.01);
  }
}

TEST_CASE("R-hat flags a chain that sits elsewhere and split-R-hat a trend") {
  const Chains shifted = ar1(0.5, 4, 1000, 23, 1.0);
  CHECK(diagnose(shifted).rhat > 1.05);
  // a slow trend inside every chain: basic R̂ cannot see it, split-R̂ can
  Chains trend = ar1(0.0, 4, 1000, 24);
  for (auto &ch : trend)
    for (size_t t = 0; t < ch.size(); ++t) ch[t] += 2.0 * static_cast<double>(t) / ch.size();
  CHECK(rhat_basic(trend) < 1.01);
  CHECK(diagnose(trend).rhat > 1.05);
}

TEST_CASE("Rank normalisation: average ranks for ties, normal scores") {
  const Chains c = {{3.0, 1.0, 2.0}, {2.0, 5.0, 4.0}};
  const Chains z = rank_normalize(c);
  // S = 6; ranks: 1→1, 2→2.5 (tie), 3→4, 4→5, 5→6. z = Φ⁻¹((r − 3/8)/(S + 1/4))
  CHECK(z[0][2] == doctest::Approx(z[1][0]).epsilon(1e-15));
  // Φ⁻¹((2.5 − 0.375)/6.25) = Φ⁻¹(0.34) = −0.41246312 (standard normal table, 8 digits)
  CHECK(z[0][2] == doctest::Approx(-0.41246312).epsilon(1e-7));
  // Φ⁻¹((6 − 0.375)/6.25) = Φ⁻¹(0.9) = 1.2815515655
  CHECK(z[1][1] == doctest::Approx(1.2815515655).epsilon(1e-9));
  CHECK(z[0][1] == doctest::Approx(-1.2815515655).epsilon(1e-9));
}

TEST_CASE("Split chains drop the middle draw of odd-length chains") {
  const Chains s = split_chains({{1, 2, 3, 4, 5}});
  REQUIRE(s.size() == 2);
  CHECK(s[0] == std::vector<double>{1, 2});
  CHECK(s[1] == std::vector<double>{4, 5});
}

TEST_CASE("Undefined diagnostics are NaN, not garbage") {
  CHECK(std::isnan(diagnose({{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}).rhat));  // constant
  CHECK(std::isnan(diagnose({{1, 2, 3}}).ess_bulk));                    // too short
}

#include "posterior.h"

TEST_CASE("E-BFMI: 2 for independent energies, small for a slowly moving energy") {
  // i.i.d. E: E[(E_n − E_{n−1})²] = 2 Var E, so the ratio tends to 2 (±0.05 at n = 4000)
  const Chains iid = ar1(0.0, 1, 4000, 31);
  CHECK(e_bfmi(iid[0]) == doctest::Approx(2.0).epsilon(0.05));
  // AR(1) with ρ: ratio 2(1 − ρ) → 0.02 at ρ = 0.99 (warning threshold 0.3)
  const Chains slow = ar1(0.99, 1, 20000, 32);
  CHECK(e_bfmi(slow[0]) < 0.1);
  CHECK(std::isnan(e_bfmi({1.0, 2.0})));
}
