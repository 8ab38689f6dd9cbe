// Gradient (spec §3.3) and exact Hessian (§3.4) of S_code against central finite differences, on random
// positive-definite U for L = 1, 2, 3 with unequal heads, widths and variances, and every readout.
//
// Tolerances: central differences with step h have truncation error O(h²·|S'''|) and round-off
// O(ε|S|/h); with h = 1e-5 relative to entries of size ~1 both are ~1e-10 — we allow 1e-6 relative
// to the largest entry, far above both and far below any formula error (which would be O(1)).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "random_problem.hpp"
#include "theory.hpp"

namespace {

void check_derivatives(random_problem &rp) {
  am_theory *th = nullptr;
  REQUIRE(am_theory_create(nullptr, &th, &rp.arch, rp.P, rp.N0, rp.xi.data(), rp.y.data(), 0.3) == AM_OK);
  const size_t n = am_theory_vech_size(th), nu = am_theory_u_size(th);
  std::vector<double> U = rp.random_u(th), G(nu), Hs(n * n), x(n), xp(n), Up(nu), Gp(nu), Gm(nu), gp(n), gm(n), g(n);
  am_action a{sizeof(am_action)};
  REQUIRE(am_theory_action(nullptr, th, U.data(), &a, G.data(), Hs.data()) == AM_OK);
  am::theory_u_to_vech(*th, U.data(), x.data());
  am::theory_u_to_vech(*th, G.data(), g.data());
  // vech gradient g_k = Tr(G E_k)
  {
    size_t k = 0;
    for (uint32_t l = 1; l <= rp.arch.layers; ++l) {
      const size_t d = am_arch_dim(&rp.arch, l);
      for (size_t j = 0; j < d; ++j)
        for (size_t i = 0; i <= j; ++i, ++k)
          if (i != j) g[k] *= 2;
    }
  }
  const double h = 1e-5;
  double gmax = 0, hmax = 0;
  for (double v : g) gmax = std::max(gmax, std::fabs(v));
  for (double v : Hs) hmax = std::max(hmax, std::fabs(v));
  for (size_t k = 0; k < n; ++k) {
    am_action ap{sizeof(am_action)}, am_{sizeof(am_action)};
    xp = x;
    xp[k] += h;
    am::theory_vech_to_u(*th, xp.data(), Up.data());
    REQUIRE(am_theory_action(nullptr, th, Up.data(), &ap, Gp.data(), nullptr) == AM_OK);
    am::theory_u_to_vech(*th, Gp.data(), gp.data());
    xp[k] -= 2 * h;
    am::theory_vech_to_u(*th, xp.data(), Up.data());
    REQUIRE(am_theory_action(nullptr, th, Up.data(), &am_, Gm.data(), nullptr) == AM_OK);
    am::theory_u_to_vech(*th, Gm.data(), gm.data());
    const double fd = (ap.S_code - am_.S_code) / (2 * h);
    CHECK(fd == doctest::Approx(g[k]).epsilon(1e-6).scale(gmax));
    // Hessian column k from the difference of vech gradients
    size_t r = 0;
    for (uint32_t l = 1; l <= rp.arch.layers; ++l) {
      const size_t d = am_arch_dim(&rp.arch, l);
      for (size_t j = 0; j < d; ++j)
        for (size_t i = 0; i <= j; ++i, ++r) {
          const double f = (i == j ? 1.0 : 2.0);
          const double col = f * (gp[r] - gm[r]) / (2 * h);
          CHECK(col == doctest::Approx(Hs[r + k * n]).epsilon(1e-6).scale(hmax));
        }
    }
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < i; ++j) CHECK(Hs[i + j * n] == doctest::Approx(Hs[j + i * n]).epsilon(1e-12).scale(hmax));
  am_theory_destroy(&th);
}

}  // namespace

TEST_CASE("derivatives: L = 1, three heads, last-token readout") {
  random_problem rp({3}, {4, 7}, {1.3, 0.7, 1.6}, AM_READOUT_LAST, 10, 5, 4, 11);
  check_derivatives(rp);
}

TEST_CASE("derivatives: L = 2, heads (2, 3), first-token readout") {
  random_problem rp({2, 3}, {3, 5, 8}, {0.9, 1.4, 0.6, 1.2}, AM_READOUT_FIRST, 12, 6, 5, 12);
  check_derivatives(rp);
}

TEST_CASE("derivatives: L = 3, heads (2, 1, 2), mean readout") {
  random_problem rp({2, 1, 2}, {6, 4, 9, 5}, {1.1, 0.8, 1.5, 0.7, 1.25}, AM_READOUT_MEAN, 14, 5, 6, 13);
  check_derivatives(rp);
}

TEST_CASE("derivatives: L = 3, heads (3, 2, 2), last readout") {
  random_problem rp({3, 2, 2}, {5, 7, 3, 6}, {0.6, 1.2, 0.9, 1.4, 0.8}, AM_READOUT_LAST, 9, 4, 4, 14);
  check_derivatives(rp);
}
