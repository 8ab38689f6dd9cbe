// attnmech — the theory's P-sized work on ScaLAPACK across the ranks of MPI_COMM_WORLD (docs/scale.md "One solve
// across machines"). With -Dscalapack (AM_SCALAPACK=1) engine.cpp, dist.cpp, kernels.cpp and executor.cpp; without,
// stub.cpp (nothing distributes). libcore stays BLAS/LAPACK-only and reaches the engine through its am_theory_engine
// seam; the theory estimator reaches it through its executor seam (plugins/common/attention/executor.hpp).
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "attnmech/theory.h"

namespace am::attention {
class Executor;
}

namespace am::scalapack {

// MPI is initialised (and not finalised) with more than one rank in MPI_COMM_WORLD. Always false without
// -Dscalapack. Whether a run may distribute at all is the host's setting (am_context_distribute), read by
// am::attention::make_executor before it asks this.
bool distributing();
// This process's rank in MPI_COMM_WORLD and the number of ranks (0 and 1 when not distributing()).
int rank();
int ranks();

// A distributed run's state (dist.hpp): the grid and this rank's parts of ξ, y and of the engine's last factor.
struct Shared;

// Hand th's factorisations, whitening and predictions to a ScaLAPACK engine over every rank of MPI_COMM_WORLD
// (a block-cyclic grid of blocks of am_context_scalapack_block(ctx), each rank holding ≈ 1/K of Γ and of ξ). ξ
// (P × N0·H) and y (P) are the arrays th was created with, the same on every rank. Every rank calls it, in the same order; nothing happens unless
// distributing(). `share` (may be NULL) gets the engine's state, for the kernels' phase below (empty when not
// distributing). A failure inside the engine that only one rank can see (memory) ends every rank through
// MPI_Abort after one message on stderr, so no rank waits forever in a collective call.
am_status distribute(am_context *ctx, am_theory *th, size_t P, size_t N0, size_t H, const double *xi, const double *y,
                     std::shared_ptr<Shared> *share = nullptr);

// Frees the engine's factor of its last Γ (the solve and the predictions are done; another handle's engine — the
// path subsets' GP — or the kernels' phase needs the memory). The handle's next factorisation makes a new one.
void drop_factor(Shared &s);

// The summaries of one training kernel the results keep, computed block-cyclically (every rank calls it; the same
// bits on every rank): the rows and columns `examples` (ascending) as an m×m block (column-major), the smallest
// element of the whole kernel, and with k > 0 its k leading eigenvalues (decreasing) and the overlaps |v·y|/|y| of
// their eigenvectors with the labels (pdsyevr, index range). K_{U1} for U1 (H×H); the path pre-kernel C^{pp} =
// H_tot·Ξ_p Ξ_pᵀ with prekernel_summary. Both use the storage of the engine's factor (drop_factor is implied).
am_status kernel_summary(am_context *ctx, Shared &s, const double *U1, const std::vector<size_t> &examples, size_t k,
                         double *block, double *min, double *overlaps, double *eigenvalues);
am_status prekernel_summary(am_context *ctx, Shared &s, size_t path, const std::vector<size_t> &examples,
                            double *block, double *min);

// Bytes the engine holds on this rank at its peak in a run of P training and up to Pt test inputs, N0·H columns of
// ξ: its parts of ξ, y, α and Γ always; B̃ and M while the Newton solve whitens; the test kernel while predicting
// (with `subsets`, a path subset's engine beside it); with `kernels` one kernel, the pdsyevr eigenvectors (P × P, as ScaLAPACK
// requires) and its documented workspace for k components. Block-cyclic shares of blocks of `block` rows and columns
// as allocated (numroc). A run without an engine (not distributing) gets the whole matrices' sizes.
double rank_bytes(size_t P, size_t N0, size_t H, size_t Pt, bool subsets, bool kernels, size_t k, int block);

// One verdict for a check every rank made: AM_OK when it passed on all of them; otherwise, on every rank, the status
// and message of the lowest rank it failed on (prefixed "rank r: " when that is not rank 0).
am_status agree(am_context *ctx, am_status mine);

// The ranks that share this node's memory together: with more than one rank on the node, AM_MEMORY_LIMIT unset and
// no address-space limit, the sum of their estimates `bytes` against the node's physical memory (am_memory_check,
// its message naming the ranks). AM_OK otherwise. Every rank calls it.
// `mine` is this rank's own verdict, returned when it failed (the sum is made on every rank all the same).
am_status check_node(am_context *ctx, am_status mine, double bytes, const char *what);

// A matrix (column-major, rows fastest) of which every rank made a part — rank r rows [begin, begin + rows) of
// `total`, the ranks' blocks consecutive in rank order (a split made in parts: am_context_data_part, dataset.h key
// `part`) — whole on every rank: *whole gets total × cols values (malloc; release with free). Every rank calls it,
// with `mine` its own status so far: a failure of any rank is agreed on (agree) before anything is exchanged.
// `what` names the matrix in messages. Not distributing: AM_ERR_USAGE (a part without the ranks that hold the rest).
am_status gather_rows(am_context *ctx, am_status mine, const char *what, const double *part, size_t rows, size_t cols,
                      size_t begin, size_t total, double **whole);

// The distributed executor of a run on ctx (executor.cpp; every rank makes one, in the same order): the engine on
// each handle, the per-rank memory model, the kernels phase block-cyclically; whole kernels go to `serial` on rank
// 0 only. Without -Dscalapack (never asked for: nothing distributes) it returns `serial`.
std::unique_ptr<am::attention::Executor> distributed_executor(am_context *ctx,
                                                              std::unique_ptr<am::attention::Executor> serial);

}  // namespace am::scalapack
