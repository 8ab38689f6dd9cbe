// The `potts` task's report spec: the equilibration test (conditional entropy vs sweeps), the task's
// matrices (true couplings J, colour matrix U) and its extras in the summary.
#include <attnmech/plugin.hpp>
#include <attnmech/report_spec.hpp>

#include <string>

namespace am::potts_plugin {

am_status describe(const am_record *results, am_record *report) {
  using namespace am::spec;
  try {
    Report rep(report);
    const std::vector<double> sw = numbers(results, "task_extras.equilibration.sweeps");
    if (!sw.empty() && sw.size() == numbers(results, "task_extras.equilibration.cond_entropy").size()) {
      const bool shift = sw.front() == 0;
      const double first = sw.front() + (shift ? 1 : 0), last = sw.back() + (shift ? 1 : 0);
      Node p = rep.lines("task_equilibration", "Equilibration: conditional entropy vs sweeps", shift ? "sweeps + 1" : "sweeps",
                         "conditional entropy (nats per site)")
                   .log_x(first > 0 && last / first > 30);
      Node s = p.series("Gibbs chains", "task_extras.equilibration.sweeps", "task_extras.equilibration.cond_entropy");
      s.str("yerr", "task_extras.equilibration.cond_entropy_se");
      if (shift) s.num("x_offset", 1);
    }
    const am_record *ex = at(results, "task_extras");
    int drawn = 0;
    for (size_t i = 0; am_record_type_of(ex) == AM_REC_OBJECT && i < am_record_size(ex) && drawn < 6; ++i) {
      const std::vector<size_t> s = shape(am_record_at(ex, i));
      if (s.size() != 2 || s[0] < 2 || s[1] < 2) continue;
      const std::string key = am_record_key(ex, i);
      rep.heatmap("task_" + key, "").str("x_label", "column").str("y_label", "row").panel("task: " + key, cat("task_extras", key));
      ++drawn;
    }
    Node v = rep.values("task extras");
    rep.scalar_items(v, results, "task_extras");
    return rep.status();
  } catch (...) {
    throw am::sdk::Error(AM_ERR_NO_MEMORY, "potts: cannot describe the results");
  }
}

}  // namespace am::potts_plugin
