// Benchmarks of the estimator "replica" (plain timing executable, no assertions):
//  0. the spec 4.5 reference table as computed here;
//  1. the theory curve for 50 alpha x 4 lambda values (model R1, nu = 3) with each solver, as ratios
//     against the 1-D root form measured in the same run; plus optimal lambda / peaks;
//  2. the finite-size table of docs/replica.md: L = 400, 40 sites x 3 seeds, theory beside
//     simulation +- standard error (and the z score against the theory at the realised alpha).
// Usage: bench_replica [--seeds N] [--L L] [--sites N] [--no-sim]
#include "replica.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace am::replica;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best-of-`reps` wall time of f().
template <class F>
double best_time(int reps, F f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    f();
    best = std::min(best, now() - t0);
  }
  return best;
}

}  // namespace

int main(int argc, char **argv) {
  std::size_t seeds = 3, L = 400, sites = 40;
  bool sim = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seeds") && i + 1 < argc) seeds = std::strtoul(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--L") && i + 1 < argc) L = std::strtoul(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--sites") && i + 1 < argc) sites = std::strtoul(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--no-sim")) sim = false;
    else {
      std::fprintf(stderr, "usage: %s [--seeds N] [--L L] [--sites N] [--no-sim]\n", argv[0]);
      return 2;
    }
  }

  auto sp = make_r1(3.0);

  // ---- 0. the reference table of spec 4.5 as this code computes it (model R1, nu = 3)
  {
    const double ta[13] = {0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.5, 2, 3, 5, 10, 20};
    std::printf("== spec 4.5 table, model R1 nu=3 (epsilon; lambda -> 0 row; optimal lambda)\n  %-8s", "l\\a");
    for (double a : ta) std::printf(" %7g", a);
    std::printf("\n");
    for (double l : {1e-3, 1e-2, 1e-1, 1.0, 10.0, 0.0}) {
      if (l == 0) std::printf("  %-8s", "->0");
      else std::printf("  %-8g", l);
      for (double a : ta) std::printf(" %7.4f", solve(*sp, a, l, {}).eps);
      std::printf("\n");
    }
    std::printf("  %-8s", "opt eps");
    for (double a : ta) std::printf(" %7.4f", optimal_lambda(*sp, a, {}).eps);
    std::printf("\n  %-8s", "lam_opt");
    for (double a : ta) std::printf(" %7.3g", optimal_lambda(*sp, a, {}).lambda);
    std::printf("\n  peaks on [0.3, 3]:");
    for (double l : {1e-4, 1e-3, 1e-2, 3e-2, 0.1, 0.3}) {
      const Peak pk = find_peak(*sp, l, {});
      std::printf("  l=%g: a*=%.4f eps=%.4f;", l, pk.alpha, pk.eps);
    }
    std::printf("\n\n");
  }

  // ---- 1. curve timing
  std::vector<double> alphas(50);
  for (int k = 0; k < 50; ++k) alphas[k] = std::exp(std::log(0.1) + (std::log(20.0) - std::log(0.1)) * k / 49.0);
  const double lambdas[4] = {1e-3, 1e-2, 1e-1, 1.0};
  double sink = 0;
  auto curve = [&](Method m) {
    SaddleOptions o;
    o.method = m;
    o.max_iter = 100000;  // fixed_point alone must converge everywhere
    for (double l : lambdas)
      for (double a : alphas) sink += solve(*sp, a, l, o).eps;
  };
  const double t_root = best_time(5, [&] { curve(Method::Root); });
  const double t_fp = best_time(5, [&] { curve(Method::FixedPoint); });
  const double t_auto = best_time(5, [&] { curve(Method::Auto); });
  std::printf("== theory curve, model R1 nu=3, 50 alpha in [0.1,20] x 4 lambda in {1e-3,1e-2,1e-1,1}\n");
  std::printf("  root (1-D Brent)   %9.3f ms   ratio 1.00\n", 1e3 * t_root);
  std::printf("  fixed point        %9.3f ms   ratio %.2f\n", 1e3 * t_fp, t_fp / t_root);
  std::printf("  auto               %9.3f ms   ratio %.2f\n", 1e3 * t_auto, t_auto / t_root);
  const double t_opt = best_time(3, [&] {
    for (double a : alphas) sink += optimal_lambda(*sp, a, {}).eps;
  });
  const double t_peak = best_time(3, [&] {
    for (double l : lambdas) sink += find_peak(*sp, l, {}).eps;
  });
  std::printf("  optimal lambda, 50 alpha   %9.3f ms   ratio %.2f\n", 1e3 * t_opt, t_opt / t_root);
  std::printf("  peaks, 4 lambda            %9.3f ms   ratio %.2f\n", 1e3 * t_peak, t_peak / t_root);

  // Finite model: spectral functions from a drawn J (L = 200, all sites) and the same curve.
  {
    const std::size_t Lf = 200;
    std::vector<double> J(Lf * Lf);
    am_rng r;
    am_rng_init(&r, 1, 0);
    draw_r1_J(Lf, &r, J.data());
    std::unique_ptr<Spectrum> fin;
    const double t_meas = best_time(1, [&] { fin = make_discrete(finite_measure_from_J(J.data(), Lf, 3.0)); });
    const double t_fc = best_time(1, [&] {
      for (double l : lambdas)
        for (double a : alphas) sink += solve(*fin, a, l, {}).eps;
    });
    std::printf("  finite J (L=200, 200 sites): spectral measure %.3f s, curve 50x4 %.3f s (ratio %.0f)\n", t_meas,
                t_fc, t_fc / t_root);
  }

  // ---- 2. finite-size table (spec 4.6)
  if (sim) {
    SimSpec s;
    s.model = SimModel::R1;
    s.L = L;
    s.nu = 3.0;
    s.seeds = seeds;
    s.n_sites = sites;
    const std::vector<double> al = {0.5, 0.8, 1.25, 2.0, 4.0}, la = {0.01, 0.1};
    am_rng rng;
    am_rng_init(&rng, 2026, 0);
    const double t0 = now();
    const auto res = simulate(s, al, la, rng);
    const double t_sim = now() - t0;
    std::printf("\n== finite-size check (spec 4.6): model R1 nu=3, L=%zu (p=%zu), %zu sites x %zu seeds\n", L, L - 1,
                sites, seeds);
    std::printf("  lambda  alpha  (realised)   simulation +- stderr   theory   theory@realised   z      "
                "[stderr: seeds / sites]\n");
    for (std::size_t il = 0; il < la.size(); ++il)
      for (std::size_t ia = 0; ia < al.size(); ++ia) {
        const SimPoint &p = res[ia][il];
        const double th = solve(*sp, al[ia], la[il], {}).eps;
        const double thr = solve(*sp, p.alpha_realised, la[il], {}).eps;
        std::printf("  %-6g  %-5g  (%.5f)   %.4f +- %.4f      %.4f   %.4f           %+.2f  [%.4f / %.4f]\n", la[il],
                    al[ia], p.alpha_realised, p.mean, p.stderr_, th, thr, (p.mean - thr) / p.stderr_, p.seed_stderr,
                    p.site_stderr);
      }
    std::printf("  simulation time %.2f s\n", t_sim);
  }
  std::printf("(checksum %.6g)\n", sink);
  return 0;
}
