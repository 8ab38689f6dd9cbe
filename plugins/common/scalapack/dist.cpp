// attnmech — the block-cyclic helpers of the ScaLAPACK engine (dist.hpp).
#include "dist.hpp"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace am::scalapack {

const int kOne = 1, kZero = 0;

Grid grid_shape(int ranks, int rank, int nb) {
  Grid g;
  g.nb = nb;
  int r = int(std::sqrt(double(ranks)));
  while (r > 1 && ranks % r != 0) --r;
  g.nprow = std::max(1, r);
  g.npcol = ranks / g.nprow;
  g.rank = rank;
  g.myrow = rank / g.npcol;
  g.mycol = rank % g.npcol;
  return g;
}

Grid make_grid(int nb) {
  int K = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &K);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Grid g = grid_shape(K, rank, nb);
  g.ctxt = Csys2blacs_handle(MPI_COMM_WORLD);
  Cblacs_gridinit(&g.ctxt, "Row", g.nprow, g.npcol);
  Cblacs_gridinfo(g.ctxt, &g.nprow, &g.npcol, &g.myrow, &g.mycol);
  return g;
}

double numroc_d(double n, int block, int iproc, int nprocs) {
  const double nb = block, blocks = std::floor(n / nb), whole = std::floor(blocks / nprocs);
  const double rest = blocks - whole * nprocs;
  return whole * nb + (iproc < rest ? nb : iproc == rest ? n - blocks * nb : 0.0);
}

double local_doubles(const Grid &g, double m, double n) {
  return std::max(1.0, numroc_d(m, g.nb, g.myrow, g.nprow)) * std::max(1.0, numroc_d(n, g.nb, g.mycol, g.npcol));
}

int global_of(int l, int nb, int iproc, int nprocs) {
  return (l / nb) * nb * nprocs + iproc * nb + l % nb;
}

void dist_init(const Grid &g, Dist &d, int m, int n) {
  const int nb = g.nb;
  d.m = m;
  d.n = n;
  d.mloc = numroc_(&m, &nb, &g.myrow, &kZero, &g.nprow);
  d.nloc = numroc_(&n, &nb, &g.mycol, &kZero, &g.npcol);
  d.lld = std::max(1, d.mloc);
  int info = 0;
  descinit_(d.desc, &m, &n, &nb, &nb, &kZero, &kZero, &g.ctxt, &d.lld, &info);
  d.a.assign(size_t(d.lld) * size_t(std::max(1, d.nloc)), 0.0);
}

void scatter(const Grid &g, Dist &d, const double *G, size_t ld) {
  for (int j = 0; j < d.nloc; ++j) {
    const size_t gj = size_t(global_of(j, g.nb, g.mycol, g.npcol));
    for (int i = 0; i < d.mloc; ++i) d.a[i + size_t(j) * d.lld] = G[size_t(global_of(i, g.nb, g.myrow, g.nprow)) + gj * ld];
  }
}

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

void gather(const Grid &g, const Dist &d, double *G, bool lower) {
  std::fill(G, G + size_t(d.m) * size_t(d.n), 0.0);
  for (int j = 0; j < d.nloc; ++j) {
    const size_t gj = size_t(global_of(j, g.nb, g.mycol, g.npcol));
    for (int i = 0; i < d.mloc; ++i) {
      const size_t gi = size_t(global_of(i, g.nb, g.myrow, g.nprow));
      if (!lower || gi >= gj) G[gi + gj * size_t(d.m)] = d.a[i + size_t(j) * d.lld];
    }
  }
  sum_all(G, size_t(d.m) * size_t(d.n));
  if (lower)
    for (size_t j = 0; j < size_t(d.n); ++j)
      for (size_t i = 0; i < j; ++i) G[i + j * size_t(d.m)] = G[j + i * size_t(d.m)];
}

Shared::~Shared() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && g.ctxt >= 0) Cblacs_gridexit(g.ctxt);
}

void combine_paths(const Shared &e, const double *W, bool lower, Dist &Z) {
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

bool u_cholesky(const Shared &e, const double *U1, std::vector<double> *L) {
  L->assign(U1, U1 + size_t(e.H) * e.H);
  return LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', e.H, L->data(), e.H) == 0;
}

void build_kernel(const Shared &e, const double *U1, Dist &K) {
  std::vector<double> L;
  const bool pd = u_cholesky(e, U1, &L);
  dist_init(e.g, K, e.P, e.P);
  Dist Z;  // K_U = Z_w Z_wᵀ with U1 = L Lᵀ (a SYRK), or Z_w Ξ_wᵀ for an indefinite U1 (as the serial kernel)
  combine_paths(e, pd ? L.data() : U1, pd, Z);
  const double one = 1.0, zero = 0.0;
  if (pd)
    pdsyrk_("L", "N", &e.P, &e.NH, &one, Z.a.data(), &kOne, &kOne, Z.desc, &zero, K.a.data(), &kOne, &kOne, K.desc);
  else
    pdgemm_("N", "T", &e.P, &e.P, &e.NH, &one, Z.a.data(), &kOne, &kOne, Z.desc, e.xi.a.data(), &kOne, &kOne,
            e.xi.desc, &zero, K.a.data(), &kOne, &kOne, K.desc);
}

void abort_world(const char *what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "attnmech: error: rank %d: the distributed theory solve failed: %s\n", rank, what);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

}  // namespace am::scalapack
