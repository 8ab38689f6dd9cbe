// potts_core — what the sequence estimators share (sequence_fit.cpp: the dataset reader, the training curves and the
// run keys every fit writes) and the factored-attention fit of the estimator "pseudolikelihood" on generated Potts
// data (pseudolikelihood.cpp: collapsed, or uncollapsed with perturbation a; the replica estimator's Potts panel runs
// it too). The estimator's other engine, the alignment fit, is in plugins/common/msa (msa_fit.h); its choice between
// them in plugins/estimator-pseudolikelihood. The run record's keys: docs/potts.md.
#ifndef ATTNMECH_POTTS_ESTIMATORS_H
#define ATTNMECH_POTTS_ESTIMATORS_H

#include <attnmech/record.h>
#include <attnmech/rng.h>

#include <cmath>
#include <string>
#include <vector>

#include "factored.h"
#include "lbfgs.h"
#include "potts_model.h"

namespace am::potts {

// A "sequence" dataset read into int32 buffers (+ the ground truth when present).
struct SeqData {
  int L = 0, C = 0;
  size_t M = 0, M_test = 0;
  std::vector<int32_t> train, test;
  bool has_truth = false;
  Model truth;
  double r = 1.0, eps_star = NAN, eps_star_train = NAN;
};
// M_use > 0 keeps only the first M_use training sequences.
am_status read_sequence_dataset(am_context *ctx, const am_record *ds, size_t M_use, SeqData *out);
// The sizes of a sequence dataset without reading its tokens: the shapes of `tokens` and `tokens_test` (the first
// M_use training sequences when M_use > 0), L and C; false when they are missing or malformed (the read that follows
// names the problem).
bool sequence_dataset_shape(const am_record *ds, size_t M_use, size_t *M, size_t *M_test, int *L, int *C);

// Seconds on the steady clock (fit and curve timings).
double now_s();

// Curves over training (arrays of equal length), written as run.curves.
struct Curves {
  std::vector<double> epoch, train, test, recon;
  double eps_star = NAN;  // ε* on the test sequences the curve uses
  double seconds = 0.0;   // time spent evaluating the curves (not counted in fit_time_s)
  void write(am_record *run) const;
};

// The run keys of both estimators: data sizes, losses, ε* and excess, A/V and their reconstruction of the truth
// (A, V may be NULL).
void write_common(am_record *run, const SeqData &d, double train_loss, double test_loss, const double *A,
                  const double *V);

// (1/(L(L−1))) Σ_{i≠j} (A_ij − J_ij/r)²  (A, J: L×L column-major).
double recon_error(const double *A, const std::vector<double> &J, int L, double r);
// Pearson correlation of column-centred V with column-centred βrU (C×C column-major).
double v_corr(const double *V, const std::vector<double> &U, int C, double beta_r);

// The options of the factored-attention fit; the alignment fit (plugins/common/msa/msa_fit.h) reads them too (the
// iteration limit, tolerances, window rules, heads, init_scale, M_use and the loop) beside its own.
struct PLOptions {
  int heads = 1;                     // (the estimator's table: 0 = auto, resolved by the estimator per dataset)
  // L-BFGS stops when the fit stops improving: the loss decreased by at most stop_tol·(n_params / (2 M L))
  // over the last stop_window iterations (n_params/(2ML) is the expected excess loss of the fit from the finite
  // sample, the scale below which further descent cannot improve the estimate; stop_tol = 0: rule off).
  // stop_tol 1 (0.1 before 3.8): chosen on generated data in docs/potts.md, "Where the fit stops" (issue 41.5).
  int stop_window = 10;
  double stop_tol = 1.0;
  // Guard of the window rules: they fire only once the window's decrease is also at most stop_progress times the
  // decrease since the start (a fit cannot be declared done near its starting loss; 0 = no guard).
  double stop_progress = 0.01;
  ParallelFor parallel;              // the host's loop for the loss (blocks of sequences); empty = serial
  std::string optimizer = "lbfgs";  // lbfgs | sgd | adam
  int max_iter = 5000;
  double gtol = 1e-9, ftol = 1e-10, l2 = 0.0;
  double lr = 0.0;                   // sgd/adam learning rate (≤ 0: sgd 20, adam 0.02)
  int batch = 256, epochs = 200;
  bool cosine = false;               // cosine decay of lr (sgd/adam)
  double a = 0.0;                    // perturbation a (docs/potts.md; a > 0: uncollapsed model)
  int d = 0;                         // embedding dimension of the uncollapsed model (0 = max(L, C))
  std::vector<double> a_scan;        // extra fits of the uncollapsed model at these a (test loss vs a)
  int a_scan_iter = 500;
  double init_scale = 1e-2;
  size_t M_use = 0;
  int curve_every = 10;
};
am_status run_pseudolikelihood(am_context *ctx, const PLOptions &o, const SeqData &data, const am_rng &rng,
                               am_record *run);

// The L-BFGS options of PLOptions for a model of n_params parameters fitted on M sequences of length L.
LbfgsOptions lbfgs_options(const PLOptions &o, int max_iter, size_t n_params, size_t M, int L);
// The collapsed fit as the estimator runs it (L-BFGS from theta, in place; fm's loop set from o.parallel).
LbfgsResult fit_factored(FactoredModel &fm, std::vector<double> &theta, const int32_t *tokens, size_t M,
                         const PLOptions &o, const IterationCallback &cb = nullptr);

// Reads the sequence dataset (its first o.M_use training sequences) and runs `fit` on it: the estimate() of the
// vanilla plugin and of the pseudolikelihood plugin on generated data (Opt: VanillaOptions or PLOptions).
template <class Opt>
am_status fit_dataset(am_context *ctx, const Opt &o, const am_record *dataset, const am_rng &rng, am_record *run,
                      am_status (*fit)(am_context *, const Opt &, const SeqData &, const am_rng &, am_record *)) {
  SeqData d;
  const am_status st = read_sequence_dataset(ctx, dataset, o.M_use, &d);
  return st != AM_OK ? st : fit(ctx, o, d, rng, run);
}

}  // namespace am::potts
#endif
