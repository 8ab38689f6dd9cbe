// RAII: run BLAS single-threaded inside a scope (restored afterwards), through libcore's one BLAS-thread
// control (am_blas_threads_set, which the host also offers plugins). The simulations and the per-site
// eigendecompositions are many small factorisations, where BLAS threads only add overhead (and contention on
// shared machines); one thread also makes the results bitwise reproducible.
#ifndef ATTNMECH_REPLICA_BLAS_SINGLE_H
#define ATTNMECH_REPLICA_BLAS_SINGLE_H

#include <attnmech/context.h>

namespace replica {

class BlasSingleThread {
 public:
  BlasSingleThread() : saved_(am_blas_threads_set(1)) {}
  ~BlasSingleThread() {
    if (saved_ > 0) am_blas_threads_set(saved_);
  }
  BlasSingleThread(const BlasSingleThread &) = delete;
  BlasSingleThread &operator=(const BlasSingleThread &) = delete;

 private:
  int saved_;
};

}  // namespace replica

#endif
