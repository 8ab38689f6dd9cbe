/* attnmech — dataset conventions. A dataset is an am_record (record.h) whose keys follow one of two
 * kinds; task plugins fill it, estimators read it, the core offers helpers for the attention kind.
 *
 * kind "attention" (string key "kind"):
 *   X_train   f8 [P, S, N0] C order  (so each example is an N0×S column-major matrix, columns = tokens)
 *   y_train   f8 [P]                  labels (±1 for classification)
 *   X_test    f8 [Pt, S, N0], y_test f8 [Pt]  (optional)
 *   heads     list [H_1..H_L]
 *   widths    list [W_0..W_L]         variances list [s_0..s_L, s_a]
 *   temperature number > 0            readout "last" | "first" | "mean"
 *   attention object: for layer l, head h (1-based) key "l<l>_h<h>" holding either
 *             an array W f8 [N0, N0] C order with logit[s,t] = x_sᵀ W x_t (bilinear form), or
 *             an object {"Q": f8 [G, N0], "K": f8 [G, N0]} with logit[s,t] = (K x_s)·(Q x_t)/√G.
 *   optional: path_labels (list of strings, packing order), widths_scan (list: default widths to scan)
 *   optional splits, same layout as X_test/y_test: X_val/y_val (validation: estimators that scan a
 *             hyper-parameter select it on this split), X_ood/y_ood (out of distribution: reported only)
 *   optional: temperatures_scan (list: default temperature grid of estimators that scan T; the estimator
 *             reports its solution at the validation-selected T; `temperature` stays the value for
 *             estimators that do not scan)
 *   optional: path_subsets, list of {"name": string, "paths": list of path indices (0-based, packing order
 *             as path_labels)}: sub-networks made of some of the paths. Their attention is the dataset's;
 *             their readout normalisation is 1/√H_sub (H_sub = number of paths), so the GP kernel of a
 *             sub-network is (s_1⋯s_L s_a / H_sub) Σ_{π∈sub} C^{ππ}.
 *   optional: network, a trained network of this architecture in path form: {"path_weights": f8 [H_tot, N0]}
 *             (row π = w_π, its effective readout weights of path π) with output
 *             f(X) = Σ_π c_π w_π·(X A_π),  c_π = Π_l m_{l,h_l} (Σ_h m_{l,h})^{-1/2}  (m = 1 kept, 0 pruned head;
 *             all kept: c_π = (H_1⋯H_L)^{-1/2}), A_π the path vector (docs/design.md) with the dataset's readout;
 *             equivalently f = (N0·H_tot/s_0)^{1/2} Σ_π c_π w_π·ξ_π with ξ of am_dataset_xi.
 *   optional: sources, {key: string}: where a dataset key came from (e.g. "X_train": a file path); messages
 *             about that key's values name it.
 *   optional: part, {"<split>": [begin, total]} (Added in 3.8): the data was made in parts (am_context_data_part):
 *             X_<split> and y_<split> hold only rows [begin, begin + n) of a split of `total` examples, MPI rank r
 *             holding part r; an estimator that reads it gathers the other ranks' rows (the theory estimator's ξ) or
 *             refuses it. A dataset without the key holds every split whole.
 *
 * kind "sequence":
 *   tokens    i32/i64 [M, L] C order, values in 0..C-1;  tokens_test optional
 *   C         number of colours (states);  truth: optional object with named arrays (J, U, beta, ...)
 *
 * The width scan (run.h: --width, the host key widths) reads two keys of any kind, and no other: "widths" (the
 * list a scan replaces per run; a dataset without it has nothing to scan) and the optional "widths_scan" (the
 * task's default scan). The host names no estimator either: a task's am_plugin_desc.default_estimator does.
 */
#ifndef ATTNMECH_DATASET_H
#define ATTNMECH_DATASET_H

#include "record.h"
#include "paths.h"

#ifdef __cplusplus
extern "C" {
#endif

#define AM_DATASET_ATTENTION "attention"

/* The ranges every reader of an attention dataset enforces (am_dataset_arch, the npy task's model.json, the
 * plugins' --set parameters): widths are whole numbers of units in [1, AM_WIDTH_MAX]; the temperature lies in
 * [AM_TEMPERATURE_MIN, AM_TEMPERATURE_MAX]. */
#define AM_WIDTH_MAX 1e12
#define AM_TEMPERATURE_MIN 1e-12
#define AM_TEMPERATURE_MAX 1e12
#define AM_DATASET_SEQUENCE "sequence"

/* Architecture (heads, widths, variances) and temperature of an attention dataset, validated. */
AM_API am_status am_dataset_arch(am_context *ctx, const am_record *ds, am_arch *arch, double *temperature);
/* The same for one run: the widths of the run's inputs (am_plugin_desc.estimate: "widths", set by a width scan)
 * when they have them, else the dataset's. inputs may be NULL. Added in 3.0. */
AM_API am_status am_dataset_arch_for(am_context *ctx, const am_record *ds, const am_record *inputs, am_arch *arch,
                                     double *temperature);

/* Path-transformed input of split "train", "test", "val" or "ood" (any X_<split>): xi f64 [P, N0, H_tot] column-major (P fastest),
 * computed from X and the heads on every call (it does not depend on the widths: an estimator scanning widths
 * computes it once per dataset and keeps it),
 * allocated into *xi (release with am_free), sizes into *P and *N0; labels into *y
 * (release with am_free; y may be NULL to skip). */
AM_API am_status am_dataset_xi(am_context *ctx, const am_record *ds, const char *split, double **xi, size_t *P,
                               size_t *N0, double **y);

#ifdef __cplusplus
}
#endif
#endif
