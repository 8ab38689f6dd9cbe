/* attnmech — the attention-path theory (Tiberi et al. 2024, arXiv:2405.15926; docs/design.md): the action S(U) with U_a
 * eliminated in closed form, its gradient and exact Hessian, the Newton solve for U, predictor
 * statistics, kernel–task alignment and head scores. The theory estimator's policy on attention datasets
 * (temperature scan, GP subsets, the results keys) is plugins/common/attention/, not here.
 *
 * Order parameters are passed as a "U set": the full symmetric matrices U_1 (D_1×D_1, D_1 = H_tot),
 * U_2 (D_2×D_2), …, U_L back to back, each column-major; am_theory_u_offset gives where U_l starts.
 * Vech coordinates (Hessian): blocks U_1..U_L, within a block the upper triangle column by column
 * (i ≤ j, j outer); basis E = e_i e_jᵀ + e_j e_iᵀ (i<j) or e_i e_iᵀ. Values are those of
 * S_code = (E + S_ent)/W_max, the reference code's scaling.
 *
 * Threads: one handle is used by one thread at a time — every call writes its workspaces, and destroying it while a
 * call runs is a use-after-free; a host sharing one serialises the calls itself. Distinct handles (each call with
 * its own context) may run at once and give the bits they give alone (docs/embedding.md, "Threads"). */
#ifndef ATTNMECH_THEORY_H
#define ATTNMECH_THEORY_H

#include "paths.h"
#include "solver.h"
#include "record.h"
#include "metrics.h"  /* accuracy, alignment, head scores: declared here up to 3.5 */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct am_theory am_theory;

/* Copies xi (P × N0 × H_tot) and y (P). */
AM_API am_status am_theory_create(am_context *ctx, am_theory **out, const am_arch *arch, size_t P, size_t N0,
                                  const double *xi, const double *y, double temperature);
/* am_theory_create without the copies: the handle reads xi and y where they are, so the caller keeps them valid and
 * unchanged until am_theory_destroy (P·N0·H_tot + P doubles fewer than a copying handle holds). Added in 3.9. */
AM_API am_status am_theory_create_view(am_context *ctx, am_theory **out, const am_arch *arch, size_t P, size_t N0,
                                       const double *xi, const double *y, double temperature);
AM_API void am_theory_destroy(am_theory **th);
AM_API am_status am_theory_set_temperature(am_context *ctx, am_theory *th, double temperature);
/* Change widths (and variances) without rebuilding; heads must match. */
AM_API am_status am_theory_set_arch(am_context *ctx, am_theory *th, const am_arch *arch);

AM_API size_t am_theory_u_size(const am_theory *th);       /* Σ_l D_l² */
AM_API size_t am_theory_vech_size(const am_theory *th);    /* Σ_l D_l(D_l+1)/2 */
AM_API size_t am_theory_u_offset(const am_theory *th, uint32_t l);  /* l = 1..L */
/* The GP point U_l = (s_l⋯s_L s_a) I. */
AM_API void am_theory_gp_point(const am_theory *th, double *U);

/* Growable output: the caller sets struct_size (C: am_action a = {.struct_size = sizeof a}); the library writes
 * at most that many bytes and leaves struct_size = the bytes it wrote. */
typedef struct am_action {
  uint32_t struct_size;
  double S_code;   /* (E + S_ent)/W_max */
  double energy;   /* E/W_max */
  double entropy;  /* S_ent/W_max */
  double U_a;      /* closed-form readout order parameter */
} am_action;

/* S_code at U; grad (optional, U-set layout) gets the symmetric-matrix gradient G_l of S_code;
 * hess (optional) the n×n vech Hessian. AM_ERR_DOMAIN if some U_l is not positive definite. */
AM_API am_status am_theory_action(am_context *ctx, am_theory *th, const double *U, am_action *out, double *grad,
                                  double *hess);

