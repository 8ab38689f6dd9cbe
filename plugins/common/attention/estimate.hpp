// attnmech — the theory estimator on an attention dataset (dataset.h): ξ → Newton solve → predictions, GP
// limit, alignment, head scores, written into a results record (keys: docs/results-schema.md). The policy of
// the `theory` estimator — which temperatures to solve at and which one to report, which GP limits, what to
// store — lives here, not in libcore, which keeps the mathematics it calls. Linked by the estimators
// `theory` and `posterior` (posterior runs the whole theory estimator inside each of its runs).
#ifndef AM_ATTENTION_ESTIMATE_HPP
#define AM_ATTENTION_ESTIMATE_HPP

#include <attnmech/dataset.h>
#include <attnmech/theory.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace am {
namespace attention {

// What a run computes besides the solution. The defaults are the `theory` estimator's.
struct Options {
  am_solve_settings solve;           // the Newton solve (am_solve_default_settings)
  uint32_t alignment_k = 30;         // principal components for the alignment (0 = skip)
  bool store_kernels = false;        // also write kernels{path (H_tot pre-kernels C^{ππ}), gp, rn} (P×P each)
  bool full_kernels = false;         // all of them; else the blocks the heat maps draw (estimate.cpp, kernel_examples)
  std::vector<double> temperatures;  // temperature grid; empty = the dataset's temperatures_scan, else its T
  Options() { am_solve_default_settings(&solve); }
};

// The library's arrays (am_dataset_xi) go back by am_free; those this code allocates itself (library = false) by free.
struct FreeDoubles {
  bool library = true;
  void operator()(double *p) const {
    if (library) am_free(p);
    else std::free(p);
  }
};
using DoubleBuffer = std::unique_ptr<double, FreeDoubles>;

// ξ (P × N0 × H_tot, P fastest) and labels of one split of the dataset; n = 0 when the split is absent.
struct Split {
  const char *name = "";
  DoubleBuffer xi, y;
  size_t n = 0;
};

// The path inputs of every split an estimator run knows: train (fits), test (reported), val (selects T), ood
// (reported). They depend on the dataset only (not on the widths), so an estimator computes them once per
// dataset and passes them to every estimate of a width scan.
struct PathInputs {
  Split train, test, val, ood;
  size_t P = 0, N0 = 0;
};

// ξ of every split present in an attention dataset (am_dataset_xi), checked for one token dimension N0.
am_status load_path_inputs(am_context *ctx, const am_record *dataset, PathInputs *out);
// ξ of one split (absent: s->n = 0); N0 != 0 checks its token dimension, N0_out (may be NULL) gets it. A split the
// dataset holds in part (dataset.h key `part`: each MPI rank made a block of its rows, am_context_data_part) is
// made whole: ξ of this rank's rows, then every rank's rows gathered (every rank must call it, in the same order).
am_status load_split(am_context *ctx, const am_record *dataset, const char *name, size_t N0, Split *s,
                     size_t *N0_out = nullptr);

// One run of the theory estimator into `run`: keys widths, temperature, U, U_a, action, energy, entropy,
// solver{…}, test{mean,var,accuracy,…}, gp{test{…}}, alignment{…}, head_scores; val{…}/ood{…} (and
// gp.val/gp.ood) for the dataset's optional X_val/X_ood; gp_subsets[…] (the GP limit of each sub-network of
// the dataset's path_subsets); kernels{…} with store_kernels.
// `inputs` (never NULL, may be empty) are the run's own: "widths" (replacing the dataset's) and "start"
// ({"U": [U_1, …, U_L]}: a warm start of the solve). Temperatures: opt.temperatures if given, else the
// dataset's temperatures_scan if it has one, else its temperature. With more than one, the run solves at every
// T in the given order (each solve warm-started from the previous T's solution; a failed warm start is retried
// from the GP point), writes temperature_scan{…} and gp.temperature_scan{…}, and reports the solution at the T
// the validation split selects (am_select_validation: the best accuracy, then the best log-likelihood, then the
// larger T; the dataset's temperature when it has no X_val). Where the P-sized work runs is the executor's
// (executor.hpp): distributed over MPI ranks only when the context allows it (am_context_distribute).
// Returns AM_ERR_NOT_CONVERGED (results still written, solver.status says so) if the solve failed, AM_CANCELLED
// when the context's progress callback stopped it.
am_status estimate(am_context *ctx, const am_record *dataset, const am_record *inputs, const PathInputs &xi,
                   const Options &opt, am_record *run);
// The same, computing ξ of the dataset first.
am_status estimate(am_context *ctx, const am_record *dataset, const am_record *inputs, const Options &opt,
                   am_record *run);

}  // namespace attention
}  // namespace am

#endif
