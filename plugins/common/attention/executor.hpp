// attnmech — where the theory estimator's P-sized work runs. estimate.cpp (the policy: which temperatures, which
// one to report, which GP limits, what to store) asks an Executor for four things — a memory verdict before the
// theory is built, taking over each theory handle it creates, the end of the predictions, and the training
// kernels' summaries — and never learns whether they were computed in this process or across MPI ranks (as
// liblinear's NEWTON knows its problem only through `function`). Two implementations: serial (executor_serial.cpp:
// this process, libcore's BLAS/LAPACK) and distributed (plugins/common/scalapack/executor.cpp: ScaLAPACK over the
// ranks of MPI_COMM_WORLD). make_executor picks one from the host's setting (am_context_distribute).
#ifndef AM_ATTENTION_EXECUTOR_HPP
#define AM_ATTENTION_EXECUTOR_HPP

#include <attnmech/theory.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace am {
namespace attention {

// The sizes of a whole run, for its memory check before the theory is built.
struct RunShape {
  const am_arch *arch = nullptr;
  size_t P = 0, N0 = 0, H = 0;  // training examples, token dimension, paths
  size_t Pt = 0;                 // the largest evaluation split
  size_t k = 0;                  // principal components of the alignment (0: none)
  bool store_kernels = false;    // kernels{…} are stored
  bool whole_kernels = false;    // … as whole P×P matrices (kernels=full)
  bool subsets = false;          // the dataset has path_subsets (a GP handle of each beside the run's)
  double extra_doubles = 0;      // what the process holds besides (measured, or ξ of every split)
};

// What the kernels phase computes of one training kernel. Each pointer may be NULL (not wanted).
struct KernelOut {
  double *block = nullptr;        // m×m, column-major: its rows and columns `examples` (with examples)
  double min = 0;                 // its smallest element (with examples)
  double *overlaps = nullptr;     // k > 0: |v·y|/|y| of its k leading eigenvectors, largest eigenvalue first
  double *eigenvalues = nullptr;  // k > 0: those eigenvalues
  double *whole = nullptr;        // P×P, column-major: the kernel itself
};

class Executor {
 public:
  virtual ~Executor() = default;
  // What the memory message adds to the run's description: ", this rank's share of K ranks", or "".
  virtual std::string share() const = 0;
  // AM_OK when the whole run fits this process (every rank of a distributed run gives the same verdict).
  virtual am_status check_memory(am_context *ctx, const RunShape &s, const char *what) = 0;
  // Take over th's P-sized work; th was made from the training ξ (P × N0·H, P fastest) and labels y, which stay
  // valid while th lives. `main`: the run's own handle (the kernels phase uses it), else a path subset's.
  virtual am_status attach(am_context *ctx, am_theory *th, size_t P, size_t N0, size_t H, const double *xi,
                           const double *y, bool main) = 0;
  // The predictions are made: memory only they needed may go (the path subsets and the kernels need it).
  virtual void predictions_done() = 0;
  // Whether this process computes the kernels phase; whole kernels (kernels=full) are made by one process only.
  virtual bool makes_kernels(bool whole) const = 0;
  // K_{U_1} of the main handle at U (packed as the solver's); examples ascending, k ≤ P.
  virtual am_status kernel(am_context *ctx, const double *U, const std::vector<size_t> &examples, size_t k,
                           KernelOut *out) = 0;
  // The pre-kernel C^{pp} of path p from the training ξ (block, min, whole; no eigenpairs).
  virtual am_status prekernel(am_context *ctx, size_t p, const std::vector<size_t> &examples, KernelOut *out) = 0;
};

// This process alone (libcore's BLAS/LAPACK): the default.
std::unique_ptr<Executor> serial_executor();
// The executor of a run on ctx: distributed when the host allows it (am_context_distribute is not
// AM_DISTRIBUTE_OFF) and this process is one of several MPI ranks in a build with ScaLAPACK; else serial.
std::unique_ptr<Executor> make_executor(am_context *ctx);
// Bytes this process holds now (its resident set), 0 where it cannot be read.
double resident_bytes();

}  // namespace attention
}  // namespace am

#endif
