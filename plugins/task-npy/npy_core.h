// attnmech — task "npy": a user's attention problem read from a directory of .npy files + model.json.
// The logic lives here (static library npy_core) so tests can call it directly; plugin.cpp is thin.
//
// Directory layout (docs/tasks.md):
//   X_train.npy [P, S, N0]   y_train.npy [P]   (required)
//   X_test.npy  [Pt, S, N0]  y_test.npy  [Pt]  (optional, both or neither)
//   per head (l, h from 1): W_l<l>_h<h>.npy [N0, N0]  or  Q_l<l>_h<h>.npy + K_l<l>_h<h>.npy [G, N0]
//   model.json {"readout", "heads", "widths", "variances", "temperature", "form" (optional),
//               "path_labels" (optional), "widths_scan" (optional)}
#ifndef ATTNMECH_TASK_NPY_CORE_H
#define ATTNMECH_TASK_NPY_CORE_H

#include <attnmech/attnmech.h>

namespace am::npy_task {

// Fills `dataset` (dataset.h, kind "attention") and, if not NULL, `extras` with a summary of what was read.
// Every problem is an error naming the file (AM_ERR_IO missing/unreadable, AM_ERR_SHAPE wrong shape,
// AM_ERR_NONFINITE NaN/Inf, AM_ERR_FORMAT bad model.json or head files, AM_ERR_USAGE no directory).
am_status load_problem(am_context *ctx, const char *dir, am_record *dataset, am_record *extras);

}  // namespace am::npy_task

#endif
