// attnmech scale benchmark: one theory solve and its predictions on K MPI ranks (ScaLAPACK engine) against the
// serial solve (K = 1: the same program without engine). Run it twice, and compare the lines:
//   OPENBLAS_NUM_THREADS=1 mpirun -np 1 build/bench/scale/bench_distributed 4000
//   OPENBLAS_NUM_THREADS=1 mpirun -np 2 build/bench/scale/bench_distributed 4000
// Per rank: CPU seconds of the solve and of the predictions, and the peak RSS; the wall time; the action (the same
// to ~1e-15 relative on every K). CPU time counts Open MPI's busy wait in collective calls as work.
// Usage: bench_distributed [P (4000)] [N0 (16)] [Pt (1000)]
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

#include "attnmech/attnmech.h"
#include "scale_util.hpp"
#include "engine.hpp"

namespace {

using scale_bench::cpu_seconds;
using scale_bench::gaussian;
using scale_bench::peak_rss_mb;

// One layer of 4 heads, widths P/2, T = 0.05, labels from a teacher reading two paths (Newton takes several steps);
// N0·H small against P, as in a data set of many examples: the P×P matrices dominate the memory.
struct problem {
  am_arch arch;
  size_t P, N0, H = 4;
  std::vector<double> xi, y;
};
problem make_problem(size_t P, size_t N0, uint64_t seed) {
  problem pr;
  am_arch_default(&pr.arch);
  pr.arch.layers = 1;
  pr.arch.heads[0] = 4;
  pr.arch.widths[0] = pr.arch.widths[1] = (double)P / 2;
  pr.P = P;
  pr.N0 = N0;
  pr.xi = gaussian(P * N0 * pr.H, seed, 1.0 / std::sqrt((double)(N0 * pr.H)));
  pr.y = scale_bench::teacher_labels(pr.xi, P, N0);
  return pr;
}

[[noreturn]] void fail(const char *what, am_context *ctx) {
  std::fprintf(stderr, "bench_distributed: %s: %s\n", what, am_context_last_error(ctx));
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, K = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &K);
  const size_t P = argc > 1 ? (size_t)std::atol(argv[1]) : 4000, N0 = argc > 2 ? (size_t)std::atol(argv[2]) : 16;
  const size_t Pt = argc > 3 ? (size_t)std::atol(argv[3]) : 1000;
  const problem pr = make_problem(P, N0, 7), test = make_problem(Pt, N0, 9);
  am_context *ctx = nullptr;
  am_context_create(&ctx, nullptr);
  am_theory *th = nullptr;
  if (am_theory_create(ctx, &th, &pr.arch, P, N0, pr.xi.data(), pr.y.data(), 0.05)) fail("create", ctx);
  if (am::scalapack::distribute(ctx, th, P, N0, pr.H, pr.xi.data(), pr.y.data())) fail("distribute", ctx);
  std::vector<double> U(am_theory_u_size(th)), mean(Pt), var(Pt);
  am_solve_report rep{sizeof rep};
  MPI_Barrier(MPI_COMM_WORLD);
  const auto w0 = std::chrono::steady_clock::now();
  const double c0 = cpu_seconds();
  if (am_theory_solve(ctx, th, nullptr, U.data(), &rep) < 0) fail("solve", ctx);
  const double c1 = cpu_seconds();
  if (am_theory_predict(ctx, th, U.data(), Pt, test.xi.data(), mean.data(), var.data())) fail("predict", ctx);
  const double c2 = cpu_seconds();
  MPI_Barrier(MPI_COMM_WORLD);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  const double mine[3] = {c1 - c0, c2 - c1, peak_rss_mb()};
  std::vector<double> all(3 * size_t(K));
  MPI_Gather(mine, 3, MPI_DOUBLE, all.data(), 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    const char *threads = std::getenv("OPENBLAS_NUM_THREADS");
    std::printf("P = %zu, N0 = %zu, H = 4, Pt = %zu, K = %d ranks, OPENBLAS_NUM_THREADS=%s: %u Newton iterations, "
                "%.3f s wall, S_code %.17e, mean[0] %.17e\n", P, N0, Pt, K, threads ? threads : "unset",
                rep.iterations, wall, rep.S_code, mean[0]);
    for (int r = 0; r < K; ++r)
      std::printf("  rank %d: solve %.3f s CPU, predict %.3f s CPU, peak RSS %.1f MB\n", r, all[3 * r],
                  all[3 * r + 1], all[3 * r + 2]);
  }
  am_theory_destroy(&th);
  am_context_destroy(&ctx);
  MPI_Finalize();
  return 0;
}
