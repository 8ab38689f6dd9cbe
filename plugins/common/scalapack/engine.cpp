// attnmech — the ScaLAPACK engine of the theory (engine.hpp). Γ, ξ, B̃ = L⁻¹Ξ_w and the test kernel are
// block-cyclic over a BLACS grid of all ranks (the squarest nprow × npcol = K); the small results the Newton solve
// needs (log det Γ, yᵀα, b = Ξ_wᵀα, M = B̃ᵀB̃, the predictions) are summed on rank 0 and broadcast, so every rank
// holds the same bits and takes the same Newton steps.
#include "engine.hpp"

#define OMPI_SKIP_MPICXX 1  // the C API only (the C++ bindings warn under -Wextra)
#define MPICH_SKIP_MPICXX 1
#include <lapacke.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <vector>

extern "C" {
int Csys2blacs_handle(MPI_Comm comm);
void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int ctxt);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb, const int *irsrc, const int *icsrc,
               const int *ictxt, const int *lld, int *info);
// PBLAS (C, no hidden string lengths)
void pdgeadd_(const char *trans, const int *m, const int *n, const double *alpha, const double *a, const int *ia,
              const int *ja, const int *desca, const double *beta, double *c, const int *ic, const int *jc,
              const int *descc);
void pdsyrk_(const char *uplo, const char *trans, const int *n, const int *k, const double *alpha, const double *a,
             const int *ia, const int *ja, const int *desca, const double *beta, double *c, const int *ic, const int *jc,
             const int *descc);
void pdgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const double *alpha,
             const double *a, const int *ia, const int *ja, const int *desca, const double *b, const int *ib,
             const int *jb, const int *descb, const double *beta, double *c, const int *ic, const int *jc,
             const int *descc);
void pdtrsm_(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
             const double *alpha, const double *a, const int *ia, const int *ja, const int *desca, double *b,
             const int *ib, const int *jb, const int *descb);
// ScaLAPACK (Fortran: the lengths of the character arguments follow)
void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja, const int *desca, int *info,
              size_t uplo_len);
void pdpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *ia, const int *ja,
              const int *desca, double *b, const int *ib, const int *jb, const int *descb, int *info, size_t uplo_len);
}

