// All-paths Markov runs through the core theory (spec §8 items 7 and 9), on two data seeds.
#include <doctest/doctest.h>

#include "markov_test_util.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace am::markov;
using markov_test::Ctx;
using markov_test::Rec;

namespace {

struct WidthResult {
  double N = 0, accuracy = 0, S_code = 0, U_a = 0, grad_max = 0;
  std::vector<double> U1;  // H_tot × H_tot
  double align_rn_top5 = 0;  // best overlap |v_k·y|/|y| among the top-5 PCs of the training kernel K_U
  am_status status = AM_OK;
};

struct MarkovRun {
  size_t H = 0;
  double gp_accuracy = 0;
  std::vector<WidthResult> widths;
  double gp_good = NAN, gp_good_denoising = NAN;
  double align_gp_top10 = 0;  // same for the GP kernel, top-10 PCs
};

double best_overlap(am_context *ctx, am_theory *th, const double *U, const double *y, size_t P, size_t k) {
  std::vector<double> K(P * P), ov(k), ev(k);
  REQUIRE(am_theory_kernel(ctx, th, U, K.data()) == AM_OK);
  REQUIRE(am_kernel_alignment(ctx, K.data(), P, P, y, k, ov.data(), ev.data()) == AM_OK);
  double best = 0;
  for (double o : ov) best = std::fmax(best, o);
  return best;
}

struct FreeDel {
  double *p = nullptr;
  ~FreeDel() { am_free(p); }
};

MarkovRun run(Config cfg, uint64_t seed, const std::vector<double> &widths, bool extras) {
  Options o;
  o.config = cfg;
  Ctx ctx;
  Rec ds, ex;
  am_rng rng;
  am_rng_init(&rng, seed, 0);
  MarkovRun r;
  REQUIRE_MESSAGE(make_dataset(ctx, o, rng, ds, extras ? ex.r : nullptr) == AM_OK, ctx.err());
  if (extras) {   // the GP limits of the dataset's path subsets, from the theory estimator
    r.gp_good = markov_test::gp_subset_accuracy(ctx, ds, "good");
    r.gp_good_denoising = markov_test::gp_subset_accuracy(ctx, ds, "good_denoising");
  }
  am_arch arch;
  am_arch_default(&arch);
  double T = 0;
  REQUIRE_MESSAGE(am_dataset_arch(ctx, ds, &arch, &T) == AM_OK, ctx.err());
  FreeDel xtr, ytr, xte, yte;
  size_t P = 0, Pt = 0, N0 = 0, N0t = 0;
  REQUIRE_MESSAGE(am_dataset_xi(ctx, ds, "train", &xtr.p, &P, &N0, &ytr.p) == AM_OK, ctx.err());
  REQUIRE_MESSAGE(am_dataset_xi(ctx, ds, "test", &xte.p, &Pt, &N0t, &yte.p) == AM_OK, ctx.err());
  REQUIRE(N0 == N0t);
  r.H = am_arch_paths(&arch);
  am_theory *th = nullptr;
  REQUIRE_MESSAGE(am_theory_create(ctx, &th, &arch, P, N0, xtr.p, ytr.p, T) == AM_OK, ctx.err());
  std::vector<double> U(am_theory_u_size(th)), mean(Pt), var(Pt);
  am_theory_gp_point(th, U.data());
  REQUIRE(am_theory_predict(ctx, th, U.data(), Pt, xte.p, mean.data(), var.data()) == AM_OK);
  r.gp_accuracy = am_accuracy(mean.data(), yte.p, Pt);
  r.align_gp_top10 = best_overlap(ctx, th, U.data(), ytr.p, P, 10);
  am_solve_settings ss;
  am_solve_default_settings(&ss);
  for (double N : widths) {
    for (uint32_t l = 0; l <= arch.layers; ++l) arch.widths[l] = N;
    REQUIRE(am_theory_set_arch(ctx, th, &arch) == AM_OK);
    WidthResult w;
    w.N = N;
    am_solve_report rep{sizeof(am_solve_report)};
    w.status = am_theory_solve(ctx, th, &ss, U.data(), &rep);
    if (std::getenv("AM_MARKOV_DEBUG"))
      std::printf("N=%g status %d iters %u grad_max %.3e decrement %.3e hmin %.3e msg %s\n", N, (int)w.status,
                  rep.iterations, rep.grad_max, rep.decrement, rep.hessian_min_eig, am_context_last_error(ctx));
    w.S_code = rep.S_code;
    w.U_a = rep.U_a;
    w.grad_max = rep.grad_max;
    w.U1.assign(U.begin(), U.begin() + r.H * r.H);
    REQUIRE(am_theory_predict(ctx, th, U.data(), Pt, xte.p, mean.data(), var.data()) == AM_OK);
    w.accuracy = am_accuracy(mean.data(), yte.p, Pt);
    w.align_rn_top5 = best_overlap(ctx, th, U.data(), ytr.p, P, 5);
    r.widths.push_back(w);
  }
  am_theory_destroy(&th);
  return r;
}

}  // namespace

