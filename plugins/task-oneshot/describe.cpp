// The `oneshot` task's report spec (docs/oneshot.md), read from its task_extras: the GD network's path-weight
// overlap and training loss; the extras in the summary. The theory's plots (accuracy vs N, head scores, pruning)
// are the `theory` estimator's, drawn from its runs.
#include <attnmech/report_spec.hpp>

#include <string>

namespace am::oneshot_plugin {

namespace {

using namespace am::spec;

const std::string kEx = "task_extras";

std::string ex(const std::string &p) { return cat(kEx, p); }

void gd_plots(Report &rep, const am_record *res) {
  const std::string labels = count(at(res, ex("path_labels"))) > 0 ? ex("path_labels") : "";
  const std::vector<size_t> so = shape(at(res, ex("gd.path_overlap")));
  if (so.size() == 2 && so[0] == so[1]) {
    Node h = rep.heatmap("oneshot_gd_overlap", "GD network: overlap of effective path weights w_p . w_p' / W");
    h.panel("", ex("gd.path_overlap"));
    h.labels(labels, labels).flag("annotate", false);
  }
  const size_t nl = numbers(res, ex("gd.loss_step")).size();
  if (nl > 0 && nl == numbers(res, ex("gd.loss")).size())
    rep.lines("oneshot_gd_loss", "GD training: mean squared error per batch", "Adam step", "MSE")
        .series("training loss", ex("gd.loss_step"), ex("gd.loss"), "line");
}

}  // namespace

am_status describe(am_context *ctx, const am_record *results, am_record *report) {
  try {
    Report rep(report);
    gd_plots(rep, results);
    Node v = rep.values("task extras");
    rep.scalar_items(v, results, "task_extras");
    return rep.status();
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "oneshot: cannot describe the results");
  }
}

}  // namespace am::oneshot_plugin