namespace am::scalapack {

namespace {

// Square blocks of kBlock rows and columns (AM_SCALAPACK_BLOCK overrides it, 8–1024): ScaLAPACK's usual range is
// 32–256; 64 keeps a panel in cache and still spreads P = 1000 over a 4×4 grid.
int block_from_env() {
  const char *b = std::getenv("AM_SCALAPACK_BLOCK");
  return b ? std::clamp(std::atoi(b), 8, 1024) : 64;
}
const int kBlock = block_from_env();
const int kOne = 1, kZero = 0;

struct Grid {
  int ctxt = -1, nprow = 1, npcol = 1, myrow = 0, mycol = 0, rank = 0;
};

// A block-cyclic m × n matrix: this rank's part (column-major, leading dimension lld) and its descriptor.
struct Dist {
  int m = 0, n = 0, mloc = 0, nloc = 0, lld = 1;
  int desc[9] = {};
  std::vector<double> a;
};

// Local index → global index along one dimension (source process 0).
int global_of(int l, int iproc, int nprocs) { return (l / kBlock) * kBlock * nprocs + iproc * kBlock + l % kBlock; }

void dist_init(const Grid &g, Dist &d, int m, int n) {  // kBlock × kBlock blocks
  d.m = m;
  d.n = n;
  d.mloc = numroc_(&m, &kBlock, &g.myrow, &kZero, &g.nprow);
  d.nloc = numroc_(&n, &kBlock, &g.mycol, &kZero, &g.npcol);
  d.lld = std::max(1, d.mloc);
  int info = 0;
  descinit_(d.desc, &m, &n, &kBlock, &kBlock, &kZero, &kZero, &g.ctxt, &d.lld, &info);
  d.a.assign(size_t(d.lld) * size_t(std::max(1, d.nloc)), 0.0);
}

// This rank's part of a matrix every rank holds whole (column-major, leading dimension ld).
void scatter(const Grid &g, Dist &d, const double *G, size_t ld) {
  for (int j = 0; j < d.nloc; ++j) {
    const size_t gj = size_t(global_of(j, g.mycol, g.npcol));
    for (int i = 0; i < d.mloc; ++i) d.a[i + size_t(j) * d.lld] = G[size_t(global_of(i, g.myrow, g.nprow)) + gj * ld];
  }
}

// The same sum on every rank: reduced on rank 0 in a fixed order, then broadcast (an all-reduce may add in a
// different order on different ranks, and ranks whose numbers differ in the last bit could take different steps).
void sum_all(double *v, size_t n) {
  for (size_t off = 0; off < n;) {
    const int c = int(std::min<size_t>(n - off, size_t(1) << 28));
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Reduce(rank == 0 ? MPI_IN_PLACE : v + off, v + off, c, MPI_DOUBLE, MPI_SUM, 0, comm);
    MPI_Bcast(v + off, c, MPI_DOUBLE, 0, comm);
    off += size_t(c);
  }
}

// The whole matrix (m × n, ld m) on every rank; `lower`: only the lower triangle, mirrored.
void gather(const Grid &g, const Dist &d, double *G, bool lower) {
  std::fill(G, G + size_t(d.m) * size_t(d.n), 0.0);
  for (int j = 0; j < d.nloc; ++j) {
    const size_t gj = size_t(global_of(j, g.mycol, g.npcol));
    for (int i = 0; i < d.mloc; ++i) {
      const size_t gi = size_t(global_of(i, g.myrow, g.nprow));
      if (!lower || gi >= gj) G[gi + gj * size_t(d.m)] = d.a[i + size_t(j) * d.lld];
    }
  }
  sum_all(G, size_t(d.m) * size_t(d.n));
  if (lower)
    for (size_t j = 0; j < size_t(d.n); ++j)
      for (size_t i = 0; i < j; ++i) G[i + j * size_t(d.m)] = G[j + i * size_t(d.m)];
}

// f(local row, local column) for every diagonal entry of a square matrix that this rank holds.
template <class F>
void for_diagonal(const Grid &g, const Dist &d, F &&f) {
  for (int j = 0; j < d.nloc; j += kBlock) {  // a diagonal block: global column block = global row block
    const int gb = global_of(j, g.mycol, g.npcol) / kBlock;
    if (gb % g.nprow != g.myrow) continue;
    const int i0 = (gb / g.nprow) * kBlock;
    for (int k = 0; k < kBlock && j + k < d.nloc && i0 + k < d.mloc; ++k) f(i0 + k, j + k);
  }
}

struct Engine {
  Grid g;
  int P = 0, N0 = 0, H = 0, NH = 0;
  Dist xi, y, gamma, alpha;  // ξ (P × N0·H), y, Γ's factor and α (P × 1)
};

// Z_w = Ξ_w (W ⊗ I_N0): column block ρ (N0 wide) = Σ_π W_πρ Ξ_π; W lower triangular when `lower`.
void combine_paths(const Engine &e, const double *W, bool lower, Dist &Z) {
  dist_init(e.g, Z, e.P, e.NH);
  for (int r = 0; r < e.H; ++r) {
    bool first = true;
    for (int p = lower ? r : 0; p < e.H; ++p) {
      const double w = W[p + size_t(r) * e.H], beta = first ? 0.0 : 1.0;
      const int ja = 1 + e.N0 * p, jc = 1 + e.N0 * r;
      pdgeadd_("N", &e.P, &e.N0, &w, e.xi.a.data(), &kOne, &ja, e.xi.desc, &beta, Z.a.data(), &kOne, &jc, Z.desc);
      first = false;
    }
  }
}

// Γ = K_{U1} + T·I into e.gamma (lower triangle), factored; log det Γ. AM_ERR_SINGULAR as the serial path says it.
am_status factor_gamma(am_context *ctx, Engine &e, const double *U1, double T, double *logdet) {
  std::vector<double> L(U1, U1 + size_t(e.H) * e.H);
  const bool pd = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', e.H, L.data(), e.H) == 0;
  dist_init(e.g, e.gamma, e.P, e.P);
  {
    Dist Z;  // K_U = Z_w Z_wᵀ with U1 = L Lᵀ (a SYRK), or Z_w Ξ_wᵀ for an indefinite U1 (as the serial kernel)
    combine_paths(e, pd ? L.data() : U1, pd, Z);
    const double one = 1.0, zero = 0.0;
    if (pd)
      pdsyrk_("L", "N", &e.P, &e.NH, &one, Z.a.data(), &kOne, &kOne, Z.desc, &zero, e.gamma.a.data(), &kOne, &kOne,
              e.gamma.desc);
    else
      pdgemm_("N", "T", &e.P, &e.P, &e.NH, &one, Z.a.data(), &kOne, &kOne, Z.desc, e.xi.a.data(), &kOne, &kOne,
              e.xi.desc, &zero, e.gamma.a.data(), &kOne, &kOne, e.gamma.desc);
  }
  Dist &G = e.gamma;
  for_diagonal(e.g, G, [&](int i, int j) { G.a[i + size_t(j) * G.lld] += T; });
  int info = 0;
  pdpotrf_("L", &e.P, G.a.data(), &kOne, &kOne, G.desc, &info, 1);
  int worst = info;  // pdpotrf's INFO, made the same on every rank
  MPI_Allreduce(&info, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst != 0)
    return worst > 0 ? am_context_fail(ctx, AM_ERR_SINGULAR, "K_U + T·I is not positive definite at T = %g (the kernel "
                                       "is numerically singular; raise T)", T)
                     : am_context_fail(ctx, AM_ERR_INTERNAL, "ScaLAPACK pdpotrf refused argument %d", -worst);
  double s = 0;
  for_diagonal(e.g, G, [&](int i, int j) { s += std::log(G.a[i + size_t(j) * G.lld]); });
  sum_all(&s, 1);
  *logdet = 2 * s;
  return AM_OK;
}

// α = Γ⁻¹y from the factor, and yᵀα.
void solve_alpha(Engine &e, double *y_alpha) {
  dist_init(e.g, e.alpha, e.P, 1);
  e.alpha.a = e.y.a;
  int info = 0;
  pdpotrs_("L", &e.P, &kOne, e.gamma.a.data(), &kOne, &kOne, e.gamma.desc, e.alpha.a.data(), &kOne, &kOne,
           e.alpha.desc, &info, 1);
  double s = 0;
  for (int i = 0; i < e.alpha.mloc && e.alpha.nloc > 0; ++i) s += e.y.a[i] * e.alpha.a[i];
  sum_all(&s, 1);
  *y_alpha = s;
}

// A failure only this rank sees (memory): one message, then every rank ends.
[[noreturn]] void abort_world(const char *what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "attnmech: error: rank %d: the distributed theory solve failed: %s\n", rank, what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

template <class F>
am_status guarded(F &&f) {
  try {
    return f();
  } catch (const std::bad_alloc &) {
    abort_world("out of memory");
  } catch (const std::exception &x) {
    abort_world(x.what());
  }
}

am_status engine_factor(void *user, am_context *ctx, const double *U1, double T, double *logdet, double *y_alpha) {
  return guarded([&]() -> am_status {
    Engine &e = *static_cast<Engine *>(user);
    if (am_status st = factor_gamma(ctx, e, U1, T, logdet)) return st;
    solve_alpha(e, y_alpha);
    return AM_OK;
  });
}

am_status engine_whiten(void *user, am_context *, double *b, double *M) {
  return guarded([&]() -> am_status {
    Engine &e = *static_cast<Engine *>(user);
    const double one = 1.0, zero = 0.0;
    {
      Dist Bt = e.xi, Md;  // B̃ = L⁻¹Ξ_w, then M = B̃ᵀB̃
      pdtrsm_("L", "L", "N", "N", &e.P, &e.NH, &one, e.gamma.a.data(), &kOne, &kOne, e.gamma.desc, Bt.a.data(), &kOne,
              &kOne, Bt.desc);
      dist_init(e.g, Md, e.NH, e.NH);
      pdsyrk_("L", "T", &e.NH, &e.P, &one, Bt.a.data(), &kOne, &kOne, Bt.desc, &zero, Md.a.data(), &kOne, &kOne,
              Md.desc);
      Bt = Dist();
      gather(e.g, Md, M, true);
    }
    Dist bd;
    dist_init(e.g, bd, e.NH, 1);
    pdgemm_("T", "N", &e.NH, &kOne, &e.P, &one, e.xi.a.data(), &kOne, &kOne, e.xi.desc, e.alpha.a.data(), &kOne, &kOne,
            e.alpha.desc, &zero, bd.a.data(), &kOne, &kOne, bd.desc);
    gather(e.g, bd, b, false);
    return AM_OK;
  });
}

// mean = kᵀα and quad_t = |L⁻¹k_t|², k = Z_w Ξtest_wᵀ with Z_w = Ξ_w (U1 ⊗ I) (P × Pt, block-cyclic).
void predict_from_factor(Engine &e, const double *U1, int Pt, const double *xi_test, double *mean, double *quad) {
  const double one = 1.0, zero = 0.0;
  Dist k;
  dist_init(e.g, k, e.P, Pt);
  {
    Dist Z, Xt;
    combine_paths(e, U1, false, Z);
    dist_init(e.g, Xt, Pt, e.NH);
    scatter(e.g, Xt, xi_test, size_t(Pt));
    pdgemm_("N", "T", &e.P, &Pt, &e.NH, &one, Z.a.data(), &kOne, &kOne, Z.desc, Xt.a.data(), &kOne, &kOne, Xt.desc,
            &zero, k.a.data(), &kOne, &kOne, k.desc);
  }
  Dist md;
  dist_init(e.g, md, Pt, 1);
  pdgemm_("T", "N", &Pt, &kOne, &e.P, &one, k.a.data(), &kOne, &kOne, k.desc, e.alpha.a.data(), &kOne, &kOne,
          e.alpha.desc, &zero, md.a.data(), &kOne, &kOne, md.desc);
  gather(e.g, md, mean, false);
  pdtrsm_("L", "L", "N", "N", &e.P, &Pt, &one, e.gamma.a.data(), &kOne, &kOne, e.gamma.desc, k.a.data(), &kOne, &kOne,
          k.desc);
  std::fill(quad, quad + Pt, 0.0);
  for (int j = 0; j < k.nloc; ++j) {
    double s = 0;
    for (int i = 0; i < k.mloc; ++i) s += k.a[i + size_t(j) * k.lld] * k.a[i + size_t(j) * k.lld];
    quad[global_of(j, e.g.mycol, e.g.npcol)] = s;
  }
  sum_all(quad, size_t(Pt));
}

am_status engine_predict(void *user, am_context *ctx, const double *U1, double T, size_t Pt, const double *xi_test,
                         double *mean, double *quad) {
  return guarded([&]() -> am_status {
    Engine &e = *static_cast<Engine *>(user);
    if (Pt > size_t(1) << 30)
      return am_context_fail(ctx, AM_ERR_SHAPE, "%zu test inputs: the distributed predictor takes at most 2^30", Pt);
    double logdet = 0, ya = 0;
    if (am_status st = factor_gamma(ctx, e, U1, T, &logdet)) return st;
    solve_alpha(e, &ya);
    predict_from_factor(e, U1, int(Pt), xi_test, mean, quad);
    return AM_OK;
  });
}

void engine_release(void *user) {
  Engine *e = static_cast<Engine *>(user);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && e->g.ctxt >= 0) Cblacs_gridexit(e->g.ctxt);
  delete e;
}

// The squarest grid nprow × npcol = K (nprow ≤ npcol).
Grid make_grid() {
  Grid g;
  int K = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &K);
  MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
  int r = int(std::sqrt(double(K)));
  while (r > 1 && K % r != 0) --r;
  g.ctxt = Csys2blacs_handle(MPI_COMM_WORLD);
  Cblacs_gridinit(&g.ctxt, "Row", r, K / r);
  Cblacs_gridinfo(g.ctxt, &g.nprow, &g.npcol, &g.myrow, &g.mycol);
  return g;
}

}  // namespace

