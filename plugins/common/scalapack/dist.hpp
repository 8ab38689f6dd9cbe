// attnmech — what the ScaLAPACK engine (engine.cpp) and the kernels' phase (kernels.cpp) share: the BLACS grid of
// every rank, block-cyclic matrices, the ScaLAPACK/PBLAS prototypes they call, and a run's distributed state.
// Internal to plugins/common/scalapack.
#pragma once
#define OMPI_SKIP_MPICXX 1  // the C API only (the C++ bindings warn under -Wextra)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstddef>
#include <exception>
#include <new>
#include <vector>

#include "attnmech/theory.h"

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
void pdsyevr_(const char *jobz, const char *range, const char *uplo, const int *n, double *a, const int *ia,
              const int *ja, const int *desca, const double *vl, const double *vu, const int *il, const int *iu, int *m,
              int *nz, double *w, double *z, const int *iz, const int *jz, const int *descz, double *work,
              const int *lwork, int *iwork, const int *liwork, int *info, size_t jobz_len, size_t range_len,
              size_t uplo_len);
void pdgeqrf_(const int *m, const int *n, double *a, const int *ia, const int *ja, const int *desca, double *tau,
              double *work, const int *lwork, int *info);
void pdormqr_(const char *side, const char *trans, const int *m, const int *n, const int *k, const double *a,
              const int *ia, const int *ja, const int *desca, const double *tau, double *c, const int *ic, const int *jc,
              const int *descc, double *work, const int *lwork, int *info, size_t side_len, size_t trans_len);
void pdlacpy_(const char *uplo, const int *m, const int *n, const double *a, const int *ia, const int *ja,
              const int *desca, double *b, const int *ib, const int *jb, const int *descb, size_t uplo_len);
}

namespace am::scalapack {

extern const int kOne, kZero;

// A BLACS grid and its square blocks of nb rows and columns (the host's setting am_context_scalapack_block, 8–1024,
// default 64: ScaLAPACK's usual range is 32–256; 64 keeps a panel in cache and still spreads P = 1000 over a 4×4 grid).
struct Grid {
  int ctxt = -1, nprow = 1, npcol = 1, myrow = 0, mycol = 0, rank = 0, nb = 64;
};
// The squarest grid nprow × npcol = K over MPI_COMM_WORLD (nprow ≤ npcol), ranks in row order (rank = row·npcol +
// column), blocks of nb. grid_shape gives this rank's place without creating the grid (for the memory model).
Grid make_grid(int nb);
Grid grid_shape(int ranks, int rank, int nb);

// A block-cyclic m × n matrix: this rank's part (column-major, leading dimension lld) and its descriptor.
struct Dist {
  int m = 0, n = 0, mloc = 0, nloc = 0, lld = 1;
  int desc[9] = {};
  std::vector<double> a;
};
// numroc in doubles (the memory model's sizes may exceed an int): the rows (or columns) of n that process iproc of
// nprocs holds, blocks of nb dealt from process 0.
double numroc_d(double n, int nb, int iproc, int nprocs);
// Doubles dist_init allocates on this rank for an m × n matrix.
double local_doubles(const Grid &g, double m, double n);
// Local index → global index along one dimension (blocks of nb, source process 0).
int global_of(int l, int nb, int iproc, int nprocs);
void dist_init(const Grid &g, Dist &d, int m, int n);
// This rank's part of a matrix every rank holds whole (column-major, leading dimension ld).
void scatter(const Grid &g, Dist &d, const double *G, size_t ld);
// The same sum on every rank: reduced on rank 0 in a fixed order, then broadcast (an all-reduce may add in a
// different order on different ranks, and ranks whose numbers differ in the last bit could take different steps).
void sum_all(double *v, size_t n);
// The whole matrix (m × n, ld m) on every rank; `lower`: only the lower triangle, mirrored.
void gather(const Grid &g, const Dist &d, double *G, bool lower);

// A run's distributed state: the grid, this rank's parts of ξ (P × N0·H) and y, and of Γ's factor and α = Γ⁻¹y
// while `factored` (the engine's last factorisation; the kernels' phase reuses Γ's storage and clears it).
struct Shared {
  Grid g;
  int P = 0, N0 = 0, H = 0, NH = 0;
  Dist xi, y, gamma, alpha;
  bool factored = false;
  // The point of the factor while `factored` — U1 (H×H) and T — and what it gave: log det Γ and yᵀα. A factorisation
  // or prediction at the same point (the same bits on every rank) uses it as it is.
  std::vector<double> at_U1;
  double at_T = 0, logdet = 0, y_alpha = 0;
  Shared() = default;
  Shared(const Shared &) = delete;
  Shared &operator=(const Shared &) = delete;
  ~Shared();
};

// Z_w = Ξ_w (W ⊗ I_N0) into Z (P × N0·H): column block ρ (N0 wide) = Σ_π W_πρ Ξ_π; W lower triangular when `lower`.
void combine_paths(const Shared &e, const double *W, bool lower, Dist &Z);
// K_{U1} = Ξ_w (U1 ⊗ I_N0) Ξ_wᵀ into K (P × P; the lower triangle and diagonal are the kernel's).
// L with U1 = L Lᵀ in its lower triangle (the same bits on every rank), or false when U1 is not numerically positive
// definite.
bool u_cholesky(const Shared &e, const double *U1, std::vector<double> *L);
void build_kernel(const Shared &e, const double *U1, Dist &K);
// f(local row, local column) for every diagonal entry of a square matrix that this rank holds.
template <class F>
void for_diagonal(const Grid &g, const Dist &d, F &&f) {
  const int nb = g.nb;
  for (int j = 0; j < d.nloc; j += nb) {  // a diagonal block: global column block = global row block
    const int gb = global_of(j, nb, g.mycol, g.npcol) / nb;
    if (gb % g.nprow != g.myrow) continue;
    const int i0 = (gb / g.nprow) * nb;
    for (int k = 0; k < nb && j + k < d.nloc && i0 + k < d.mloc; ++k) f(i0 + k, j + k);
  }
}
// A failure only this rank sees (memory): one message on stderr, then every rank ends (MPI_Abort).
[[noreturn]] void abort_world(const char *what);
// f() with std::bad_alloc and other exceptions ending every rank through abort_world.
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

}  // namespace am::scalapack
