/* attnmech — what a solution is measured by (libcore/src/metrics.cpp): sign accuracy, regression errors, the
 * kernel–label alignment (leading eigenvectors of a kernel and their overlaps with the labels) and head scores
 * from U_1. Declared in theory.h up to 3.5, which includes this header. */
#ifndef ATTNMECH_METRICS_H
#define ATTNMECH_METRICS_H

#include "paths.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fraction of sign(mean) == sign(y). */
AM_API double am_accuracy(const double *mean, const double *y, size_t n);
/* bias = mean (f̄−y)², variance = mean δf², full = mean Φ(y f̄/√δf²). */
AM_API am_status am_regression_errors(am_context *ctx, const double *mean, const double *var, const double *y, size_t n,
                                      double *bias, double *variance, double *full_accuracy);
/* Top-k eigenvectors of K (P×P, ldk; by decreasing eigenvalue, dsyevd) and their overlaps |v·y|/|y|. */
AM_API am_status am_kernel_alignment(am_context *ctx, const double *K, size_t P, size_t ldk, const double *y, size_t k,
                                     double *overlaps, double *eigenvalues);
/* Head scores from U1: scores has Σ_l H_l entries (layer 1 heads first), normalised so the maximum is 1. */
AM_API am_status am_head_scores(am_context *ctx, const am_arch *arch, const double *U1, double *scores);

/* --- validation selection (Added in 3.6; the rule and why: docs/design.md "Choosing on validation data") --- */
/* Mean log-density of the labels y under the Gaussian predictive N(mean_i, var_i + noise) (var: the predictor's
 * variance, am_theory_predict; noise: the label noise T of Γ = K + T·I): (1/n) Σ −½[log 2π s_i + (y_i − mean_i)²/s_i],
 * s_i = var_i + noise. NaN when n = 0, an argument is NULL or some s_i is not positive. Added in 3.6. */
AM_API double am_log_likelihood(const double *mean, const double *var, const double *y, size_t n, double noise);
/* The one validation-selection rule of the theory estimator's temperature scan and of Python's Theory.select:
 * among n candidates (solved cells of a width × temperature grid; NaN accuracy = its solve failed, never chosen),
 * *chosen = the index of
 *   1. the highest validation accuracy (am_accuracy; equal counts of correct signs tie exactly), then among those
 *   2. the highest validation log-likelihood (am_log_likelihood; within 1e-9·max(1, |best|) counts as a tie: round-off),
 *   3. then the candidate nearest the GP limit: the largest width_min (the smallest W_l of its widths), then the
 *      largest width_sum, then the largest temperature,
 *   4. then the first index.
 * log_likelihood, width_min, width_sum and temperature may each be NULL (that step then ties every candidate).
 * Returns AM_ERR_NOT_CONVERGED (*chosen = n) when every accuracy is NaN or n = 0. Added in 3.6. */
AM_API am_status am_select_validation(am_context *ctx, size_t n, const double *accuracy, const double *log_likelihood,
                                      const double *width_min, const double *width_sum, const double *temperature,
                                      size_t *chosen);

#ifdef __cplusplus
}
#endif
#endif
