// attnmech — the whole of a split that every rank made a part of (engine.hpp: gather_rows; docs/scale.md "Each rank
// makes its part of the data"). A task that can make its examples in parts (am_context_data_part) leaves each rank
// with a contiguous block of rows; its path inputs ξ (N0·H_tot values per example, against X's S·N0) are computed
// from that block and gathered here: every rank then holds the whole ξ, as before, and only its own rows of X.
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dist.hpp"
#include "engine.hpp"

namespace am::scalapack {

namespace {

// Every rank's (begin, rows, total, cols), in rank order; the same on every rank.
std::vector<uint64_t> layouts(size_t begin, size_t rows, size_t total, size_t cols) {
  const uint64_t mine[4] = {begin, rows, total, cols};
  std::vector<uint64_t> all(4 * size_t(ranks()));
  MPI_Allgather(mine, 4, MPI_UINT64_T, all.data(), 4, MPI_UINT64_T, MPI_COMM_WORLD);
  return all;
}

// Whether the ranks' blocks are consecutive blocks of rows of one matrix, rank 0 first (the same verdict on every
// rank: they all see the same layouts); its rows and columns.
bool consecutive(const std::vector<uint64_t> &all, size_t *total, size_t *cols) {
  const size_t K = all.size() / 4;
  *total = all[2];
  *cols = all[3];
  uint64_t next = 0;
  for (size_t r = 0; r < K; ++r) {
    if (all[4 * r] != next || all[4 * r + 2] != *total || all[4 * r + 3] != *cols) return false;
    next += all[4 * r + 1];
  }
  return next == *total;
}

}  // namespace

am_status gather_rows(am_context *ctx, am_status mine, const char *what, const double *part, size_t rows, size_t cols,
                      size_t begin, size_t total, double **whole) {
  *whole = nullptr;
  if (!distributing()) {
    if (mine) return mine;
    return am_context_fail(ctx, AM_ERR_USAGE, "%s holds rows %zu..%zu of %zu (a part of the data, "
                           "am_context_settings.data_part) but this process is not one of several MPI ranks",
                           what, begin, begin + rows, total);
  }
  if (am_status st = agree(ctx, mine)) return st;  // a rank that could not make its rows: the others do not wait
  const std::vector<uint64_t> all = layouts(begin, rows, total, cols);
  size_t T = 0, C = 0;
  if (!consecutive(all, &T, &C))
    return am_context_fail(ctx, AM_ERR_SHAPE, "%s: the ranks' parts are not consecutive blocks of rows of one split "
                           "(rank r must hold part r of %d)", what, ranks());
  if (T * C > size_t(INT_MAX))
    return am_context_fail(ctx, AM_ERR_SHAPE, "%s: %zu × %zu values exceed MPI's 32-bit counts", what, T, C);
  const int K = ranks();
  std::vector<int> counts(static_cast<size_t>(K)), displs(static_cast<size_t>(K));
  for (int r = 0, off = 0; r < K; ++r) {
    counts[size_t(r)] = int(all[4 * size_t(r) + 1] * C);
    displs[size_t(r)] = off;
    off += counts[size_t(r)];
  }
  // Each rank's block, column-major with its own rows as leading dimension, back to back in rank order.
  std::vector<double> blocks(T * C);
  MPI_Allgatherv(part, int(rows * cols), MPI_DOUBLE, blocks.data(), counts.data(), displs.data(), MPI_DOUBLE,
                 MPI_COMM_WORLD);
  double *w = static_cast<double *>(std::malloc(T * C * sizeof(double) + 1));
  if (!w) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "%s: out of memory for %zu × %zu values", what, T, C);
  for (int r = 0; r < K; ++r) {
    const size_t b = all[4 * size_t(r)], n = all[4 * size_t(r) + 1];
    const double *src = blocks.data() + size_t(displs[size_t(r)]);
    for (size_t c = 0; c < C; ++c) std::memcpy(w + b + c * T, src + c * n, n * sizeof(double));
  }
  *whole = w;
  return AM_OK;
}

}  // namespace am::scalapack
