// The `oneshot` task's report spec (docs/oneshot.md), read from its task_extras: accuracy vs N (theory with
// validation- and test-selected T, GP, GD network, out of distribution), U_1 at the head-score width, head
// score vs single-head pruning drop, cumulative pruning (score order vs random), GD training loss, accuracy
// over the N × T grid; the extras in the summary.
#include <attnmech/report_spec.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace am_oneshot_plugin {

namespace {

using namespace am_spec;

const std::string kEx = "task_extras";

std::string ex(const std::string &p) { return cat(kEx, p); }

void accuracy_plot(Report &rep, const am_record *res) {
  const size_t nw = numbers(res, ex("theory_grid.widths")).size();
  if (nw == 0) return;
  Node p = rep.lines("oneshot_accuracy_vs_N", "One-shot task: test accuracy vs width N", "width N", "accuracy (%)").log_x();
  const struct {
    const char *path, *name;
    bool dashed;
  } series[] = {{"selection.by_validation.accuracy_test", "theory, T selected on validation", false},
                {"selection.by_test.accuracy_test", "theory, T selected on test (reference)", true},
                {"selection.by_validation.accuracy_ood", "theory OOD, T selected on validation", false}};
  for (const auto &s : series)
    if (numbers(res, ex(s.path)).size() == nw)
      p.series(s.name, ex("theory_grid.widths"), ex(s.path), s.dashed ? "dashed" : "line+points").num("y_scale", 100);
  const size_t nr = am_record_size(am_record_get(res, "runs"));  // the estimator runs at the dataset's T
  bool runs = false;
  for (size_t i = 0; i < nr; ++i)
    runs = runs || (std::isfinite(number(res, cat(cat("runs", i), "test.accuracy"))) && std::isfinite(run_width(res, i)));
  if (runs) p.series("estimator runs (dataset T)", "runs.*.width", "runs.*.test.accuracy", "points").num("y_scale", 100);
  for (const auto &h : {std::make_pair("gp.by_validation.accuracy_test", "GP (T on validation)"),
                        std::make_pair("gp.by_validation.accuracy_ood", "GP OOD"), std::make_pair("gd.accuracy.test", "GD network")})
    if (std::isfinite(number(res, ex(h.first)))) p.hline(h.second, ex(h.first)).num("y_scale", 100);
}

void matrix_plots(Report &rep, const am_record *res) {
  const std::vector<size_t> su = shape(at(res, ex("head_scores.U1")));
  const std::string labels = count(at(res, ex("path_labels"))) > 0 ? ex("path_labels") : "";
  if (su.size() == 2 && su[0] == su[1]) {
    char t[160];
    std::snprintf(t, sizeof t, "U_1 (theory, N=%g, T=%g); paths (h1,h2)", number(res, ex("head_scores.width")),
                  number(res, ex("head_scores.temperature")));
    Node h = rep.heatmap("oneshot_U1", t);
    h.panel("", ex("head_scores.U1"));
    h.labels(labels, labels).flag("annotate", false).str("x_label", "path").str("y_label", "path");
  }
  const std::vector<size_t> so = shape(at(res, ex("gd.path_overlap")));
  if (so.size() == 2 && so[0] == so[1]) {
    Node h = rep.heatmap("oneshot_gd_overlap", "GD network: overlap of effective path weights w_p . w_p' / W");
    h.panel("", ex("gd.path_overlap"));
    h.labels(labels, labels).flag("annotate", false);
  }
  for (const char *which : {"accuracy_val", "accuracy_test"}) {
    if (shape(at(res, ex(std::string("theory_grid.") + which))).size() != 2) continue;
    Node h = rep.heatmap(std::string("oneshot_grid_") + which,
                         std::string("Theory ") + (which[9] == 'v' ? "validation" : "test") + " accuracy (%) over N (rows) x T",
                         "sequential");
    h.panel("", ex(std::string("theory_grid.") + which));
    h.labels(ex("theory_grid.widths"), ex("theory_grid.temperatures")).str("x_label", "temperature T").str("y_label", "width N");
    h.num("value_scale", 100);
  }
}

void pruning_plots(Report &rep, const am_record *res) {
  const size_t ns = numbers(res, ex("head_scores.scores")).size();
  if (ns > 0 && ns == numbers(res, ex("pruning.single_drop")).size())
    rep.lines("oneshot_head_score_vs_drop", "Head score (theory U_1) vs accuracy drop when the head is pruned (GD network)",
              "head score", "accuracy drop (points)")
        .series("heads", ex("head_scores.scores"), ex("pruning.single_drop"), "points")
        .num("y_scale", 100);
  const size_t nn = numbers(res, ex("pruning.n_pruned")).size();
  if (nn > 0) {
    Node p = rep.lines("oneshot_pruning", "Cumulative pruning of the GD network (no retraining)", "heads pruned", "test accuracy (%)");
    if (numbers(res, ex("pruning.score_order_accuracy")).size() == nn)
      p.series("increasing score", ex("pruning.n_pruned"), ex("pruning.score_order_accuracy")).num("y_scale", 100);
    if (numbers(res, ex("pruning.reverse_score_order_accuracy")).size() == nn)
      p.series("decreasing score", ex("pruning.n_pruned"), ex("pruning.reverse_score_order_accuracy"), "dashed").num("y_scale", 100);
    if (numbers(res, ex("pruning.random_order_accuracy_mean")).size() == nn)
      p.series("random order (mean \u00b1 sd)", ex("pruning.n_pruned"), ex("pruning.random_order_accuracy_mean"))
          .str("yerr", ex("pruning.random_order_accuracy_std"))
          .num("y_scale", 100);
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
    accuracy_plot(rep, results);
    matrix_plots(rep, results);
    pruning_plots(rep, results);
    Node v = rep.values("task extras");
    rep.scalar_items(v, results, "task_extras");
    return rep.status();
  } catch (...) {
    return am_context_fail(ctx, AM_ERR_NO_MEMORY, "oneshot: cannot describe the results");
  }
}

}  // namespace am_oneshot_plugin
