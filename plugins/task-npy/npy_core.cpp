// attnmech — task "npy": the problem directory is read by libattnmech (am_problem_read, problem.h); this adds
// the task's extras (what was read).
#include "npy_core.h"

#include <attnmech/problem.h>

#include <string>

namespace am::npy_task {

namespace {

double dim(const am_record *ds, const char *key, uint32_t d) {
  am_array_view v{};
  if (am_record_get_array(ds, key, &v) != AM_OK || d >= v.ndim) return 0.0;
  return static_cast<double>(v.shape[d]);
}

am_status fill_extras(am_context *ctx, const char *dir, const am_record *ds, am_record *extras) {
  auto fail = [ctx](am_status code) { return am_context_fail(ctx, code, "npy: cannot build the dataset record"); };
  am_status st;
  if ((st = am_record_set_string(extras, "dir", dir)) != AM_OK) return fail(st);
  if ((st = am_record_set_number(extras, "P", dim(ds, "X_train", 0))) != AM_OK) return fail(st);
  if ((st = am_record_set_number(extras, "P_test", dim(ds, "X_test", 0))) != AM_OK) return fail(st);
  if ((st = am_record_set_number(extras, "S", dim(ds, "X_train", 1))) != AM_OK) return fail(st);
  if ((st = am_record_set_number(extras, "N0", dim(ds, "X_train", 2))) != AM_OK) return fail(st);
  am_record *fo = am_record_list(extras, "head_forms");
  if (!fo) return fail(AM_ERR_NO_MEMORY);
  const am_record *att = am_record_get(ds, "attention");  // keys l1_h1, l1_h2, ... in layer order
  for (size_t i = 0; i < am_record_size(att); ++i) {
    const bool bilinear = am_record_type_of(am_record_at(att, i)) == AM_REC_ARRAY;
    if ((st = am_record_append_string(fo, bilinear ? "bilinear" : "qk")) != AM_OK) return fail(st);
  }
  return AM_OK;
}

}  // namespace

am_status load_problem(am_context *ctx, const char *dir, am_record *dataset, am_record *extras) {
  const am_status st = am_problem_read(ctx, dir, dataset);
  if (st != AM_OK || !extras) return st;
  return fill_extras(ctx, dir, dataset, extras);
}

}  // namespace am::npy_task
