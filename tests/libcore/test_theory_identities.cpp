// An identity of the theory (spec attention-paths.md §8 item 4) against its closed form: the entropy at the
// GP point. (The other identities of §8 are in test_paths.cpp, test_kernels.cpp and test_metrics.cpp.)
#include <doctest/doctest.h>

#include <vector>

#include "random_problem.hpp"

TEST_CASE("entropy at the GP point: 7 (H=2,2), 4 (H=2,1), 3 (one path); U_a = 1") {
  struct cfg {
    std::vector<uint32_t> h;
    double expect;
  } cfgs[] = {{{2, 2}, 7.0}, {{2, 1}, 4.0}, {{1, 1}, 3.0}};
  for (auto &c : cfgs) {
    random_problem rp(c.h, {10, 10, 10}, {1, 1, 1, 1}, AM_READOUT_LAST, 6, 4, 4, 41);
    am_theory *th = nullptr;
    REQUIRE(am_theory_create(nullptr, &th, &rp.arch, rp.P, rp.N0, rp.xi.data(), rp.y.data(), 0.5) == AM_OK);
    std::vector<double> U(am_theory_u_size(th));
    am_theory_gp_point(th, U.data());
    am_action a{sizeof(am_action)};
    REQUIRE(am_theory_action(nullptr, th, U.data(), &a, nullptr, nullptr) == AM_OK);
    CHECK(a.entropy == doctest::Approx(c.expect).epsilon(1e-14));
    CHECK(a.U_a == doctest::Approx(1.0).epsilon(1e-14));
    am_theory_destroy(&th);
  }
}
