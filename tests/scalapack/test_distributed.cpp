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
#include <malloc.h>
#include <unistd.h>
#include <memory>
#include <string>
#include <vector>

#include "../newton_distance.hpp"

#include "../memory_limit.hpp"
#include "engine.hpp"
#include "random_problem.hpp"

namespace {

using am_test::reset_peak;
using am_test::status_kib;
constexpr double kRel = 1e-9;
int g_rank = 0, g_failures = 0, g_checks = 0;

void check(bool ok, const std::string &what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "FAIL (rank %d): %s\n", g_rank, what.c_str());
}

// max |a − b| ≤ kRel · max |b| (rank 0, which holds the serial b); also: every rank holds the same bits of a.
void check_close(const std::vector<double> &a, const std::vector<double> &b, const std::string &what, double extra = 0) {
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
  check(std::isfinite(diff) && diff <= kRel * scale + extra, what + buf);
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
// gradient test (AM_OK) here; their iterates agree to round-off until the stopping test, so they end at most one
// iteration apart (a gradient within round-off of grad_tol on one path takes one more, quadratic, step), and their
// points within the sum of their distances to the minimum (newton_distance.hpp) on top of the round-off bound.
// A solve that ends in round-off instead
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
    check(std::abs((long)rep.iterations - (long)rep0.iterations) <= 1, std::string(c.name) + ": Newton iterations");
  }
  const double reach = g_rank == 0 ? newton_test::distance(ser, rp.arch, U.data()) +
                                     newton_test::distance(ser, rp.arch, U0.data()) : 0;
  if (std::getenv("AM_TEST_VERBOSE") && g_rank == 0)
    std::printf("%s: %u and %u iterations, status %d and %d, min eig %.3e, grad %.3e %.3e dec %.3e %.3e\n", c.name,
                rep.iterations, rep0.iterations, rep.status, rep0.status, rep0.hessian_min_eig, rep.grad_max,
                rep0.grad_max, rep.decrement, rep0.decrement);
  check_close(U, U0, std::string(c.name) + ": solution U", reach);
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
  // That prediction took the engine's factor of Γ from the solve (the solution's); a factor built for it anew — after
  // one at the GP point — gives the same bits (the same operations on the same bits).
  std::vector<double> Ugp(nu), mg(c.Pt), vg(c.Pt), m2(c.Pt), v2(c.Pt);
  am_theory_gp_point(dist, Ugp.data());
  check(am_theory_predict(nullptr, dist, Ugp.data(), c.Pt, test.xi.data(), mg.data(), vg.data()) == AM_OK &&
            am_theory_predict(nullptr, dist, U.data(), c.Pt, test.xi.data(), m2.data(), v2.data()) == AM_OK,
        std::string(c.name) + ": distributed predict at the GP point, then at U again");
  check(std::memcmp(m.data(), m2.data(), c.Pt * sizeof(double)) == 0 &&
            std::memcmp(v.data(), v2.data(), c.Pt * sizeof(double)) == 0,
        std::string(c.name) + ": the solve's factor predicts the bits of a new factor");
}

void check_kernels(const Case &c, random_problem &rp, am_theory *ser);

void run_case(const Case &c) {
  random_problem rp(c.heads, c.widths, c.vars, AM_READOUT_LAST, c.P, c.N0, 5, 7 + c.P);
  am_theory *dist = make(rp, c.T, true), *ser = g_rank == 0 ? make(rp, c.T, false) : nullptr;
  check(dist && (g_rank != 0 || ser), std::string(c.name) + ": handles");
  if (!dist) return;
  check_action(c, rp, ser, dist);
  if (c.solve) check_solve_predict(c, rp, ser, dist);
  check_kernels(c, rp, ser);
  am_theory_destroy(&dist);
  am_theory_destroy(&ser);
}

// The examples the heat maps keep (estimate.cpp kernel_examples): all up to 60, else the first and the last 25.
std::vector<size_t> examples_of(size_t P) {
  std::vector<size_t> ex;
  for (size_t i = 0; i < P; ++i)
    if (P <= 60 || i < 25 || i >= P - 25) ex.push_back(i);
  return ex;
}

