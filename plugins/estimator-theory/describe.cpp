// The `theory` estimator's report spec: accuracy vs width with the GP references, U heat maps, kernels,
// alignment, head scores; the summary table (N, accuracies, S_code, U_a, iterations, solver status); and the
// human names of its result keys (report.labels), which the plots and the sweep aggregates show.
#include "report.hpp"

namespace am::theory_plugin {

namespace {

// Key (or dotted tail) → label; the longest tail wins, so "gp.action" names the GP's action apart from the run's.
const char *const kLabels[][2] = {
    {"action", "action S"},           {"gp.action", "GP action S"},
    {"energy", "energy E"},           {"entropy", "entropy"},
    {"U_a", "U_a"},                   {"temperature", "temperature T"},
    {"test.accuracy", "test accuracy"}, {"gp.test.accuracy", "GP test accuracy"},
    {"solver.iterations", "Newton iterations"},
};

am_status declare_labels(am_record *report) {
  am_record *labels = am_record_get_mut(report, "labels");
  if (!labels) labels = am_record_object(report, "labels");
  if (!labels) return AM_ERR_NO_MEMORY;
  for (const auto &kv : kLabels)
    if (am_status st = am_record_set_string(labels, kv[0], kv[1])) return st;
  return AM_OK;
}

}  // namespace

am_status describe(am_context *ctx, const am_record *results, am_record *report) {
  try {
    const am_status st = am::attention_report::describe(results, report, nullptr);
    return st != AM_OK ? st : declare_labels(report);
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "theory: cannot describe the results");
  }
}

}  // namespace am::theory_plugin
