// The theory on ScaLAPACK (plugins/common/scalapack) equals the serial solve: run under `mpirun -np K` (K ≥ 2).
// Rank 0 computes the serial reference with a handle without engine; every rank takes part in the distributed one.
//
// Bound: 1e-9 relative to each array's largest entry. The distributed path adds the same products in another order
// (block-cyclic panels, pdpotrf's blocked right-looking Cholesky against LAPACK's recursive one, M = B̃ᵀB̃ then CᵀMC
// for the direction Gram), so its results differ from the serial ones by round-off: ~ε·κ(Γ) for what goes through
// Γ⁻¹ (ε = 1.1e-16; κ(Γ) ≤ (λ_max(K_U) + T)/T ≈ 1e3–1e5 for these problems, T = 0.05–1) and for the solution U the
// same times the Newton Hessian's condition number (≈ 1e1–1e2 here). 1e-9 leaves a factor ≥ 10 over ~1e-11, and is
// far below any difference a wrong block, index or transpose makes (O(1)).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine.hpp"
#include "random_problem.hpp"

namespace {

constexpr double kRel = 1e-9;
int g_rank = 0, g_failures = 0, g_checks = 0;

void check(bool ok, const std::string &what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "FAIL (rank %d): %s\n", g_rank, what.c_str());
}

