/* attnmech — problem directories: a user's attention problem as .npy files + model.json (the input of the
 * `npy` task, docs/tasks.md), read into an attention dataset (dataset.h) and written from one. Dataset input,
 * beside the .npy format (array.h) it is made of. In libattnmech since 3.0 (before: the report library). */
#ifndef ATTNMECH_PROBLEM_H
#define ATTNMECH_PROBLEM_H

#include "record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads the problem directory `dir` (docs/tasks.md, task `npy`) into `dataset` (dataset.h, kind
 * "attention"): model.json {readout, heads, widths, variances, temperature, form?, path_labels?,
 * widths_scan?}, X_train.npy [P, S, N0], y_train.npy [P], optional X_test.npy + y_test.npy, and per head
 * (l, h from 1) W_l<l>_h<h>.npy [N0, N0] or Q_l<l>_h<h>.npy + K_l<l>_h<h>.npy [G, N0].
 * Files may be f8/f4/i8/i4 in C or Fortran order: every array is converted to C-order f64 by its logical
 * indices (a Fortran-order W file gives the same W[i][j] as a C-order one; the dataset stores W with the
 * key side first, logit[s,t] = x_s^T W x_t). Every problem is an error naming the file: AM_ERR_IO
 * (missing/unreadable), AM_ERR_SHAPE, AM_ERR_NONFINITE, AM_ERR_FORMAT (model.json, head files),
 * AM_ERR_USAGE (dir NULL or ""). Unknown model.json keys and unused head files are logged warnings. */
AM_API am_status am_problem_read(am_context *ctx, const char *dir, am_record *dataset);

/* Writes the attention dataset `dataset` as the problem directory `dir`, whole or not at all: `dir` must be
 * absent, empty, or a previous problem directory (holding model.json), which is replaced whole (the files are
 * written into a temporary sibling that then takes its place; a writer killed midway leaves the old one; a
 * directory of other files is AM_ERR_IO, untouched): the .npy files above in C-order f64 and model.json (with
 * "form" when every head has the same form, path_labels and widths_scan when present), so that
 * am_problem_read(dir) gives a dataset equal to `dataset` (same keys, shapes and values). Datasets of
 * another kind, or without X_train/y_train/heads, are AM_ERR_FORMAT. */
AM_API am_status am_problem_write(am_context *ctx, const char *dir, const am_record *dataset);

#ifdef __cplusplus
}
#endif
#endif