TEST_CASE("markov all paths: finite-width accuracy gain and the structure of U (spec §8 items 7, 9, 10)") {
  for (uint64_t seed : {1u, 2u}) {
    CAPTURE(seed);
    const MarkovRun r = run(Config::All, seed, {10, 100, 1000}, false);
    REQUIRE(r.H == 4);
    for (const auto &w : r.widths) {
      CAPTURE(w.N);
      // the physics is checked, not the solver: a Newton run that stalled on round-off with a gradient far
      // below any effect on U (max|G| < 1e-6) counts as converged
      CHECK((w.status == AM_OK || w.status == AM_CONVERGED_ROUNDOFF ||
             (w.status == AM_ERR_NOT_CONVERGED && w.grad_max < 1e-6)));
    }
    const WidthResult &n10 = r.widths[0], &n100 = r.widths[1], &n1000 = r.widths[2];
    MESSAGE("seed " << seed << ": GP(all) " << r.gp_accuracy << ", RN N=10 " << n10.accuracy << ", N=100 "
                    << n100.accuracy << ", N=1000 " << n1000.accuracy << "; alignment RN(N=10) top-5 "
                    << n10.align_rn_top5 << ", GP top-10 " << r.align_gp_top10);
    // Item 7 (1000 test points: binomial sd ≈ 1.2 points; the margins below are the brief's):
    CHECK(n10.accuracy - r.gp_accuracy >= 0.05);
    // Item 10: at N = 10 a top PC of the renormalised kernel is strongly aligned with the labels (0.845 in the
    // reference run, 0.70–0.85 across seeds here), the GP kernel's top PCs are not (0.36 reference, ≤ 0.41 here).
    CHECK(n10.align_rn_top5 > 0.6);
    CHECK(r.align_gp_top10 < 0.5);
    CHECK(n10.align_rn_top5 - r.align_gp_top10 > 0.2);
    CHECK(n10.accuracy - n1000.accuracy >= 0.03);
    CHECK(std::fabs(n1000.accuracy - r.gp_accuracy) <= 0.04);
    // Item 9, code order (g, a1, d, a2): negative g–d weight at every N, adversarial diagonals below the
    // GP value 1 at N = 10, and relaxation towards the GP value as N grows.
    for (const auto &w : r.widths) {
      CAPTURE(w.N);
      CHECK(w.U1[0 + 4 * 2] < 0.0);
      CHECK(w.U1[0 + 4 * 2] == doctest::Approx(w.U1[2 + 4 * 0]).epsilon(1e-12));  // symmetric
    }
    CHECK(n10.U1[1 + 4 * 1] < 1.0);
    CHECK(n10.U1[3 + 4 * 3] < 1.0);
    CHECK(n10.U1[0 + 4 * 0] > n10.U1[2 + 4 * 2]);  // good path weighted most (13.4 vs 6.7 in §6.5)
    CHECK(n10.U1[2 + 4 * 2] > 1.0);
    for (size_t i = 0; i < 4; ++i) {
      CAPTURE(i);
      // spec §4.3/§6.5: diagonals ≈ 1.2 at N = 1000; closer to 1 than at N = 10
      CHECK(std::fabs(n1000.U1[i * 5] - 1.0) < std::fabs(n10.U1[i * 5] - 1.0));
      CHECK(std::fabs(n1000.U1[i * 5] - 1.0) < 0.5);
    }
  }
}

