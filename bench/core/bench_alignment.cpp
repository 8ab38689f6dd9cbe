// The kernel–task alignment's two routes on the Markov task's data (all paths, the main job's N0 = 231, H_tot = 4):
//   whole  — the estimator's way before 3.8: K_U built (am_theory_kernel), then the k leading eigenpairs of the
//            P×P kernel (am_kernel_alignment: dsyevr with an index range);
//   factor — am_theory_alignment: the thin QR of K_U's P × N0·H factor and the eigenpairs of R Rᵀ.
// For each U (the GP point, and a random positive-definite U_1 near it) and each route: process CPU seconds (user +
// system, every BLAS thread counted; min / median over the repetitions), their ratio, a same-run dgemm's CPU rate
// as the machine's yardstick, and how far the factor route's numbers are from the whole kernel's (eigenvalues
// relative to λ_max, overlaps absolute).
// Usage: bench_alignment [P [reps [k]]]   (default P = 8000, 3 repetitions, k = 30)
//        bench_alignment smoke            (tests/scripts: P = 300, one repetition, seconds)
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attnmech/attnmech.h"
#include "linalg.hpp"
#include "markov_core.h"

namespace {

double cpu_now() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_sec +
         1e-6 * (double)u.ru_stime.tv_usec;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// CPU GFLOP/s of a 2000³ dgemm (best of 3): the yardstick both routes are read against.
double dgemm_cpu_gflops() {
  const size_t n = 2000;
  std::mt19937_64 g(1);
  std::vector<double> A(n * n), B(n * n), C(n * n);
  for (auto &x : A) x = (double)(g() >> 11) * 0x1p-53 - 0.5;
  for (auto &x : B) x = (double)(g() >> 11) * 0x1p-53 - 0.5;
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    const double t0 = cpu_now();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0, A.data(), (int)n, B.data(),
                (int)n, 0.0, C.data(), (int)n);
    best = std::min(best, cpu_now() - t0);
  }
  return 2.0 * (double)n * (double)n * (double)n / best * 1e-9;
}

void die(am_context *ctx, const char *what) {
  std::fprintf(stderr, "bench_alignment: %s: %s\n", what, am_context_last_error(ctx));
  std::exit(1);
}

struct Route {
  std::vector<double> cpu, ov, ev;
};

// One route, `reps` times; the last repetition's numbers are kept.
Route run_route(am_context *ctx, am_theory *th, const std::vector<double> &U, const double *y, size_t P, size_t k,
                bool factor, int reps) {
  Route r;
  r.ov.resize(k);
  r.ev.resize(k);
  for (int i = 0; i < reps; ++i) {
    const double t0 = cpu_now();
    if (factor) {
      if (am_theory_alignment(ctx, th, U.data(), nullptr, k, r.ov.data(), r.ev.data())) die(ctx, "am_theory_alignment");
    } else {
      std::vector<double> K(P * P);
      if (am_theory_kernel(ctx, th, U.data(), K.data())) die(ctx, "am_theory_kernel");
      if (am_kernel_alignment(ctx, K.data(), P, P, y, k, r.ov.data(), r.ev.data()))
        die(ctx, "am_kernel_alignment");
    }
    r.cpu.push_back(cpu_now() - t0);
  }
  return r;
}

}  // namespace

int main(int argc, char **argv) {
  const bool smoke = argc > 1 && std::strcmp(argv[1], "smoke") == 0;
  const size_t P = smoke ? 300 : (argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 8000);
  const int reps = smoke ? 1 : (argc > 2 ? std::atoi(argv[2]) : 3);
  const size_t k = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 30;
  if (P < 2 || reps < 1 || k < 1 || k > P) {
    std::fprintf(stderr, "usage: bench_alignment [P [reps [k]]] | smoke   (P >= 2, reps >= 1, 1 <= k <= P)\n");
    return 2;
  }
  am_context *ctx = nullptr;
  am_context_create(&ctx, nullptr);
  am::markov::Options mo;
  mo.P = P;
  mo.P_test = 0;
  am_rng rng;
  am_rng_init(&rng, 0, 1);
  am_record *ds = nullptr, *ex = nullptr;
  am_record_create(&ds);
  am_record_create(&ex);
  if (am::markov::make_dataset(ctx, mo, rng, ds, ex)) die(ctx, "the Markov dataset");
  am_arch arch;
  am_arch_default(&arch);
  double T = 0;
  double *xi = nullptr, *y = nullptr;
  size_t Pn = 0, N0 = 0;
  if (am_dataset_arch(ctx, ds, &arch, &T) || am_dataset_xi(ctx, ds, "train", &xi, &Pn, &N0, &y)) die(ctx, "ξ");
  am_theory *th = nullptr;
  if (am_theory_create(ctx, &th, &arch, Pn, N0, xi, y, T)) die(ctx, "am_theory_create");
  const size_t H = am_arch_paths(&arch);
  const double gf = dgemm_cpu_gflops();
  std::printf("alignment of K_U, Markov all paths: P = %zu, N0 = %zu, H_tot = %zu (factor width r = %zu), k = %zu, "
              "%d repetition%s\ndgemm 2000³: %.1f GFLOP/s of CPU time\n", Pn, N0, H, N0 * H, k, reps,
              reps == 1 ? "" : "s", gf);
  std::printf("%-6s %-7s %12s %12s %13s %14s %14s\n", "U", "route", "cpu_s_min", "cpu_s_med", "whole/factor",
              "max|dλ|/λmax", "max|d ovl|");
  std::vector<double> U(am_theory_u_size(th));
  am_theory_gp_point(th, U.data());
  for (int which = 0; which < 2; ++which) {
    if (which == 1) {  // U_1 + B Bᵀ/H with B random: positive definite, off the GP point
      std::mt19937_64 g(7);
      std::vector<double> B(H * H);
      for (auto &x : B) x = (double)(g() >> 11) * 0x1p-53 - 0.5;
      for (size_t j = 0; j < H; ++j)
        for (size_t i = 0; i < H; ++i)
          for (size_t t = 0; t < H; ++t) U[i + j * H] += B[i + t * H] * B[j + t * H] / (double)H;
    }
    const Route w = run_route(ctx, th, U, y, Pn, k, false, reps), f = run_route(ctx, th, U, y, Pn, k, true, reps);
    double dl = 0, dov = 0;
    for (size_t i = 0; i < k; ++i) {
      dl = std::max(dl, std::fabs(w.ev[i] - f.ev[i]) / w.ev[0]);
      dov = std::max(dov, std::fabs(w.ov[i] - f.ov[i]));
    }
    const char *name = which ? "random" : "GP";
    std::printf("%-6s %-7s %12.3f %12.3f %13s %14s %14s\n", name, "whole", *std::min_element(w.cpu.begin(), w.cpu.end()),
                median(w.cpu), "", "", "");
    std::printf("%-6s %-7s %12.3f %12.3f %13.1f %14.2e %14.2e\n", name, "factor",
                *std::min_element(f.cpu.begin(), f.cpu.end()), median(f.cpu), median(w.cpu) / median(f.cpu), dl, dov);
  }
  am_theory_destroy(&th);
  am_free(xi);
  am_free(y);
  am_record_destroy(&ds);
  am_record_destroy(&ex);
  am_context_destroy(&ctx);
  return 0;
}
