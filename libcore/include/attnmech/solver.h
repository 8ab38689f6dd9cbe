/* attnmech — a damped Newton minimiser that sees only an objective interface (after liblinear's
 * newton.h): value, gradient and Hessian into caller buffers. The attention-path action is one
 * objective (theory.h); plugins may bring others.
 *
 * Step: solve (H + λI) δ = −g by Cholesky, λ = 0 while H is positive definite, otherwise
 * λ = −λ_min(H) + 1e-3·max|H| (λ_min from dsyevd), ×10 whenever the line search fails.
 * Line search: halve the step until the objective accepts the point (eval returns AM_OK rather than
 * AM_ERR_DOMAIN) and Armijo's condition holds.
 * Stops with AM_OK when grad_measure ≤ grad_tol·max(1,|f|), with AM_CONVERGED_ROUNDOFF when the Newton
 * decrement gᵀH⁻¹g ≤ decrement_tol·max(1,|f|), or when the decrement is ≤ 1e-10·max(1,|f|) but two
 * successive iterations fail to shrink it 100-fold (Newton's quadratic convergence would square it: the
 * iterates are moving in round-off noise), else
 * AM_ERR_NOT_CONVERGED with x holding the last iterate. */
#ifndef ATTNMECH_SOLVER_H
#define ATTNMECH_SOLVER_H

#include "context.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Growable (docs/abi.md): the first ABI-2 version ends before grad_measure (which then defaults to NULL).
 * Initialise with AM_OBJECTIVE(n, user, eval, grad_measure). */
typedef struct am_objective {
  uint32_t struct_size;   /* sizeof(am_objective) as the caller was compiled */
  size_t n;
  void *user;
  /* f at x; g (n) if g != NULL; H (n×n column-major) if H != NULL.
   * Returns AM_OK, AM_ERR_DOMAIN when x lies outside the domain, or another error to abort. */
  am_status (*eval)(void *user, const double *x, double *f, double *g, double *H);
  /* Optional convergence measure of a gradient (NULL: max_k |g_k|). */
  double (*grad_measure)(void *user, const double *x, const double *g);
} am_objective;
#define AM_OBJECTIVE(n, user, eval, grad_measure) { (uint32_t)sizeof(am_objective), (n), (user), (eval), (grad_measure) }

/* Growable input: every field is optional (a smaller struct from an older caller gets the defaults). */
typedef struct am_newton_settings {
  uint32_t struct_size;     /* sizeof(am_newton_settings) as the caller was compiled */
  uint32_t max_iter;        /* default 100 */
  double grad_tol;          /* default 1e-10 (relative to max(1,|f|)) */
  double decrement_tol;     /* default 1e-20 (relative to max(1,|f|)) */
  double armijo;            /* default 1e-4 */
  uint32_t max_backtracks;  /* default 60 */
} am_newton_settings;

/* Growable output: the caller sets struct_size (C: am_newton_report r = {.struct_size = sizeof r}); the library
 * writes at most that many bytes and leaves struct_size = the bytes it wrote. */
typedef struct am_newton_report {
  uint32_t struct_size;
  uint32_t iterations;
  double f;
  double grad_measure;      /* the objective's measure (max|G| for the action) */
  double grad_norm;         /* Euclidean norm of the coordinate gradient */
  double decrement;         /* gᵀH⁻¹g at the last iterate */
  double hessian_min_eig;   /* smallest eigenvalue of H at the last iterate (> 0 at a true minimum) */
  am_status status;
} am_newton_report;

AM_API void am_newton_settings_init(am_newton_settings *s, size_t size);
#define am_newton_default_settings(s) am_newton_settings_init((s), sizeof *(s))
AM_API am_status am_newton_minimize(am_context *ctx, const am_objective *obj, const am_newton_settings *s, double *x,
                                    am_newton_report *report);

#ifdef __cplusplus
}
#endif
#endif
