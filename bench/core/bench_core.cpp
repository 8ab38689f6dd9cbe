// attnmech core benchmarks. Every figure is a ratio against a baseline measured in the same run:
//   1. kernel build ξ → K_U (P = 2000, N0 = 192, H_tot = 16): GFLOP/s as a fraction of OpenBLAS dgemm
//      on a problem of the same shape;
//   2. one Newton solve vs an Adam minimiser with the reference settings (lr 0.1, stop at max|G| < 1e-5)
//      on the same problem: iterations, wall time, final gradient;
//   3. a full solve as P grows (16 paths): time, time / P³, achieved rate vs dgemm, peak memory.
// Usage: bench_core [quick|smoke]   ("quick" shrinks every size; "smoke", for tests/scripts, to seconds: P = 100,
//                                    a 300³ dgemm reference, Adam stopped after 200 iterations — not a measurement)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attnmech/attnmech.h"
#include "linalg.hpp"
#include "theory.hpp"
#ifdef AM_BENCH_MARKOV
#include "markov_core.h"
#endif

namespace {

using clk = std::chrono::steady_clock;
double secs(clk::time_point a, clk::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::vector<double> randn(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<double> v(n);
  for (auto &x : v) {
    const double u = ((double)(g() >> 11) + 0.5) * 0x1.0p-53, w = (double)(g() >> 11) * 0x1.0p-53;
    x = std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * w);
  }
  return v;
}

// Best-of-reps rate of dgemm C(m×n) = A(m×k) B(k×n)ᵀ-shaped like the kernel build.
double dgemm_gflops(size_t m, size_t n, size_t k, int reps) {
  auto A = randn(m * k, 1), B = randn(n * k, 2);
  std::vector<double> C(m * n);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = clk::now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)k, 1.0, A.data(), (int)m, B.data(), (int)n,
                0.0, C.data(), (int)m);
    best = std::min(best, secs(t0, clk::now()));
  }
  return 2.0 * (double)m * (double)n * (double)k / best * 1e-9;
}

long peak_rss_mb() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

// Synthetic ξ with the structure of an attention problem: a few strong path directions plus noise,
// labels from a random teacher on them (so the order parameter moves away from the GP point).
struct problem {
  am_arch arch;
  size_t P, N0, H;
  std::vector<double> xi, y;
};
problem make_problem(size_t P, size_t N0, uint32_t h1, uint32_t h2, double width, uint64_t seed) {
  problem pr;
  am_arch_default(&pr.arch);
  pr.arch.layers = 2;
  pr.arch.heads[0] = h1;
  pr.arch.heads[1] = h2;
  for (int l = 0; l < 3; ++l) pr.arch.widths[l] = width;
  pr.P = P;
  pr.N0 = N0;
  pr.H = (size_t)h1 * h2;
  pr.xi = randn(P * N0 * pr.H, seed);
  const double sc = 1.0 / std::sqrt((double)(N0 * pr.H));
  for (auto &x : pr.xi) x *= sc;
  auto w = randn(N0 * pr.H, seed + 1);
  pr.y.resize(P);
  for (size_t mu = 0; mu < P; ++mu) {
    double f = 0;
    for (size_t c = 0; c < N0; ++c) f += pr.xi[mu + P * c] * w[c] * 3.0;  // the teacher reads path 0 only
    for (size_t c = N0; c < 2 * N0 && pr.H > 1; ++c) f -= pr.xi[mu + P * c] * w[c];
    pr.y[mu] = f >= 0 ? 1.0 : -1.0;
  }
  return pr;
}

