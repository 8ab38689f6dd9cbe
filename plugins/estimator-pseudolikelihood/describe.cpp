// The `pseudolikelihood` estimator's report spec: the sequence-estimator plots and summary (plugins/common/sequence_report.hpp).
#include "../common/sequence_report.hpp"

namespace am_pseudolikelihood_plugin {

am_status describe(am_context *ctx, const am_record *results, am_record *report) {
  try {
    return am_sequence_report::describe(results, report);
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "pseudolikelihood: cannot describe the results");
  }
}

}  // namespace am_pseudolikelihood_plugin
