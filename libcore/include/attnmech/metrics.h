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

#ifdef __cplusplus
}
#endif
#endif