bool distributing() {
  if (const char *v = std::getenv("AM_SCALAPACK"); v && std::strcmp(v, "0") == 0) return false;
  int init = 0, fin = 0, size = 1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return false;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size > 1;
}

am_status distribute(am_context *ctx, am_theory *th, size_t P, size_t N0, size_t H, const double *xi, const double *y) {
  if (!distributing()) return AM_OK;
  const size_t kMax = 0x7fffffff;
  if (P > kMax || N0 * H > kMax)
    return am_context_fail(ctx, AM_ERR_SHAPE, "P = %zu or N0·H = %zu exceeds ScaLAPACK's 32-bit dimensions", P, N0 * H);
  Engine *e = nullptr;
  guarded([&]() -> am_status {
    e = new Engine;
    e->g = make_grid();
    e->P = int(P);
    e->N0 = int(N0);
    e->H = int(H);
    e->NH = int(N0 * H);
    dist_init(e->g, e->xi, e->P, e->NH);
    scatter(e->g, e->xi, xi, P);
    dist_init(e->g, e->y, e->P, 1);
    scatter(e->g, e->y, y, P);
    return AM_OK;
  });
  am_theory_engine eng{};
  eng.struct_size = sizeof eng;
  eng.user = e;
  eng.factor = &engine_factor;
  eng.whiten = &engine_whiten;
  eng.predict = &engine_predict;
  eng.release = &engine_release;
  const am_status st = am_theory_set_engine(ctx, th, &eng);
  if (st) engine_release(e);
  return st;
}

}  // namespace am::scalapack
