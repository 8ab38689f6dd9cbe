// Replica theory of the learning curve (spec potts.md §4): the §4.5 reference table, limits,
// closed forms and the agreement of the two saddle-point solvers.
#include <doctest/doctest.h>

#include "replica.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace am::replica;

namespace {

const double kAlphas[13] = {0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.5, 2, 3, 5, 10, 20};
const double kLambdas[5] = {1e-3, 1e-2, 1e-1, 1, 10};
// Spec §4.5, model R1, nu = 3 (independent Python implementation, 4 decimals).
const double kTable[5][13] = {
    {0.4174, 0.4890, 0.7045, 1.3067, 2.4299, 3.2319, 2.4387, 0.9663, 0.6589, 0.4978, 0.4159, 0.3701, 0.3508},
    {0.4171, 0.4864, 0.6731, 0.9881, 1.1488, 1.1593, 1.0978, 0.7829, 0.6040, 0.4804, 0.4096, 0.3678, 0.3498},
    {0.4148, 0.4654, 0.5292, 0.5439, 0.5353, 0.5263, 0.5164, 0.4784, 0.4447, 0.4078, 0.3779, 0.3560, 0.3454},
    {0.4001, 0.4016, 0.3924, 0.3848, 0.3815, 0.3796, 0.3780, 0.3731, 0.3693, 0.3652, 0.3616, 0.3587, 0.3572},
    {0.3818, 0.3797, 0.3787, 0.3783, 0.3782, 0.3781, 0.3780, 0.3779, 0.3777, 0.3776, 0.3775, 0.3775, 0.3774}};
const double kRidgeless[13] = {0.4174, 0.4893, 0.7085, 1.3726, 3.3712, INFINITY, 3.6667,
                               1.0000, 0.6667, 0.5000, 0.4167, 0.3704, 0.3509};
const double kOptEps[13] = {0.3810, 0.3797, 0.3777, 0.3759, 0.3749, 0.3743, 0.3737,
                            0.3714, 0.3690, 0.3651, 0.3595, 0.3517, 0.3451};
const double kOptLambda[13] = {22.6, 9.13, 4.65, 3.15, 2.65, 2.39, 2.19, 1.64, 1.25, 0.863, 0.542, 0.289, 0.153};

// The table is printed to 4 decimals: |computed - printed| <= 5e-5 + round-off; 1e-4 is the brief's bound.
constexpr double kTableTol = 1e-4;

std::string sig3(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// Independent quadrature of the semicircle: e = 2 cos(theta), rho_sc(e) de = (2/pi) sin^2(theta) dtheta.
template <class F>
double semicircle_avg(F f) {
  const int n = 4000;  // midpoint rule on a smooth periodic integrand: spectrally accurate
  double s = 0;
  for (int k = 0; k < n; ++k) {
    const double th = M_PI * (k + 0.5) / n;
    s += std::sin(th) * std::sin(th) * f(2.0 * std::cos(th));
  }
  return s * 2.0 / n;
}

}  // namespace

TEST_CASE("R1 check values of spec 4.3 at nu = 3") {
  // g(3) = 2/(3 + sqrt 5) = 0.381966..., printed to 6 digits in the spec.
  CHECK(semicircle_g(3.0) == doctest::Approx(0.381966).epsilon(2e-6));
  CHECK(semicircle_g(3.0) == doctest::Approx(2.0 / (3.0 + std::sqrt(5.0))).epsilon(1e-15));
  CHECK(r1_rho(3.0) == doctest::Approx(0.0486327).epsilon(2e-6));  // printed to 6 significant digits
  auto sp = make_r1(3.0);
  CHECK(sp->sigma2() == doctest::Approx(1.0 / 3.0).epsilon(1e-15));
  CHECK(sp->rho() == doctest::Approx(r1_rho(3.0)).epsilon(1e-15));
  // g satisfies g^2 - z g + 1 = 0 and g' = -g/sqrt(z^2-4): compare with a central difference.
  for (double z : {2.5, 3.0, 7.0}) {
    const double g = semicircle_g(z);
    CHECK(g * g - z * g + 1.0 == doctest::Approx(0.0).epsilon(1e-14));
    const double h = 1e-5;
    const double fd = (semicircle_g(z + h) - semicircle_g(z - h)) / (2 * h);
    CHECK(semicircle_gprime(z) == doctest::Approx(fd).epsilon(1e-8));  // O(h^2) truncation
  }
}

TEST_CASE("R1 spectral functions: closed forms against quadrature and finite differences") {
  for (double nu : {2.3, 3.0, 5.0}) {
    auto sp = make_r1(nu);
    for (double k : {0.0, 1e-3, 0.37, 2.0, 40.0}) {
      const SpectralValues v = sp->eval(k);
      // tau1 = int rho/(1 + k(nu-e)), tau2 = int rho/(1 + k(nu-e))^2 by quadrature (accurate ~1e-13).
      const double q1 = semicircle_avg([&](double e) { return 1.0 / (1.0 + k * (nu - e)); });
      const double q2 = semicircle_avg([&](double e) { return 1.0 / ((1.0 + k * (nu - e)) * (1.0 + k * (nu - e))); });
      CHECK(v.tau1 == doctest::Approx(q1).epsilon(1e-11));
      CHECK(v.tau2 == doctest::Approx(q2).epsilon(1e-11));
      CHECK(sp->tau1(k) == doctest::Approx(v.tau1).epsilon(1e-15));
      // B = -h'/nu^2 with h = a/(1 - k a/nu): central difference of h (spec's suggested step; ~1e-8).
      const double hstep = 1e-5 * std::max(k, 1e-3);
      auto hfun = [&](double t) {
        const double a = r1_a(nu, t);
        return a / (1.0 - t * a / nu);
      };
      if (k > 0) {
        const double hp = (hfun(k + hstep) - hfun(k - hstep)) / (2 * hstep);
        CHECK(v.B == doctest::Approx(-hp / (nu * nu)).epsilon(1e-7));
        // tau2 = d/dk [k a(k)]
        const double d = (( k + hstep) * r1_a(nu, k + hstep) - (k - hstep) * r1_a(nu, k - hstep)) / (2 * hstep);
        CHECK(v.tau2 == doctest::Approx(d).epsilon(1e-7));
      }
      // Identity used in the 1-D form: rho - 2 T1 + T2 = k^2 B. The left side cancels terms of size ~1 down to
      // k^2 B (3.5e-7 at k = 1e-3): its float error is a few ulp of |rho| + 2|T1| + |T2| (each from a closed form
      // good to ~4 ε, then 2 additions), not of the result; 1e-10 relative covers the rest (B's own error).
      const double terms = std::fabs(sp->rho()) + 2 * std::fabs(v.T1) + std::fabs(v.T2);
      CHECK(std::fabs(sp->rho() - 2 * v.T1 + v.T2 - k * k * v.B) <=
            8 * DBL_EPSILON * terms + 1e-10 * std::fabs(k * k * v.B));
    }
    // kappa = 0: a = tau2 = 1, B(0) = w' P w = (nu - 1/nu)/nu^2.
    const SpectralValues v0 = sp->eval(0.0);
    CHECK(v0.tau1 == doctest::Approx(1.0).epsilon(1e-15));
    CHECK(v0.tau2 == doctest::Approx(1.0).epsilon(1e-15));
    CHECK(v0.B == doctest::Approx((nu - 1.0 / nu) / (nu * nu)).epsilon(1e-14));
    CHECK(v0.T1 == doctest::Approx(sp->rho()).epsilon(1e-15));
  }
}

TEST_CASE("spec 4.5: epsilon(alpha, lambda) table, model R1, nu = 3") {
  auto sp = make_r1(3.0);
  SaddleOptions o;  // method auto
  for (int il = 0; il < 5; ++il)
    for (int ia = 0; ia < 13; ++ia) {
      CAPTURE(kLambdas[il]);
      CAPTURE(kAlphas[ia]);
      const SaddleResult r = solve(*sp, kAlphas[ia], kLambdas[il], o);
      CHECK(r.converged);
      CHECK(std::fabs(r.eps - kTable[il][ia]) <= kTableTol);
    }
}

TEST_CASE("spec 4.5: ridgeless row (lambda -> 0+) and its limits") {
  auto sp = make_r1(3.0);
  SaddleOptions o;
  const double nu = 3.0;
  for (int ia = 0; ia < 13; ++ia) {
    CAPTURE(kAlphas[ia]);
    const double a = kAlphas[ia];
    const SaddleResult r = solve(*sp, a, 0.0, o);
    if (a == 1.0) {
      CHECK(std::isinf(r.eps));  // the interpolation threshold
      continue;
    }
    CHECK(std::fabs(r.eps - kRidgeless[ia]) <= kTableTol);
    if (a > 1) CHECK(r.eps == doctest::Approx(a / (nu * (a - 1))).epsilon(1e-13));  // closed limit 4.3
    // Continuity: lambda = 1e-9 is within O(sqrt(lambda)) of the limit away from alpha = 1.
    const SaddleResult rs = solve(*sp, a, 1e-9, o);
    CHECK(rs.eps == doctest::Approx(r.eps).epsilon(1e-5));
  }
  // alpha < 1: kappa_0 solves a(kappa) = alpha; for the semicircle, with g = alpha k and
  // z = g + 1/g: alpha k^2 - nu k + (1/alpha - 1) = 0 (independent closed form).
  for (double a : {0.1, 0.5, 0.9, 0.999}) {
    const double k0 = kappa0(*sp, a);
    const double closed = (nu - std::sqrt(nu * nu - 4.0 * (1.0 - a))) / (2.0 * a);
    CHECK(k0 == doctest::Approx(closed).epsilon(1e-12));
  }
}

TEST_CASE("spec 4.5: optimal lambda per alpha") {
  auto sp = make_r1(3.0);
  SaddleOptions o;
  for (int ia = 0; ia < 13; ++ia) {
    CAPTURE(kAlphas[ia]);
    const Optimum q = optimal_lambda(*sp, kAlphas[ia], o);
    CHECK(std::fabs(q.eps - kOptEps[ia]) <= kTableTol);
    CHECK(sig3(q.lambda) == sig3(kOptLambda[ia]));  // 3 significant figures as printed
    // It is a minimum: a factor 1.1 either side does not do better.
    CHECK(solve(*sp, kAlphas[ia], q.lambda * 1.1, o).eps >= q.eps);
    CHECK(solve(*sp, kAlphas[ia], q.lambda / 1.1, o).eps >= q.eps);
  }
}

TEST_CASE("spec 4.5: interpolation peaks and RS order parameters") {
  auto sp = make_r1(3.0);
  SaddleOptions o;
  struct {
    double lambda, alpha, eps;
    double atol, etol;  // half a unit of the last printed digit
  } peaks[] = {{1e-4, 0.9996, 9.810, 5e-5, 5e-4},  {1e-3, 0.9960, 3.234, 5e-5, 5e-4}, {1e-2, 0.961, 1.166, 5e-4, 5e-4},
               {3e-2, 0.890, 0.772, 5e-4, 5e-4}, {0.1, 0.703, 0.5445, 5e-4, 5e-5},  {0.3, 0.431, 0.446, 5e-4, 5e-4}};
  for (const auto &p : peaks) {
    CAPTURE(p.lambda);
    const Peak pk = find_peak(*sp, p.lambda, o, 0.3, 3.0);
    CHECK(pk.interior);
    CHECK(std::fabs(pk.alpha - p.alpha) <= p.atol + 1e-9);
    CHECK(std::fabs(pk.eps - p.eps) <= p.etol + 1e-9);
  }
  // lambda -> 0+: the peak is the divergence at alpha = 1.
  const Peak p0 = find_peak(*sp, 0.0, o, 0.3, 3.0);
  CHECK(p0.alpha == 1.0);
  CHECK(std::isinf(p0.eps));
  // Large lambda removes the peak: eps decreases on [0.3, 3], the maximum is at the left edge.
  const Peak p10 = find_peak(*sp, 10.0, o, 0.3, 3.0);
  CHECK_FALSE(p10.interior);
  CHECK(p10.alpha == doctest::Approx(0.3).epsilon(1e-12));
  // Fixed points printed in 4.5 (5 significant digits).
  struct {
    double lambda, alpha, V, m, q, kappa;
  } fps[] = {{0.01, 0.5, 36.436, 0.02708, 0.34528, 0.37436},
             {0.1, 2.0, 0.5303, 0.03642, 0.13556, 0.15303},
             {1.0, 4.0, 0.0682, 0.01526, 0.01153, 1.06825}};
  for (const auto &f : fps) {
    CAPTURE(f.lambda);
    CAPTURE(f.alpha);
    const SaddleResult r = solve_fixed_point(*sp, f.alpha, f.lambda, o);
    REQUIRE(r.converged);
    CHECK(r.V == doctest::Approx(f.V).epsilon(2e-3));  // printed with 3-5 digits
    CHECK(r.m == doctest::Approx(f.m).epsilon(2e-4));
    CHECK(r.q == doctest::Approx(f.q).epsilon(2e-4));
    CHECK(r.kappa == doctest::Approx(f.kappa).epsilon(2e-5));
  }
}

TEST_CASE("fixed point and 1-D root form agree to 1e-10") {
  for (double nu : {2.5, 3.0, 6.0}) {
    auto sp = make_r1(nu);
    SaddleOptions o;
    o.max_iter = 100000;
    for (double lam : {1e-3, 1e-2, 0.1, 1.0, 10.0})
      for (double a : kAlphas) {
        CAPTURE(nu);
        CAPTURE(lam);
        CAPTURE(a);
        const SaddleResult f = solve_fixed_point(*sp, a, lam, o);
        const SaddleResult r = solve_root(*sp, a, lam, o);
        REQUIRE(f.converged);
        CHECK(std::fabs(f.eps - r.eps) <= 1e-10);
        CHECK(std::fabs(f.kappa - r.kappa) <= 1e-10 * (1 + r.kappa));
        CHECK(std::fabs(f.m - r.m) <= 1e-10);
        CHECK(std::fabs(f.q - r.q) <= 1e-10);
        CHECK(std::fabs(f.V - r.V) <= 1e-9 * (1 + r.V));
      }
  }
}

TEST_CASE("auto method switches to the 1-D form where the fixed point is slow") {
  auto sp = make_r1(3.0);
  SaddleOptions o;
  o.max_iter = 300;  // lambda = 1e-4 at alpha = 1 needs thousands of damped iterations
  const SaddleResult r = solve(*sp, 1.0, 1e-4, o);
  CHECK(r.used_root);
  CHECK(r.converged);
  const SaddleResult fast = solve(*sp, 3.0, 1.0, o);
  CHECK_FALSE(fast.used_root);
  o.method = Method::FixedPoint;
  CHECK_THROWS_AS(solve(*sp, 1.0, 1e-4, o), Error);
}

TEST_CASE("R2: closed form of spec 4.4 against the general solver") {
  for (double rho : {1.0, 0.3})
    for (double s2 : {0.25, 1.0}) {
      auto sp = make_r2(rho, s2);
      // The same model through the finite-matrix path: Sigma = 1 (p = 7), isotropic teacher.
      std::vector<double> I(49, 0.0);
      for (int i = 0; i < 7; ++i) I[i * 8] = 1.0;
      auto sd = make_discrete(measure_from_sigma(I.data(), 7, rho, s2));
      SaddleOptions o;
      for (double lam : {1e-3, 0.01, 0.1, 1.0, 5.0})
        for (double a : {0.2, 0.5, 0.99, 1.0, 1.25, 3.0, 10.0}) {
          CAPTURE(lam);
          CAPTURE(a);
          const double b = a - 1.0 - lam * a;
          const double kappa = (-b + std::sqrt(b * b + 4.0 * a * a * lam)) / (2.0 * a);
          const double eps = (s2 + rho * kappa * kappa / ((1 + kappa) * (1 + kappa))) /
                             (1.0 - 1.0 / (a * (1 + kappa) * (1 + kappa)));
          const SaddleResult r = solve_root(*sp, a, lam, o);
          CHECK(r.kappa == doctest::Approx(kappa).epsilon(1e-12));
          CHECK(r.eps == doctest::Approx(eps).epsilon(1e-12));
          SaddleOptions fo = o;
          fo.max_iter = 100000;
          CHECK(solve_fixed_point(*sp, a, lam, fo).eps == doctest::Approx(eps).epsilon(1e-10));
          CHECK(solve(*sd, a, lam, o).eps == doctest::Approx(eps).epsilon(1e-11));
        }
      for (double a : {0.3, 1.0, 4.0}) {
        const Optimum q = optimal_lambda(*sp, a, SaddleOptions{});
        CHECK(q.lambda == doctest::Approx(s2 / (a * rho)).epsilon(1e-6));  // Brent in log lambda, xtol 1e-10
      }
    }
}

TEST_CASE("finite J: spectral functions approach the semicircle closed form") {
  // Draw an R1 coupling matrix at L = 160 and average the finite spectral functions over 40 sites.
  const std::size_t L = 160;
  std::vector<double> J(L * L);
  am_rng rng;
  am_rng_init(&rng, 12345, 0);
  draw_r1_J(L, &rng, J.data());
  const double nu = 3.0;
  auto fin = make_discrete(finite_measure_from_J(J.data(), L, nu, 40));
  auto r1 = make_r1(nu);
  CHECK(fin->sigma2() == doctest::Approx(1.0 / nu).epsilon(1e-14));  // zero diagonal: K_ii = nu
  // Finite-L fluctuations are O(1/sqrt(L)) ~ 8% for teacher quantities, O(1/L) for traces.
  CHECK(fin->rho() == doctest::Approx(r1->rho()).epsilon(0.08));
  for (double k : {0.05, 0.5, 3.0}) {
    const SpectralValues a = fin->eval(k), b = r1->eval(k);
    CHECK(a.tau1 == doctest::Approx(b.tau1).epsilon(0.02));
    CHECK(a.tau2 == doctest::Approx(b.tau2).epsilon(0.02));
    CHECK(a.B == doctest::Approx(b.B).epsilon(0.08));
    CHECK(a.T1 == doctest::Approx(b.T1).epsilon(0.08));
  }
  for (double a : {0.5, 2.0}) CHECK(solve(*fin, a, 0.1, {}).eps == doctest::Approx(solve(*r1, a, 0.1, {}).eps).epsilon(0.03));
  // nu below the top of the spectrum of J is a domain error.
  CHECK_THROWS_AS(finite_measure_from_J(J.data(), L, 1.5, 4), Error);
}

TEST_CASE("domain errors") {
  CHECK_THROWS_AS(make_r1(2.0), Error);
  CHECK_THROWS_AS(make_r2(-1.0, 0.2), Error);
  auto sp = make_r1(3.0);
  CHECK_THROWS_AS(solve(*sp, -1.0, 0.1, {}), Error);
  CHECK_THROWS_AS(solve(*sp, 1.0, -0.1, {}), Error);
}