// Adam on the raw matrices M_l with U_l = (M_l + M_lᵀ)/2, as the reference (the authors' code) minimises.
struct adam_result {
  int iterations;
  double seconds, grad_max, S;
  bool converged;
};
adam_result run_adam(am_theory *th, double lr, double tol, int max_iter) {
  const size_t n = am_theory_u_size(th);
  std::vector<double> M(n), G(n), m(n, 0.0), v(n, 0.0);
  am_theory_gp_point(th, M.data());
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  adam_result r{0, 0, 0, 0, false};
  auto t0 = clk::now();
  for (int it = 0; it < max_iter; ++it) {
    am_action a{sizeof(am_action)};
    if (am_theory_action(nullptr, th, M.data(), &a, G.data(), nullptr) != AM_OK) break;
    double gm = 0;
    for (double g : G) gm = std::max(gm, std::fabs(g));
    r.iterations = it;
    r.grad_max = gm;
    r.S = a.S_code;
    if (gm < tol) {
      r.converged = true;
      break;
    }
    const double c1 = 1 - std::pow(b1, it + 1), c2 = 1 - std::pow(b2, it + 1);
    for (size_t k = 0; k < n; ++k) {  // ∂S/∂M = G (G symmetric)
      m[k] = b1 * m[k] + (1 - b1) * G[k];
      v[k] = b2 * v[k] + (1 - b2) * G[k] * G[k];
      M[k] -= lr * (m[k] / c1) / (std::sqrt(v[k] / c2) + eps);
    }
  }
  r.seconds = secs(t0, clk::now());
  return r;
}

}  // namespace