// max |a − b| ≤ kRel · max |b| (rank 0, which holds the serial b); also: every rank holds the same bits of a.
void check_close(const std::vector<double> &a, const std::vector<double> &b, const std::string &what) {
  std::vector<double> a0 = a;
  MPI_Bcast(a0.data(), int(a0.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
  check(std::memcmp(a0.data(), a.data(), a.size() * sizeof(double)) == 0, what + ": the same bits on every rank");
  if (g_rank != 0) return;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, " (max diff %.3e, scale %.3e, relative %.3e)", diff, scale, diff / scale);
  check(std::isfinite(diff) && diff <= kRel * scale, what + buf);
  if (std::getenv("AM_TEST_VERBOSE")) std::printf("%-50s%s\n", what.c_str(), buf);
}

struct Case {
  const char *name;
  std::vector<uint32_t> heads;
  std::vector<double> widths, vars;
  size_t P, N0, Pt;
  double T;
  bool solve;
};

am_theory *make(const random_problem &rp, double T, bool distributed) {
  am_theory *th = nullptr;
  if (am_theory_create(nullptr, &th, &rp.arch, rp.P, rp.N0, rp.xi.data(), rp.y.data(), T) != AM_OK) return nullptr;
  if (distributed && am::scalapack::distribute(nullptr, th, rp.P, rp.N0, rp.H, rp.xi.data(), rp.y.data()) != AM_OK)
    am_theory_destroy(&th);
  return th;
}

// The action, its gradient and Hessian at a random point near the GP point.
void check_action(const Case &c, random_problem &rp, am_theory *ser, am_theory *dist) {
  const std::vector<double> U = rp.random_u(dist);
  const size_t n = am_theory_vech_size(dist), nu = am_theory_u_size(dist);
  std::vector<double> a(3), g(nu), h(n * n), a0(3), g0(nu), h0(n * n);
  am_action act{sizeof act};
  check(am_theory_action(nullptr, dist, U.data(), &act, g.data(), h.data()) == AM_OK, std::string(c.name) + ": action");
  a = {act.S_code, act.energy, act.entropy};
  if (g_rank == 0) {
    am_action a_s{sizeof a_s};
    check(am_theory_action(nullptr, ser, U.data(), &a_s, g0.data(), h0.data()) == AM_OK, "serial action");
    a0 = {a_s.S_code, a_s.energy, a_s.entropy};
  }
  check_close(a, a0, std::string(c.name) + ": S, energy, entropy");
  check_close(g, g0, std::string(c.name) + ": gradient");
  check_close(h, h0, std::string(c.name) + ": Hessian");
}

// The Newton solve from the GP point (default settings), then the predictor at the solution. Both solves end by the
// gradient test (AM_OK) here, in the same number of iterations. A solve that ends in round-off instead
// (AM_CONVERGED_ROUNDOFF: the line search cannot tell the action's values apart, |ΔS| ~ ε|S|) fixes U only to
// ~√(ε|S|/λ_min(Hessian)), in the serial and the distributed solve alike: e.g. P = 777 of this 3-layer case at
// T = 0.1 (S ≈ 660), where the distributed solve stopped so at max|G| 6e-7 and U differs by 5e-7 relative.
void check_solve_predict(const Case &c, random_problem &rp, am_theory *ser, am_theory *dist) {
  const size_t nu = am_theory_u_size(dist);
  std::vector<double> U(nu), U0(nu);
  am_solve_report rep{sizeof rep}, rep0{sizeof rep0};
  const am_status st = am_theory_solve(nullptr, dist, nullptr, U.data(), &rep);
  check(st == AM_OK, std::string(c.name) + ": distributed solve converges");
  if (g_rank == 0) {
    check(am_theory_solve(nullptr, ser, nullptr, U0.data(), &rep0) == AM_OK, "serial solve");
    check(rep.iterations == rep0.iterations, std::string(c.name) + ": the same Newton iterations");
  }
  if (std::getenv("AM_TEST_VERBOSE") && g_rank == 0)
    std::printf("%s: %u and %u iterations, status %d and %d, min eig %.3e, grad %.3e %.3e dec %.3e %.3e\n", c.name,
                rep.iterations, rep0.iterations, rep.status, rep0.status, rep0.hessian_min_eig, rep.grad_max,
                rep0.grad_max, rep.decrement, rep0.decrement);
  check_close(U, U0, std::string(c.name) + ": solution U");
  check_close({rep.S_code}, {rep0.S_code}, std::string(c.name) + ": action at the solution");
  random_problem test(c.heads, c.widths, c.vars, AM_READOUT_LAST, c.Pt, c.N0, 5, 99);
  test.W = rp.W;  // the same heads on other inputs
  for (size_t k = 0; k < test.heads.size(); ++k) test.heads[k] = am_head AM_BILINEAR_HEAD(test.W[k].data());
  am_xi(nullptr, &test.arch, test.heads.data(), AM_READOUT_LAST, c.Pt, c.N0, 5, test.X.data(), test.xi.data());
  std::vector<double> m(c.Pt), v(c.Pt), m0(c.Pt), v0(c.Pt);
  check(am_theory_predict(nullptr, dist, U.data(), c.Pt, test.xi.data(), m.data(), v.data()) == AM_OK,
        std::string(c.name) + ": distributed predict");
  if (g_rank == 0)
    check(am_theory_predict(nullptr, ser, U.data(), c.Pt, test.xi.data(), m0.data(), v0.data()) == AM_OK, "predict");
  check_close(m, m0, std::string(c.name) + ": predictor mean");
  check_close(v, v0, std::string(c.name) + ": predictor variance");
}

void run_case(const Case &c) {
  random_problem rp(c.heads, c.widths, c.vars, AM_READOUT_LAST, c.P, c.N0, 5, 7 + c.P);
  am_theory *dist = make(rp, c.T, true), *ser = g_rank == 0 ? make(rp, c.T, false) : nullptr;
  check(dist && (g_rank != 0 || ser), std::string(c.name) + ": handles");
  if (!dist) return;
  check_action(c, rp, ser, dist);
  if (c.solve) check_solve_predict(c, rp, ser, dist);
  am_theory_destroy(&dist);
  am_theory_destroy(&ser);
}

// A Γ that is not positive definite (U_1 = −10·I makes K_U negative semi-definite; T = 0.1) fails on every rank
// with AM_ERR_SINGULAR and the serial path's message, and the ranks go on together (no rank left in a collective).
void check_singular() {
  random_problem rp({2}, {8, 8}, {1, 1, 1}, AM_READOUT_LAST, 90, 3, 5, 3);
  am_context *ctx = nullptr;
  am_context_create(&ctx, nullptr);
  am_theory *th = nullptr;
  am_theory_create(ctx, &th, &rp.arch, rp.P, rp.N0, rp.xi.data(), rp.y.data(), 0.1);
  check(am::scalapack::distribute(ctx, th, rp.P, rp.N0, rp.H, rp.xi.data(), rp.y.data()) == AM_OK, "engine");
  const double U1[4] = {-10, 0, 0, -10};
  std::vector<double> m(5), v(5);
  const am_status st = am_theory_predict(ctx, th, U1, 5, rp.xi.data(), m.data(), v.data());
  const std::string msg = am_context_last_error(ctx);
  check(st == AM_ERR_SINGULAR && msg.find("is not positive definite at T = 0.1") != std::string::npos,
        "negative definite U_1: AM_ERR_SINGULAR on every rank (" + msg + ")");
  am_theory_destroy(&th);
  am_context_destroy(&ctx);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2 || !am::scalapack::distributing()) {
    if (g_rank == 0) std::fprintf(stderr, "run under mpirun -np K with K >= 2\n");
    MPI_Finalize();
    return 2;
  }
  const Case cases[] = {
      // P below the block size (64) × ranks: the second rank holds no rows or only a partial block
      {"P=50, 1 layer of 2 heads", {2}, {6, 9}, {1.2, 0.8, 1.5}, 50, 3, 17, 0.3, true},
      // odd P, not a multiple of the block; two layers (U_2 replicated, U_1 through the engine)
      {"P=301, 2 layers of 2 heads", {2, 2}, {5, 7, 11}, {0.9, 1.3, 0.7, 1.1}, 301, 5, 23, 0.2, true},
      {"P=777, 3 layers (2, 1, 2 heads)", {2, 1, 2}, {6, 4, 9, 5}, {1.1, 0.8, 1.5, 0.7, 1.25}, 777, 4, 41, 1.0, true},
      {"P=2000, 1 layer of 3 heads", {3}, {20, 40}, {1.0, 1.0, 1.0}, 2000, 4, 64, 0.05, true},
  };
  for (const Case &c : cases) run_case(c);
  check_singular();
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%d checks on %d ranks, %d failed\n", g_checks, size, failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