/* Growable input: every field is optional (a smaller struct from an older caller gets the defaults). */
typedef struct am_solve_settings {
  uint32_t struct_size;   /* sizeof(am_solve_settings) as the caller was compiled */
  uint32_t max_iter;      /* default 100 */
  double grad_tol;        /* default 1e-10: max_{l,ij}|G_l,ij| ≤ grad_tol·max(1,|S_code|) */
  double decrement_tol;   /* default 1e-20 */
  int warm_start;         /* 0: start at the GP point; 1: start from the U passed in */
} am_solve_settings;

/* Growable output, like am_action (the action's fields flattened in: no growable struct embeds another). */
typedef struct am_solve_report {
  uint32_t struct_size;
  double S_code;           /* the action at the solution, as am_action */
  double energy;
  double entropy;
  double U_a;
  uint32_t iterations;
  double grad_max;         /* max_{l,ij} |G_l,ij| of S_code */
  double grad_vech_norm;   /* Euclidean norm of the vech gradient */
  double decrement;
  double hessian_min_eig;
  am_status status;        /* AM_OK, AM_CONVERGED_ROUNDOFF or AM_ERR_NOT_CONVERGED */
} am_solve_report;

AM_API void am_solve_settings_init(am_solve_settings *s, size_t size);
#define am_solve_default_settings(s) am_solve_settings_init((s), sizeof *(s))
/* Minimise S_code; U receives the minimiser (or the last iterate on failure). Returns rep->status or an error. */
AM_API am_status am_theory_solve(am_context *ctx, am_theory *th, const am_solve_settings *s, double *U,
                                 am_solve_report *rep);

/* Frees what th keeps between calls to save work: the factor of Γ = K_{U1} + T·I at the last point where it built
 * one (an action, solve step or prediction at the same U1 and temperature takes it instead of factoring Γ again, with
 * the same results: a rebuilt factor is the same bits; an engine may keep its own factor so too), and the solve's
 * workspaces. A handle keeps that factor (P² doubles) after am_theory_solve (at its solution) and am_theory_predict
 * until this call, am_theory_kernel, am_theory_alignment or a change of temperature or engine; the next call builds
 * again what it needs. NULL is accepted. Added in 3.9. */
AM_API void am_theory_release(am_theory *th);

/* Predictor mean k ᵀΓ⁻¹Y and variance k_* − kᵀΓ⁻¹k (T not added) for Pt test inputs, with U1 (H_tot²). */
AM_API am_status am_theory_predict(am_context *ctx, am_theory *th, const double *U1, size_t Pt, const double *xi_test,
                                   double *mean, double *var);
/* Training kernel K_U (P×P, ld P) for U1, without T. */
AM_API am_status am_theory_kernel(am_context *ctx, am_theory *th, const double *U1, double *K);
/* The kernel–task alignment of K_{U1} — am_kernel_alignment's overlaps |v·y|/|y| and eigenvalues of its k leading
 * components, by decreasing eigenvalue, with y the handle's labels — without a P×P eigenproblem when it can: K_{U1}
 * = Z Zᵀ with Z = Ξ_w·(I ⊗ L) of rank ≤ r = N0·H_tot (U1 = L Lᵀ); after a thin QR Z = Q R the eigenvalues are those
 * of R Rᵀ (r×r) and each overlap is |wᵀ(Qᵀy)|/|y| for its eigenvector w, O(P·r²) work instead of O(P³). When r ≥ P,
 * k > r or U1 is not positive definite, the k components come from the whole kernel as in am_kernel_alignment: K
 * (P×P, ld P, may be NULL) is K_{U1} if the caller has it (am_theory_kernel; it is not modified), else the
 * function builds it. Both ways agree to rounding (eigenvalues within a few ε·λ_max; overlaps within ε·λ_max over
 * the eigenvalue's gap to its neighbours). Added in 3.8. */
AM_API am_status am_theory_alignment(am_context *ctx, am_theory *th, const double *U1, const double *K, size_t k,
                                     double *overlaps, double *eigenvalues);