int main(int argc, char **argv) {
  const bool smoke = argc > 1 && std::string(argv[1]) == "smoke";
  const bool quick = smoke || (argc > 1 && std::string(argv[1]) == "quick");
  std::printf("attnmech core benchmarks%s (OPENBLAS_CORETYPE=%s)\n", smoke ? " [smoke]" : quick ? " [quick]" : "",
              std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "unset");

  // 1. Kernel build.
  {
    const size_t P = smoke ? 100 : quick ? 500 : 2000, N0 = 192, H = 16;
    const double ref = dgemm_gflops(P, P, N0 * H, 3);
    auto xi = randn(P * N0 * H, 3);
    std::vector<double> U(H * H, 0.0), K(P * P);
    auto R = randn(H * H, 4);
    for (size_t i = 0; i < H; ++i)
      for (size_t j = 0; j < H; ++j) {
        double s = (i == j) ? 1.0 : 0.0;
        for (size_t k = 0; k < H; ++k) s += 0.1 * R[i + k * H] * R[j + k * H];
        U[i + j * H] = s;
      }
    double best = 1e30;
    for (int r = 0; r < 3; ++r) {
      auto t0 = clk::now();
      am_kernel_u(nullptr, N0, H, U.data(), P, xi.data(), P, xi.data(), K.data(), P);
      best = std::min(best, secs(t0, clk::now()));
    }
    // Flops of the algorithm used: Z = Ξ_t L (2·P·N0·H²) + SYRK (P²·N0·H).
    const double flops = 2.0 * P * N0 * H * H + (double)P * P * N0 * H;
    // The same kernel as one GEMM would cost 2·P²·N0·H: report both the rate and the time ratio.
    const double gemm_equiv = 2.0 * (double)P * P * N0 * H / (ref * 1e9);
    std::printf("\n[1] kernel build K_U, P=%zu N0=%zu H_tot=%zu: %.3f s, %.1f GFLOP/s; dgemm (same shape) %.1f GFLOP/s\n",
                P, N0, H, best, flops / best * 1e-9, ref);
    std::printf("    rate / dgemm rate = %.2f   (target >= 0.6); time vs one dgemm of the full product = %.2fx faster\n",
                flops / best * 1e-9 / ref, gemm_equiv / best);
  }

  // 2. Newton vs Adam with the reference settings, on the Markov all-paths task (docs/tasks.md; seed 0).
  {
#ifdef AM_BENCH_MARKOV
    am::markov::Options mo;
    am_rng rng;
    am_rng_init(&rng, 0, 1);
    am_record *ds = nullptr, *ex = nullptr;
    am_record_create(&ds);
    am_record_create(&ex);
    am::markov::make_dataset(nullptr, mo, rng, ds, ex);
    am_arch arch;
    am_arch_default(&arch);
    double T;
    am_dataset_arch(nullptr, ds, &arch, &T);
    double *xi = nullptr, *y = nullptr;
    size_t P = 0, N0 = 0;
    am_dataset_xi(nullptr, ds, "train", &xi, &P, &N0, &y);
    std::printf("\n[2] Newton (max|G| <= 1e-10·max(1,|S|)) vs Adam (lr 0.1, stop at max|G| < 1e-5, as the authors),\n"
                "    Markov all paths, P=%zu, N0=%zu, H=(2,2), T=%g\n", P, N0, T);
    std::printf("    %6s %9s %9s %11s %8s %9s %11s %11s %12s\n", "N", "newton_it", "newton_s", "newton|G|", "adam_it",
                "adam_s", "adam|G|", "time_ratio", "|S_adam-S|");
    for (double N : {10.0, 100.0, 1000.0}) {
      for (int l = 0; l < 3; ++l) arch.widths[l] = N;
      am_theory *th = nullptr;
      am_theory_create(nullptr, &th, &arch, P, N0, xi, y, T);
      std::vector<double> U(am_theory_u_size(th));
      am_solve_report rep{sizeof(am_solve_report)};
      auto t0 = clk::now();
      am_theory_solve(nullptr, th, nullptr, U.data(), &rep);
      const double tn = secs(t0, clk::now());
      adam_result ad = run_adam(th, 0.1, 1e-5, smoke ? 200 : quick ? 3000 : 50000);
      std::printf("    %6.0f %9u %9.4f %11.2e %8d %9.3f %11.2e %10.1fx %12.2e%s\n", N, rep.iterations, tn, rep.grad_max,
                  ad.iterations, ad.seconds, ad.grad_max, ad.seconds / tn, std::fabs(ad.S - rep.S_code),
                  ad.converged ? "" : "  (Adam hit its iteration cap)");
      am_theory_destroy(&th);
    }
    am_free(xi);
    am_free(y);
    am_record_destroy(&ds);
    am_record_destroy(&ex);
#else
    std::printf("\n[2] skipped: built without plugins/task-markov\n");
#endif
  }

  // 3. Scaling with P at 16 paths.
  {
    const size_t n_ref = smoke ? 300 : 2000;
    const double ref = dgemm_gflops(n_ref, n_ref, n_ref, 2);
    std::printf("\n[3] full Newton solve vs P (N0=192, H=(4,4), N=P/2, T=0.05); dgemm reference %.1f GFLOP/s\n", ref);
    std::printf("    %6s %6s %10s %14s %16s %10s\n", "P", "iters", "seconds", "s/(P/1000)^3", "GFLOP/s (est.)", "peakRSS_MB");
    std::vector<size_t> Ps = smoke ? std::vector<size_t>{100}
                             : quick ? std::vector<size_t>{250, 500} : std::vector<size_t>{250, 500, 1000, 2000, 4000};
    for (size_t P : Ps) {
      problem pr = make_problem(P, 192, 4, 4, (double)P / 2, 7);
      am_theory *th = nullptr;
      am_theory_create(nullptr, &th, &pr.arch, pr.P, pr.N0, pr.xi.data(), pr.y.data(), 0.05);
      std::vector<double> U(am_theory_u_size(th));
      am_solve_report rep{sizeof(am_solve_report)};
      auto t0 = clk::now();
      am_theory_solve(nullptr, th, nullptr, U.data(), &rep);
      const double t = secs(t0, clk::now());
      // Dominant flops per Newton iteration: the trial point's K_U SYRK P²·NH and Cholesky P³/3 (the gradient and
      // Hessian at the accepted trial reuse that factor), TRSM P²·NH, B̃ᵀB̃ SYRK (NH)²·P, Gram of Q blocks (N0²)·H⁴.
      const double NH = 192.0 * 16, Pd = (double)P;
      const double per_it = Pd * Pd * NH + Pd * Pd * Pd / 3 + Pd * Pd * NH + NH * NH * Pd + 192.0 * 192.0 * 65536.0;
      const double gf = per_it * (rep.iterations + 1) / t * 1e-9;
      std::printf("    %6zu %6u %10.3f %14.3f %16.1f %10ld   (rate/dgemm %.2f)\n", P, rep.iterations, t,
                  t / std::pow(Pd / 1000, 3), gf, peak_rss_mb(), gf / ref);
      am_theory_destroy(&th);
    }
  }
  return 0;
}
