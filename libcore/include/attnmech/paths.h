/* attnmech — fixed attention, attention paths, the path-transformed input ξ and path kernels
 * (Tiberi et al. 2024, arXiv:2405.15926; docs/design.md "Equations → code").
 *
 * Layouts (all column-major):
 *   one example X        N0 × S         (column s = token s)
 *   attention Ω          S × S          rows = key/source s, columns = query/destination t; columns sum to 1
 *   path vectors A       S × H_tot      column π = A_π = Ω^(1)_{h1} ⋯ Ω^(L)_{hL} r
 *   ξ of P examples      P × N0 × H_tot (element (μ,i,π) at μ + P·(i + N0·π)); ξ^μ_π = √(s0/(N0·H_tot)) X^μ A^μ_π
 * Path packing: mixed radix, h_1 most significant: π = ((h_1·H_2 + h_2)·H_3 + h_3)… (0-based heads). */
#ifndef ATTNMECH_PATHS_H
#define ATTNMECH_PATHS_H

#include "context.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AM_MAX_LAYERS 16

/* Network architecture of the paper (docs/design.md): L layers, H_l heads per layer, widths W_0..W_L (W_0 = output of
 * the input projection V_0), prior variances s_0..s_L and s_a. Widths are real numbers here because
 * the theory only uses them as scale factors; samplers need whole numbers. */
/* Growable (docs/abi.md): the first ABI-2 version ends before `variances`; a caller whose struct ends there
 * gets unit variances. As an output (am_dataset_arch) the caller sets struct_size first (am_arch_default). */
typedef struct am_arch {
  uint32_t struct_size;                  /* sizeof(am_arch) as the caller was compiled */
  uint32_t layers;                       /* L >= 1 */
  uint32_t heads[AM_MAX_LAYERS];         /* H_1..H_L, each >= 1 */
  double widths[AM_MAX_LAYERS + 1];      /* W_0..W_L, each > 0 */
  double variances[AM_MAX_LAYERS + 2];   /* s_0..s_L, s_a, each > 0 */
} am_arch;

/* L = 1, one head, widths 1, variances 1; then edit. am_arch_default(&a) passes the caller's sizeof: the library
 * writes at most that many bytes and sets struct_size. */
AM_API void am_arch_init(am_arch *a, size_t size);
#define am_arch_default(a) am_arch_init((a), sizeof *(a))
AM_API am_status am_arch_validate(am_context *ctx, const am_arch *a);
/* H_tot = ∏ H_l (0 if invalid). */
AM_API size_t am_arch_paths(const am_arch *a);
/* D_l = H_l⋯H_L for l = 1..L (D_1 = H_tot); D_{L+1} = 1. */
AM_API size_t am_arch_dim(const am_arch *a, uint32_t l);

typedef enum am_readout { AM_READOUT_LAST = 0, AM_READOUT_FIRST = 1, AM_READOUT_MEAN = 2 } am_readout;
typedef enum am_head_form { AM_HEAD_BILINEAR = 0, AM_HEAD_QK = 1 } am_head_form;

/* One attention head. Bilinear: W (N0×N0, col-major, ld = N0), logit[s,t] = x_sᵀ W x_t.
 * Query/key: Q and K (G×N0, col-major, ld = G), logit[s,t] = (K x_s)·(Q x_t)/√G. Borrowed pointers.
 * Growable (docs/abi.md): the first ABI-2 version ends before Q (a bilinear head); Q and K default to NULL.
 * An array of heads is walked with the stride heads[0].struct_size (every element the same size). */
typedef struct am_head {
  uint32_t struct_size;   /* sizeof(am_head) as the caller was compiled */
  am_head_form form;
  size_t G;
  const double *W;
  const double *Q;
  const double *K;
} am_head;

/* Initialisers (C99 and C++): am_head h = AM_BILINEAR_HEAD(W);  am_head q = AM_QK_HEAD(G, Q, K); */
#define AM_BILINEAR_HEAD(W) { (uint32_t)sizeof(am_head), AM_HEAD_BILINEAR, 0, (W), NULL, NULL }
#define AM_QK_HEAD(G, Q, K) { (uint32_t)sizeof(am_head), AM_HEAD_QK, (G), NULL, (Q), (K) }

/* Ω = column softmax over keys of the head's logits, for one example X (N0×S). */
AM_API am_status am_attention(am_context *ctx, const am_head *head, size_t N0, size_t S, const double *X, double *Omega);

/* Path vectors of one example: `heads` lists every head layer by layer (Σ H_l entries, layer 1 first).
 * A: S × H_tot. */
AM_API am_status am_path_vectors(am_context *ctx, const am_arch *arch, const am_head *heads, am_readout readout,
                                 size_t N0, size_t S, const double *X, double *A);

/* ξ for P examples: X holds P examples of N0×S back to back (= C-order [P, S, N0]); xi gets P·N0·H_tot
 * values in the layout above. Runs over examples in parallel (context threads). */
AM_API am_status am_xi(am_context *ctx, const am_arch *arch, const am_head *heads, am_readout readout, size_t P,
                       size_t N0, size_t S, const double *X, double *xi);

#ifdef __cplusplus
}
#endif

/* The kernels built from ξ (kernels.cpp) have their own header; included here, where they were declared up to 3.5. */
#include "kernels.h"
#endif