/* The P-sized linear algebra of a handle, replaceable by an engine that spreads it over processes (the theory
 * estimator's ScaLAPACK engine, docs/scale.md "One solve across machines"). Without an engine the handle does it
 * itself with BLAS/LAPACK (the default). An engine holds its own copy of ξ and y (as passed to am_theory_create)
 * and the factor of the last Γ it built; every function returns AM_OK or a status with the message set in ctx.
 * am_theory_kernel stays serial (it returns the whole P×P kernel). The engine is not thread-safe, like the handle.
 * Added in 3.3. */
typedef struct am_theory_engine {
  uint32_t struct_size; /* sizeof(am_theory_engine) as the engine was compiled */
  void *user;           /* passed to every function */
  /* Γ = K_{U1} + T·I (U1: H_tot², symmetric), its Cholesky factor L and α = Γ⁻¹y; out: log det Γ and yᵀα.
   * AM_ERR_SINGULAR when Γ is not numerically positive definite. */
  am_status (*factor)(void *user, am_context *ctx, const double *U1, double T, double *logdet, double *y_alpha);
  /* From the last factor: b = Ξ_wᵀα (N0·H_tot) and the full symmetric M = B̃ᵀB̃ (N0·H_tot square, column-major),
   * B̃ = L⁻¹Ξ_w, with Ξ_w the P × N0·H_tot view of ξ. */
  am_status (*whiten)(void *user, am_context *ctx, double *b, double *M);
  /* Γ factored at U1, then for Pt test inputs: mean = kᵀα and quad_t = |L⁻¹k_t|², k = K_{U1}(train, test). */
  am_status (*predict)(void *user, am_context *ctx, const double *U1, double T, size_t Pt, const double *xi_test,
                       double *mean, double *quad);
  /* Called once when the handle is destroyed or the engine replaced (may be NULL). */
  void (*release)(void *user);
} am_theory_engine;

/* Hand th's P-sized work to `engine` (copied; NULL: back to the serial default, releasing the engine).
 * Added in 3.3. */
AM_API am_status am_theory_set_engine(am_context *ctx, am_theory *th, const am_theory_engine *engine);

/* Before a whole estimator run on a problem of this architecture — am_theory_create with P training inputs of
 * token dimension N0, the Newton solve, predictions of up to Pt inputs (0 = none), the training kernels with k
 * principal components for the alignment (k = 0 and store_kernels = 0: no kernels; store_kernels: the whole kernels
 * kept to be stored, with the H_tot path pre-kernels) — while the caller holds extra_doubles of its own (e.g. ξ of its splits): AM_OK, or
 * AM_ERR_NO_MEMORY with am_memory_check's message naming `what` (also when a BLAS dimension exceeds 32 bits).
 * Added in 3.0. */
AM_API am_status am_theory_memory_check(am_context *ctx, const am_arch *arch, size_t P, size_t N0, size_t Pt, size_t k,
                                        int store_kernels, double extra_doubles, const char *what);
/* am_theory_memory_check for a process whose handle hands its P-sized work to an engine (am_theory_set_engine):
 * engine_bytes > 0 is the engine's own peak in this process (the theory estimator's ScaLAPACK engine: its
 * block-cyclic share of Γ, ξ, B̃, the test kernel and the kernels' eigenproblem), counted instead of the P×P and
 * P × N0·H_tot matrices the handle would hold; the handle's copy of ξ and y, its N0·H_tot-sized arrays and the
 * caller's extra_doubles are counted as there. engine_bytes = 0: no engine, the same estimate as
 * am_theory_memory_check. *bytes (may be NULL) gets the estimate, also when the check fails. Added in 3.4. */
AM_API am_status am_theory_memory_check_engine(am_context *ctx, const am_arch *arch, size_t P, size_t N0, size_t Pt,
                                               size_t k, int store_kernels, double extra_doubles, double engine_bytes,
                                               const char *what, double *bytes);

#ifdef __cplusplus
}
#endif
#endif