// Spec §8 item 8: 2paths (σ_oop = 5): RN ≈ 95 % at small N falling towards GP(g+d) ≈ 84 %; good path alone ≈ 56 %.
TEST_CASE("markov 2paths: accuracy gain at small N, GP of the good path near chance (spec §8 item 8)") {
  for (uint64_t seed : {1u, 2u}) {
    CAPTURE(seed);
    const MarkovRun r = run(Config::TwoPaths, seed, {10, 1000}, true);
    REQUIRE(r.H == 2);
    const WidthResult &n10 = r.widths[0], &n1000 = r.widths[1];
    MESSAGE("2paths seed " << seed << ": GP(g+d) " << r.gp_accuracy << ", GP(good) " << r.gp_good << ", RN N=10 "
                           << n10.accuracy << ", N=1000 " << n1000.accuracy);
    // 1000 test points: binomial sd ≈ 1.2 points; margins well inside the reference gaps (11.4 and 10 points)
    CHECK(n10.accuracy - r.gp_accuracy >= 0.06);
    CHECK(n10.accuracy - n1000.accuracy >= 0.05);
    CHECK(std::fabs(n1000.accuracy - r.gp_accuracy) <= 0.04);
    CHECK(r.gp_good < 0.65);  // out-of-plane noise 5 drowns the good path alone
    // the good_denoising subset of 2paths is the whole network: same GP accuracy
    CHECK(r.gp_good_denoising == doctest::Approx(r.gp_accuracy).epsilon(1e-12));
    CHECK(n10.U1[0 + 2 * 1] < 0.0);  // negative g–d weight (−1.739 in the reference run)
  }
}

// Not run by default (./test_markov -tc='*table*' --no-skip): prints the accuracy table of spec §6.5.
TEST_CASE("markov accuracy table (report)" * doctest::skip()) {
  const std::vector<double> Ns{10, 30, 50, 100, 300, 500, 1000};
  const char *seed_env = std::getenv("AM_MARKOV_SEED");
  const uint64_t seed = seed_env ? std::strtoull(seed_env, nullptr, 10) : 1;
  for (Config cfg : {Config::All, Config::TwoPaths, Config::GoodDenoising}) {
    const MarkovRun r = run(cfg, seed, Ns, true);
    std::printf("config %s (seed %llu): GP(all paths of this config) %.1f %%, GP good %.1f %%, GP g+d %.1f %%\n",
                config_name(cfg), (unsigned long long)seed, 100 * r.gp_accuracy, 100 * r.gp_good,
                100 * r.gp_good_denoising);
    std::printf("  %6s %8s %10s %8s   U1 diag / U[g,d]\n", "N", "acc %", "S_code", "U_a");
    for (const auto &w : r.widths) {
      std::printf("  %6.0f %8.1f %10.6f %8.4f  ", w.N, 100 * w.accuracy, w.S_code, w.U_a);
      for (size_t i = 0; i < r.H; ++i) std::printf(" %.4f", w.U1[i * (r.H + 1)]);
      std::printf("  / %.4f%s\n", r.H == 4 ? w.U1[0 + 4 * 2] : w.U1[0 + r.H * 1],
                  w.status == AM_OK || w.status == AM_CONVERGED_ROUNDOFF ? "" : "  (not converged)");
    }
  }
}