// Rows and columns ex of the whole P×P matrix K, and K's smallest element.
std::vector<double> block_of(const std::vector<double> &K, size_t P, const std::vector<size_t> &ex, double *min) {
  const size_t m = ex.size();
  std::vector<double> b(m * m);
  for (size_t j = 0; j < m; ++j)
    for (size_t i = 0; i < m; ++i) b[i + m * j] = K[ex[i] + P * ex[j]];
  *min = *std::min_element(K.begin(), K.end());
  return b;
}

// The kernels' phase of a distributed run (kernel_summary, prekernel_summary: block-cyclic kernels, pdsyevr) against
// the serial kernel, its blocks and minimum (am_theory_kernel, am_prekernel) and its alignment (am_kernel_alignment,
// dsyevr) at a random U near the GP point. The eigenvectors' overlaps are compared too: the leading eigenvalues of
// these kernels are separated by gaps ≳ 1e-3 of the largest, so the eigenvectors are fixed to ~ε·λ_max/gap ≲ 1e-12.
void check_kernels(const Case &c, random_problem &rp, am_theory *ser) {
  std::shared_ptr<am::scalapack::Shared> sh;
  am_theory *dist = nullptr;
  check(am_theory_create(nullptr, &dist, &rp.arch, rp.P, rp.N0, rp.xi.data(), rp.y.data(), c.T) == AM_OK &&
            am::scalapack::distribute(nullptr, dist, rp.P, rp.N0, rp.H, rp.xi.data(), rp.y.data(), &sh) == AM_OK &&
            sh != nullptr,
        std::string(c.name) + ": engine with its shared state");
  if (!sh) return;
  const std::vector<double> U = rp.random_u(dist);
  const std::vector<size_t> ex = examples_of(c.P);
  // K_U has rank ≤ N0·H (the columns of Ξ): beyond it the eigenvalues are zeros whose eigenvectors are any basis of
  // the null space, so only components inside the rank (less one, which can be small) are compared
  const size_t m = ex.size(), k = std::min<size_t>(8, c.N0 * rp.H - 1);
  std::vector<double> b(m * m), o(k), e(k), b0, o0(k), e0(k), K(g_rank == 0 ? c.P * c.P : 0);
  double lo = 0, lo0 = 0;
  check(am::scalapack::kernel_summary(nullptr, *sh, U.data(), ex, k, b.data(), &lo, o.data(), e.data()) == AM_OK,
        std::string(c.name) + ": kernel_summary");
  if (g_rank == 0) {
    check(am_theory_kernel(nullptr, ser, U.data(), K.data()) == AM_OK, "serial kernel");
    b0 = block_of(K, c.P, ex, &lo0);
    check(am_kernel_alignment(nullptr, K.data(), c.P, c.P, rp.y.data(), k, o0.data(), e0.data()) == AM_OK, "alignment");
  }
  check_close(b, b0, std::string(c.name) + ": kernel block at the heat maps' examples");
  check_close({lo}, {lo0}, std::string(c.name) + ": the kernel's smallest element");
  check_close(e, e0, std::string(c.name) + ": leading eigenvalues (pdsyevr vs dsyevr)");
  check_close(o, o0, std::string(c.name) + ": overlaps of their eigenvectors with y");
  for (size_t p = 0; p < rp.H; ++p) {
    check(am::scalapack::prekernel_summary(nullptr, *sh, p, ex, b.data(), &lo) == AM_OK, "prekernel_summary");
    if (g_rank == 0) {
      check(am_prekernel(nullptr, c.N0, rp.H, c.P, rp.xi.data(), p, p, K.data(), c.P) == AM_OK, "serial pre-kernel");
      b0 = block_of(K, c.P, ex, &lo0);
    }
    check_close(b, b0, std::string(c.name) + ": path pre-kernel block " + std::to_string(p));
    check_close({lo}, {lo0}, std::string(c.name) + ": path pre-kernel minimum " + std::to_string(p));
  }
  // after the kernels' phase the engine holds no factor: a solve step factors again (the same action as before)
  am_action a1{sizeof a1};
  check(am_theory_action(nullptr, dist, U.data(), &a1, nullptr, nullptr) == AM_OK, "action after the kernels' phase");
  am_theory_destroy(&dist);
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

// agree(): one verdict on every rank — the status and message of the lowest rank that failed, named when it is not
// rank 0. check_node(): the ranks on this node (all of them, under mpirun on one machine) checked together against its
// physical memory: two estimates of 0.3 of it pass, two of 0.6 (1.2 of it together) fail on every rank, with the
// message naming the ranks.
void check_agreement(int size) {
  am_context *ctx = nullptr;
  am_context_create(&ctx, nullptr);
  check(am::scalapack::agree(ctx, AM_OK) == AM_OK, "agree: all passed");
  const am_status mine = g_rank == 1 ? am_context_fail(ctx, AM_ERR_NO_MEMORY, "the share needs 9 GB") : AM_OK;
  const am_status st = am::scalapack::agree(ctx, mine);
  check(st == AM_ERR_NO_MEMORY && std::string(am_context_last_error(ctx)) == "rank 1: the share needs 9 GB",
        std::string("agree: rank 1's failure on every rank: ") + am_context_last_error(ctx));
  const am_status zero = g_rank == 0 ? am_context_fail(ctx, AM_ERR_IO, "rank zero's message") : AM_OK;
  check(am::scalapack::agree(ctx, zero) == AM_ERR_IO && std::string(am_context_last_error(ctx)) == "rank zero's message",
        "agree: rank 0's failure, unprefixed, on every rank");
  unsetenv("AM_MEMORY_LIMIT");
  const double phys = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  check(am::scalapack::check_node(ctx, AM_OK, 0.3 * phys * 2 / size, "the share") == AM_OK, "check_node: fits");
  const am_status nst = am::scalapack::check_node(ctx, AM_OK, 0.6 * phys * 2 / size, "the share");
  check(nst == AM_ERR_NO_MEMORY && std::string(am_context_last_error(ctx)).find("the " + std::to_string(size) +
                                                                                 " ranks on this node together (each "
                                                                                 "the share) needs") == 0,
        std::string("check_node: too much together: ") + am_context_last_error(ctx));
  check(am::scalapack::check_node(ctx, AM_ERR_IO, 1.0, "x") == AM_ERR_IO, "check_node: a rank's own failure stands");
  am_context_destroy(&ctx);
}

// The per-rank memory model (rank_bytes + the handle's own arrays, am_theory_memory_check_engine) against the peak
// RSS of a whole distributed run on rank 1 (rank 0 also holds the serial reference): create, distribute, solve,
// predict Pt inputs, then the kernels' phase (two kernels with 8 components, blocks of 50). P = 2000 on 2 ranks:
// the model counts ≈ P²/K doubles for Γ's storage (16 MB), the predictions' test kernel beside it and the handle's
// copy of ξ; the kernels' phase (the kernel for its blocks, then the eigenpairs from its P × N0·H factor) stays
// below that peak; one whole P×P kernel per rank would count twice as much. The bound [0.85, 1.3]: what the
// model leaves out — MPI's and BLACS's message buffers, the heap's rounding, a few P-sized vectors — measured at
// 1.0x (printed with AM_TEST_VERBOSE); whole P×P matrices on each rank would make the ratio ≤ 0.55.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

void check_memory_model(int size) {
  if (size != 2 || kSanitized) return;  // the sanitizer's allocator and shadow memory are not what the model counts
  const size_t P = 2000, N0 = 4, Pt = 200, k = 8;
  random_problem rp({3}, {20, 40}, {1.0, 1.0, 1.0}, AM_READOUT_LAST, P, N0, 5, 11);
  random_problem test({3}, {20, 40}, {1.0, 1.0, 1.0}, AM_READOUT_LAST, Pt, N0, 5, 12);
  const std::vector<size_t> ex = examples_of(P);
  std::vector<double> b(ex.size() * ex.size()), o(k), e(k), m(Pt), v(Pt);
  double lo = 0, before = 0, peak = 0;
  const bool measured = g_rank == 1 && reset_peak();
  before = status_kib("VmRSS:");
  am_theory *th = nullptr;
  std::shared_ptr<am::scalapack::Shared> sh;
  am_theory_create(nullptr, &th, &rp.arch, P, N0, rp.xi.data(), rp.y.data(), 0.1);
  am::scalapack::distribute(nullptr, th, P, N0, rp.H, rp.xi.data(), rp.y.data(), &sh);
  std::vector<double> U(am_theory_u_size(th));
  am_solve_report rep{sizeof rep};
  const bool ok = am_theory_solve(nullptr, th, nullptr, U.data(), &rep) >= 0 &&
                  am_theory_predict(nullptr, th, U.data(), Pt, test.xi.data(), m.data(), v.data()) == AM_OK;
  const long after_solve = status_kib("VmHWM:");
  am::scalapack::drop_factor(*sh);
  const bool kok = am::scalapack::kernel_summary(nullptr, *sh, U.data(), ex, k, b.data(), &lo, o.data(), e.data()) ==
                   AM_OK;
  peak = status_kib("VmHWM:");
  am_theory_destroy(&th);
  check(ok && kok, "memory model run: solve, predict and kernels");
  if (!measured) return;
  double model = 0;
  am_theory_memory_check_engine(nullptr, &rp.arch, P, N0, Pt, k, 0, 0.0,
                                am::scalapack::rank_bytes(P, N0, rp.H, Pt, false, true, k, 64), "x", &model);
  const double rise = 1024.0 * (peak - before), ratio = rise / model;
  if (std::getenv("AM_TEST_VERBOSE"))
    std::printf("rank 1: peak RSS rise %.1f MB (%.1f MB by the predictions), model %.1f MB, ratio %.3f\n",
                rise / 1e6, 1024.0 * (after_solve - before) / 1e6, model / 1e6, ratio);
  char buf[160];
  std::snprintf(buf, sizeof buf, "rank 1's peak RSS rise / the per-rank model = %.3f (%.1f / %.1f MB) in [0.85, 1.3]",
                ratio, rise / 1e6, model / 1e6);
  check(ratio >= 0.85 && ratio <= 1.3, buf);
}

// A split made in parts (am_context_data_part): rank r holds rows [P·r/K, P·(r+1)/K) of a P × C matrix; gather_rows
// gives every rank the whole, the same bits (nothing is computed: a copy). A rank that failed, and blocks that are not
// consecutive, give every rank an error (no rank waits in the exchange).
void check_gather_rows(int size) {
  const size_t P = 23, C = 5, b = P * size_t(g_rank) / size_t(size), e = P * size_t(g_rank + 1) / size_t(size);
  const auto value = [](size_t i, size_t c) { return double(i) + 1000.0 * double(c) + 0.25; };
  std::vector<double> part((e - b) * C);
  for (size_t c = 0; c < C; ++c)
    for (size_t i = b; i < e; ++i) part[(i - b) + c * (e - b)] = value(i, c);
  double *whole = nullptr;
  am_context *ctx = nullptr;
  am_context_create(&ctx, nullptr);
  am_status st = am::scalapack::gather_rows(ctx, AM_OK, "m", part.data(), e - b, C, b, P, &whole);
  bool same = st == AM_OK && whole;
  for (size_t c = 0; same && c < C; ++c)
    for (size_t i = 0; i < P; ++i) same = same && whole[i + c * P] == value(i, c);
  std::free(whole);
  check(same, "gather_rows: every rank's rows, whole on every rank");
  st = am::scalapack::gather_rows(ctx, g_rank == 1 ? AM_ERR_DOMAIN : AM_OK, "m", part.data(), e - b, C, b, P, &whole);
  check(st == AM_ERR_DOMAIN && !whole, "gather_rows: rank 1's failure is every rank's");
  st = am::scalapack::gather_rows(ctx, AM_OK, "m", part.data(), e - b, C, g_rank == 0 ? 1 : b, P, &whole);
  check(st == AM_ERR_SHAPE && !whole && std::string(am_context_last_error(ctx)).find("consecutive") != std::string::npos,
        "gather_rows: blocks that are not consecutive are refused on every rank");
  am_context_destroy(&ctx);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  mallopt(M_MMAP_THRESHOLD, 1 << 20);  // large blocks mmapped fresh and returned when freed (check_memory_model)
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
  check_agreement(size);
  check_memory_model(size);
  check_gather_rows(size);
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%d checks on %d ranks, %d failed\n", g_checks, size, failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
