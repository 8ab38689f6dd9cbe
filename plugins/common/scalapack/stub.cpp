// attnmech — engine.hpp in a build without ScaLAPACK (-Dscalapack=disabled, or no MPI): nothing distributes, so
// distribute() leaves the handle serial and no kernels' phase or agreement is ever asked for.
#include "engine.hpp"

#include <utility>

#include "executor.hpp"

namespace am::scalapack {

struct Shared {};

bool distributing() { return false; }
int rank() { return 0; }
int ranks() { return 1; }

am_status distribute(am_context *, am_theory *, size_t, size_t, size_t, const double *, const double *,
                     std::shared_ptr<Shared> *share) {
  if (share) share->reset();
  return AM_OK;
}

void drop_factor(Shared &) {}

am_status kernel_summary(am_context *ctx, Shared &, const double *, const std::vector<size_t> &, size_t, double *,
                         double *, double *, double *) {
  return am_context_fail(ctx, AM_ERR_INTERNAL, "built without ScaLAPACK: no distributed kernels");
}

am_status prekernel_summary(am_context *ctx, Shared &, size_t, const std::vector<size_t> &, double *, double *) {
  return am_context_fail(ctx, AM_ERR_INTERNAL, "built without ScaLAPACK: no distributed kernels");
}

double rank_bytes(size_t, size_t, size_t, size_t, bool, bool, size_t, int) { return 0; }

am_status agree(am_context *, am_status mine) { return mine; }

am_status gather_rows(am_context *ctx, am_status mine, const char *what, const double *, size_t rows, size_t,
                      size_t begin, size_t total, double **whole) {
  *whole = nullptr;
  if (mine) return mine;
  return am_context_fail(ctx, AM_ERR_USAGE, "%s holds rows %zu..%zu of %zu (a part of the data, "
                         "am_context_settings.data_part): this build has no MPI/ScaLAPACK to gather the rest",
                         what, begin, begin + rows, total);
}

am_status check_node(am_context *, am_status mine, double, const char *) { return mine; }

std::unique_ptr<am::attention::Executor> distributed_executor(am_context *,
                                                              std::unique_ptr<am::attention::Executor> serial) {
  return serial;
}

}  // namespace am::scalapack
