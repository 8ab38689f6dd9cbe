// attnmech scale benchmark: the theory's serial solve at P = 1000, 2000, 4000 (or the sizes given).
// For each P: Newton iterations, how many times Γ = K_U + T·I was built and factored and how many gradient +
// Hessian evaluations the solve made (per iteration), the solve's CPU time (min and median of the repeats) and
// that time as a ratio to one P×P×P dgemm measured in the same run (best of the repeats), and the peak RSS.
// Run with OPENBLAS_NUM_THREADS=1 so CPU time is the work done.
// Usage: bench_scale [repeats (3)] [N0 (64)] [P ...]
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "attnmech/attnmech.h"
#include "scale_util.hpp"
#include "linalg.hpp"
#include "theory.hpp"

namespace {

using scale_bench::cpu_seconds;
using scale_bench::gaussian;
using scale_bench::peak_rss_mb;

// CPU seconds of C = A B for P×P matrices, best of `reps`.
double dgemm_seconds(size_t P, int reps) {
  const auto A = gaussian(P * P, 11, 1.0), B = gaussian(P * P, 12, 1.0);
  std::vector<double> C(P * P);
  double best = INFINITY;
  for (int r = 0; r < reps; ++r) {
    const double t0 = cpu_seconds();
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)P, (int)P, (int)P, 1.0, A.data(), (int)P, B.data(),
                (int)P, 0.0, C.data(), (int)P);
    best = std::min(best, cpu_seconds() - t0);
  }
  return best;
}

// Two layers of 4 heads (16 paths), widths P/2, T = 0.05; labels from a teacher that reads two of the paths, so
// the solution moves away from the GP point and Newton takes several steps.
struct problem {
  am_arch arch;
  size_t P, N0, H = 16;
  std::vector<double> xi, y;
};
problem make_problem(size_t P, size_t N0) {
  problem pr;
  am_arch_default(&pr.arch);
  pr.arch.layers = 2;
  pr.arch.heads[0] = pr.arch.heads[1] = 4;
  for (int l = 0; l < 3; ++l) pr.arch.widths[l] = (double)P / 2;
  pr.P = P;
  pr.N0 = N0;
  pr.xi = gaussian(P * N0 * pr.H, 7, 1.0 / std::sqrt((double)(N0 * pr.H)));
  pr.y = scale_bench::teacher_labels(pr.xi, P, N0);
  return pr;
}

struct solve_run {
  double cpu;
  unsigned iterations;
  unsigned long long factorizations, derivatives;
  double S;
};

solve_run solve_once(const problem &pr) {
  am_theory *th = nullptr;
  if (am_theory_create(nullptr, &th, &pr.arch, pr.P, pr.N0, pr.xi.data(), pr.y.data(), 0.05) != AM_OK) {
    std::fprintf(stderr, "bench_scale: cannot create the theory at P = %zu\n", pr.P);
    std::exit(1);
  }
  std::vector<double> U(am_theory_u_size(th));
  am_solve_report rep{sizeof(am_solve_report)};
  const double t0 = cpu_seconds();
  const am_status st = am_theory_solve(nullptr, th, nullptr, U.data(), &rep);
  const double t = cpu_seconds() - t0;
  if (st < 0) {
    std::fprintf(stderr, "bench_scale: the solve at P = %zu failed (%s)\n", pr.P, am_status_string(st));
    std::exit(1);
  }
  solve_run r{t, rep.iterations, th->gamma_factorizations, th->derivative_evaluations, rep.S_code};
  am_theory_destroy(&th);
  return r;
}

}  // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const size_t N0 = argc > 2 ? (size_t)std::atol(argv[2]) : 64;
  std::vector<size_t> Ps;
  for (int a = 3; a < argc; ++a) Ps.push_back((size_t)std::atol(argv[a]));
  if (Ps.empty()) Ps = {1000, 2000, 4000};
  const char *threads = std::getenv("OPENBLAS_NUM_THREADS");
  std::printf("theory solve vs P: N0 = %zu, H = (4, 4), widths P/2, T = 0.05; %d repeats; OPENBLAS_NUM_THREADS=%s\n",
              N0, reps, threads ? threads : "unset (CPU time then counts every thread)");
  std::printf("%6s %5s %8s %8s %9s %9s %9s %9s %10s %10s %8s %24s\n", "P", "iters", "factors", "derivs", "fact/it",
              "cpu_min", "cpu_med", "dgemm_s", "ratio_min", "ratio_med", "RSS_MB", "S_code");
  for (size_t P : Ps) {
    const problem pr = make_problem(P, N0);
    std::vector<solve_run> runs;
    for (int r = 0; r < reps; ++r) runs.push_back(solve_once(pr));
    const double g = dgemm_seconds(P, reps);
    std::vector<double> cpu;
    for (const auto &r : runs) cpu.push_back(r.cpu);
    std::sort(cpu.begin(), cpu.end());
    const double med = cpu.size() % 2 ? cpu[cpu.size() / 2] : 0.5 * (cpu[cpu.size() / 2 - 1] + cpu[cpu.size() / 2]);
    const solve_run &r = runs[0];
    std::printf("%6zu %5u %8llu %8llu %9.2f %9.3f %9.3f %9.3f %10.2f %10.2f %8.0f %24.17e\n", P, r.iterations,
                r.factorizations, r.derivatives, (double)r.factorizations / std::max(1u, r.iterations), cpu.front(),
                med, g, cpu.front() / g, med / g, peak_rss_mb(), r.S);
    std::fflush(stdout);
  }
  return 0;
}
