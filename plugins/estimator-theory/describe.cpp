// The `theory` estimator's report spec: accuracy vs width with the GP references, U heat maps, kernels,
// alignment, head scores; the summary table (N, accuracies, S_code, U_a, iterations, solver status).
#include "report.hpp"

namespace am::theory_plugin {

am_status describe(am_context *ctx, const am_record *results, am_record *report) {
  try {
    return am::attention_report::describe(results, report, nullptr);
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "theory: cannot describe the results");
  }
}

}  // namespace am::theory_plugin
