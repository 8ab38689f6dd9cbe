// attnmech — the theory's P-sized work on ScaLAPACK across the ranks of MPI_COMM_WORLD (docs/scale.md "One solve
// across machines"). Built only with -Dscalapack (AM_SCALAPACK=1); libcore stays BLAS/LAPACK-only and reaches
// the engine through its am_theory_engine seam.
#pragma once
#include <cstddef>

#include "attnmech/theory.h"

namespace am::scalapack {

// MPI is initialised (and not finalised) with more than one rank in MPI_COMM_WORLD, and AM_SCALAPACK is not "0"
// (the sweep's task farm sets it: there every rank solves points of its own).
bool distributing();

// Hand th's factorisations, whitening and predictions to a ScaLAPACK engine over every rank of MPI_COMM_WORLD
// (a block-cyclic grid, each rank holding ≈ 1/K of Γ and of ξ). ξ (P × N0·H) and y (P) are the arrays th was
// created with, the same on every rank. Every rank calls it, in the same order; nothing happens unless
// distributing(). A failure inside the engine that only one rank can see (memory) ends every rank through
// MPI_Abort after one message on stderr, so no rank waits forever in a collective call.
am_status distribute(am_context *ctx, am_theory *th, size_t P, size_t N0, size_t H, const double *xi, const double *y);

}  // namespace am::scalapack
