// The distributed executor (plugins/common/scalapack/executor.cpp) against the serial one, under `mpirun -np 2`:
// the theory estimator's whole record of a run with a temperature scan, validation selection, path subsets and the
// kernels phase, distributed (the context's AM_DISTRIBUTE_AUTO) and serial (AM_DISTRIBUTE_OFF, on every rank), on a
// block-cyclic layout of 16×16 blocks (the context's scalapack_block) so both ranks hold parts of every matrix.
//   1. The same keys in the same order, the same strings (solver status, selected_by), the same selected temperature,
//      every number within 1e-9 × the largest of its list or array (the bound of tests/scalapack/test_distributed.cpp:
//      the distributed path adds the same products in another order), iteration counts at most one apart.
//   2. Blocks (kernels=blocks): the distributed record is the same bits on both ranks. Whole kernels (kernels=full):
//      rank 0 alone makes them (the rank-0 rule) — its record as above, rank 1's without kernels or alignment.
//   3. The setting turns distribution off: make_executor gives the serial executor (its memory message names no
//      rank's share), and rank 1 runs a whole estimate alone with AM_DISTRIBUTE_OFF while rank 0 does nothing: a run
//      that still distributed would wait forever in its first collective call (the test's timeout). The serial
//      records of the two ranks are the same bits.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../attention/random_dataset.hpp"
#include "engine.hpp"
#include "estimate.hpp"
#include "executor.hpp"

namespace {

int g_rank = 0, g_failures = 0, g_checks = 0;

void check(bool ok, const std::string &what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  std::fprintf(stderr, "FAIL (rank %d): %s\n", g_rank, what.c_str());
}

struct Context {
  am_context *c = nullptr;
  Context(int distribute, int block) {
    am_context_settings s;
    am_context_default_settings(&s);
    s.distribute = distribute;
    s.scalapack_block = block;
    am_context_create(&c, &s);
  }
  ~Context() { am_context_destroy(&c); }
};

struct Record {
  am_record *r = nullptr;
  Record() { am_record_create(&r); }
  ~Record() { am_record_destroy(&r); }
};

am_status run(const Context &ctx, const am_record *ds, bool full, Record *out) {
  Record inputs;
  am::attention::Options opt;
  opt.alignment_k = 5;
  opt.store_kernels = true;
  opt.full_kernels = full;
  return am::attention::estimate(ctx.c, ds, inputs.r, opt, out->r);
}

void expect_close(const am_record *a, const am_record *b, const std::string &what) {
  std::vector<std::string> diffs;
  am_test::compare_records(a, b, "run", "", am_test::Tolerance{false, 1e-9}, &diffs);
  for (const auto &d : diffs) check(false, what + ": " + d);
  check(diffs.empty(), what + ": distributed record within 1e-9 of the serial one");
}

// Every number of a record in order, for a comparison of its bits across ranks.
void flatten(const am_record *r, std::vector<double> *out) {
  switch (am_record_type_of(r)) {
    case AM_REC_NUMBER: out->push_back(am_record_number(r)); return;
    case AM_REC_ARRAY: {
      am_array_view v;
      am_record_array(r, &v);
      const std::vector<double> n = am_test::view_numbers(v);
      out->insert(out->end(), n.begin(), n.end());
      return;
    }
    case AM_REC_OBJECT:
    case AM_REC_LIST:
      for (size_t i = 0; i < am_record_size(r); ++i) {
        const char *k = am_record_type_of(r) == AM_REC_OBJECT ? am_record_key(r, i) : nullptr;
        if (!k || std::strcmp(k, "seconds") != 0) flatten(am_record_at(r, i), out);
      }
      return;
    default: return;
  }
}

bool same_bits_on_every_rank(const am_record *r) {
  std::vector<double> mine, zero;
  flatten(r, &mine);
  int n = int(mine.size()), n0 = n;
  MPI_Bcast(&n0, 1, MPI_INT, 0, MPI_COMM_WORLD);
  zero = mine;
  zero.resize(size_t(n0));
  MPI_Bcast(zero.data(), n0, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int same = n == n0 && std::memcmp(zero.data(), mine.data(), mine.size() * sizeof(double)) == 0, all = 0;
  MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

void check_blocks(const am_record *ds, const Context &off, const Context &dist) {
  Record s, d;
  check(run(off, ds, false, &s) == AM_OK, "serial run (kernels=blocks)");
  check(run(dist, ds, false, &d) == AM_OK, "distributed run (kernels=blocks)");
  expect_close(d.r, s.r, "kernels=blocks");
  check(am_record_number(am_record_get(d.r, "temperature")) == am_record_number(am_record_get(s.r, "temperature")),
        "the same temperature selected on validation");
  check(am_record_get(d.r, "kernels") && am_record_get(d.r, "alignment"), "kernel blocks and alignment stored");
  check(same_bits_on_every_rank(d.r), "kernels=blocks: the distributed record is the same bits on both ranks");
  check(same_bits_on_every_rank(s.r), "the serial record (AM_DISTRIBUTE_OFF) is the same bits on both ranks");
}

void check_whole(const am_record *ds, const Context &off, const Context &dist) {
  Record s, d;
  check(run(off, ds, true, &s) == AM_OK, "serial run (kernels=full)");
  check(run(dist, ds, true, &d) == AM_OK, "distributed run (kernels=full)");
  if (g_rank == 0) {
    expect_close(d.r, s.r, "kernels=full, rank 0");
  } else {
    check(!am_record_get(d.r, "kernels") && !am_record_get(d.r, "alignment"),
          "kernels=full: a rank other than 0 makes no kernels");
    check(am_record_get(d.r, "gp_subsets") && am_record_get(d.r, "temperature_scan"), "… but all the rest");
  }
}

void check_off(const am_record *ds, const Context &off, const Context &dist) {
  check(am::attention::make_executor(off.c)->share().empty(), "AM_DISTRIBUTE_OFF: the serial executor");
  check(am::attention::make_executor(dist.c)->share() == ", this rank's share of 2 ranks",
        "AM_DISTRIBUTE_AUTO under 2 ranks: the distributed executor");
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 1) {  // alone: a collective call would never return
    Record s;
    check(run(off, ds, false, &s) == AM_OK && am_record_get(s.r, "kernels"), "rank 1 alone, AM_DISTRIBUTE_OFF");
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2 || !am::scalapack::distributing()) {
    if (g_rank == 0) std::fprintf(stderr, "run under mpirun -np 2\n");
    MPI_Finalize();
    return 2;
  }
  am_record *ds = am_test::random_dataset(90, 40, 40, 3);
  const Context off(AM_DISTRIBUTE_OFF, 16), dist(AM_DISTRIBUTE_AUTO, 16);
  check(ds && off.c && dist.c, "dataset and contexts");
  check_off(ds, off, dist);
  check_blocks(ds, off, dist);
  check_whole(ds, off, dist);
  am_record_destroy(&ds);
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) std::printf("%d checks on %d ranks, %d failed\n", g_checks, size, failures);
  MPI_Finalize();
  return failures ? 1 : 0;
}
