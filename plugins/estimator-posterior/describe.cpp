// The `posterior` estimator's report spec: the attention runs' plots and summary (its runs carry the
// theory's keys) with the sampled accuracy, plus sampled vs theory U_1 entries with Monte-Carlo errors.
#include "report.hpp"

namespace am::posterior_plugin {

am_status describe(am_context *ctx, const am_record *results, am_record *report) {
  using namespace am::spec;
  try {
    am_status st = am::attention_report::describe(results, report, "posterior.test.accuracy");
    if (st != AM_OK) return st;
    Report rep(report);
    Node p(nullptr, nullptr);
    const size_t n = am_record_size(am_record_get(results, "runs"));
    for (size_t i = 0; i < n; ++i) {
      const std::string r = cat("runs", i);
      const size_t th = numbers(results, cat(r, "U.0")).size();
      if (th == 0 || th != numbers(results, cat(r, "posterior.U")).size()) continue;
      if (!p.valid())
        p = rep.scatter("U_posterior_vs_theory", "Sampled vs theory U\u2081 entries", "theory U\u2081 entry",
                        "posterior mean of U\u2081 entry")
                .flag("diagonal", true);
      p.series("N = " + am::attention_report::wtag(run_width(results, i)), cat(r, "U.0"), cat(r, "posterior.U"), "points")
          .str("yerr", cat(r, "posterior.U_stderr"));
    }
    return rep.status();
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "posterior: cannot describe the results");
  }
}

}  // namespace am::posterior_plugin
