// RAII: run OpenBLAS single-threaded inside a scope (restored afterwards). The simulations and the
// per-site eigendecompositions are many small factorisations, where BLAS threads only add overhead
// (and contention on shared machines); one thread also makes the results bitwise reproducible.
#ifndef ATTNMECH_REPLICA_BLAS_SINGLE_H
#define ATTNMECH_REPLICA_BLAS_SINGLE_H

#include <cblas.h>

namespace replica {

class BlasSingleThread {
 public:
  BlasSingleThread() : saved_(openblas_get_num_threads()) { openblas_set_num_threads(1); }
  ~BlasSingleThread() { openblas_set_num_threads(saved_); }
  BlasSingleThread(const BlasSingleThread &) = delete;
  BlasSingleThread &operator=(const BlasSingleThread &) = delete;

 private:
  int saved_;
};

}  // namespace replica

#endif
