// attnmech sweep — built without MPI: the farm entry points say so (tools/sweep/meson.build picks this file
// when Meson does not find MPI; farm_mpi.cpp otherwise).
#include "sweep.hpp"

#include <cstdlib>

namespace am::sweep {

bool mpi_start(int *, char ***, int *rank, int *size) {
  *rank = 0;
  *size = 1;
  return false;
}
void mpi_stop() {}
int mpi_node_ranks() { return 1; }
void mpi_abort(int code) { std::exit(code); }
bool mpi_agree(int code, double, int *worst, int *first) {
  *worst = code;
  *first = code ? 0 : 1;
  return true;
}
bool mpi_stop_round(bool, int signal, bool failed, double, StopState *out) {
  out->signal = signal;
  out->failed_rank = failed ? 0 : -1;
  out->rank0_failed = failed;
  out->all_ended = true;
  return true;
}
std::vector<Result> run_mpi(const am_registry *, const Spec &, const std::vector<Point> &, const std::vector<size_t> &,
                            const std::string &, bool, bool, bool, int, int) {
  throw SweepError("this attnmech was built without MPI");
}

}  // namespace am::sweep
