// The `markov` task's report spec: its extras in the summary.
#include <attnmech/report_spec.hpp>

namespace am_markov_plugin {

am_status describe(am_context *ctx, const am_record *results, am_record *report) {
  try {
    am_spec::Report rep(report);
    am_spec::Node v = rep.values("task extras");
    rep.scalar_items(v, results, "task_extras");
    return rep.status();
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "markov: cannot describe the results");
  }
}

}  // namespace am_markov_plugin
