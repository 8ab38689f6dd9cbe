// attnmech — the theory estimator's report spec (docs/abi.md "report spec"), the part about width and temperature
// scans and pruning: plots of a results document the theory estimator took part in, drawn from its own keys only
// (docs/results-schema.md). describe.cpp calls it from the descriptor's `describe` entry.
//
//   accuracy_vs_width        test accuracy at the selected T vs N, GP, GP of path subsets (gp_subsets), and,
//                            with a temperature scan: the test-selected T (reference procedure) and OOD
//   temperature_scan_val/_test  accuracy over N (rows) × T (columns)
//   U1_head_scores           U_1 of the first run that pruned (the head-score width)
//   head_score_vs_drop       head score vs the accuracy drop when the head is pruned
//   pruning                  cumulative pruning: increasing / decreasing score, random orders (mean ± sd)
#include "describe.hpp"

#include <attnmech/plugin.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

const am_record *at_path(const am_record *r, const std::string &dotted) {
  size_t pos = 0;
  while (r && pos <= dotted.size()) {
    const size_t dot = dotted.find('.', pos);
    const std::string key = dotted.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    if (am_record_type_of(r) == AM_REC_LIST) {
      const size_t i = size_t(std::strtoul(key.c_str(), nullptr, 10));
      r = i < am_record_size(r) ? am_record_at(r, i) : nullptr;
    } else {
      r = am_record_get(r, key.c_str());
    }
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return r;
}

am_record *new_plot(am_record *plots, const char *file, const char *kind, const char *title, const char *x_label,
                    const char *y_label, bool x_log) {
  am_record *p = am_record_append_object(plots);
  if (!p) return nullptr;
  am_record_set_string(p, "file", file);
  am_record_set_string(p, "kind", kind);
  am_record_set_string(p, "title", title);
  if (x_label) am_record_set_string(p, "x_label", x_label);
  if (y_label) am_record_set_string(p, "y_label", y_label);
  am_record_set_bool(p, "x_log", x_log);
  am_record_set_bool(p, "y_log", 0);
  return p;
}

am_status add_series(am_record *plot, const std::string &label, const std::string &x, const std::string &y,
                     const char *style, const char *yerr = nullptr) {
  am_record *list = am_record_get_mut(plot, "series");
  if (!list) list = am_record_list(plot, "series");
  if (!list) return AM_ERR_NO_MEMORY;
  am_record *s = am_record_append_object(list);
  if (!s) return AM_ERR_NO_MEMORY;
  AM_SDK_TRY(am_record_set_string(s, "label", label.c_str()));
  if (!x.empty()) AM_SDK_TRY(am_record_set_string(s, "x", x.c_str()));
  AM_SDK_TRY(am_record_set_string(s, "y", y.c_str()));
  if (yerr) AM_SDK_TRY(am_record_set_string(s, "yerr", yerr));
  return am_record_set_string(s, "style", style);
}

// Accuracy vs width: what plot_oneshot's "accuracy vs N" and the markov accuracy plot show.
am_status accuracy_plot(const am_record *results, am_record *plots) {
  const am_record *run0 = at_path(results, "runs.0");
  if (!run0 || !am_record_get(run0, "test")) return AM_OK;
  am_record *p = new_plot(plots, "accuracy_vs_width_T_selected", "lines", "Test accuracy vs width N (T selected per width)", "width N", "test accuracy",
                          true);
  if (!p) return AM_ERR_NO_MEMORY;
  const bool scan = am_record_get(run0, "temperature_scan") != nullptr;
  AM_SDK_TRY(add_series(p, scan ? "theory, T selected on validation" : "theory", "runs.*.width", "runs.*.test.accuracy",
                 "line+points"));
  if (scan && at_path(run0, "temperature_scan.by_test"))
    AM_SDK_TRY(add_series(p, "theory, T selected on test (reference)", "runs.*.width",
                   "runs.*.temperature_scan.by_test.accuracy_test", "dashed"));
  if (am_record_get(run0, "ood"))
    AM_SDK_TRY(add_series(p, "theory OOD, T selected on validation", "runs.*.width", "runs.*.ood.accuracy", "line+points"));
  if (scan && at_path(run0, "gp.temperature_scan.by_validation")) {
    AM_SDK_TRY(add_series(p, "GP (T on validation)", "", "runs.0.gp.temperature_scan.by_validation.accuracy_test", "hline"));
    if (at_path(run0, "gp.temperature_scan.by_validation.accuracy_ood"))
      AM_SDK_TRY(add_series(p, "GP OOD", "", "runs.0.gp.temperature_scan.by_validation.accuracy_ood", "hline"));
  } else {
    AM_SDK_TRY(add_series(p, "GP limit (all paths of this network)", "", "runs.0.gp.test.accuracy", "hline"));
  }
  const am_record *subs = am_record_get(run0, "gp_subsets");
  for (size_t i = 0; subs && i < am_record_size(subs); ++i) {
    const char *name = am_record_string(am_record_get(am_record_at(subs, i), "name"));
    AM_SDK_TRY(add_series(p, std::string("GP ") + (name ? name : "?"), "",
                   "runs.0.gp_subsets." + std::to_string(i) + ".test.accuracy", "hline"));
  }
  return AM_OK;
}

// The N × T accuracy grids (rows: runs, i.e. widths; columns: the scanned temperatures).
am_status grid_plots(const am_record *results, am_record *plots) {
  const am_record *run0 = at_path(results, "runs.0");
  if (!run0 || !am_record_get(run0, "temperature_scan")) return AM_OK;
  for (const char *which : {"val", "test"}) {
    const std::string key = std::string("accuracy_") + which;
    if (!at_path(run0, "temperature_scan." + key)) continue;
    const std::string title = std::string("Theory ") + (which[0] == 'v' ? "validation" : "test") +
                              " accuracy over N (rows) x T";
    am_record *p = new_plot(plots, ("temperature_scan_" + key).c_str(), "heatmap", title.c_str(), "temperature T",
                            "width N", false);
    if (!p) return AM_ERR_NO_MEMORY;
    am_record *panels = am_record_list(p, "panels");
    if (!panels) return AM_ERR_NO_MEMORY;
    am_record *pan = am_record_append_object(panels);
    if (!pan) return AM_ERR_NO_MEMORY;
    AM_SDK_TRY(am_record_set_string(pan, "title", title.c_str()));
    // `*` over runs of a vector: one row per run (the report library stacks equal-length vectors)
    AM_SDK_TRY(am_record_set_string(pan, "matrix", ("runs.*.temperature_scan." + key).c_str()));
    AM_SDK_TRY(am_record_set_string(p, "row_labels", "runs.*.width"));
    AM_SDK_TRY(am_record_set_string(p, "col_labels", "runs.0.temperature_scan.temperatures"));
    AM_SDK_TRY(am_record_set_string(p, "scale", "sequential"));
  }
  return AM_OK;
}

// U_1, head score vs drop and cumulative pruning, from the first run that pruned the dataset's network.
am_status pruning_plots(const am_record *results, am_record *plots) {
  const am_record *runs = am_record_get(results, "runs");
  size_t k = 0;
  while (runs && k < am_record_size(runs) && !am_record_get(am_record_at(runs, k), "pruning")) ++k;
  if (!runs || k == am_record_size(runs)) return AM_OK;
  const std::string r = "runs." + std::to_string(k) + ".";
  char title[200];
  std::snprintf(title, sizeof title, "U_1 (theory, N=%g, T=%g); paths", am_record_number(at_path(results, r + "width")),
                am_record_number(at_path(results, r + "temperature")));
  am_record *h = new_plot(plots, "U1_head_scores", "heatmap", title, "path", "path", false);
  if (!h) return AM_ERR_NO_MEMORY;
  am_record *panels = am_record_list(h, "panels");
  am_record *pan = panels ? am_record_append_object(panels) : nullptr;
  if (!pan) return AM_ERR_NO_MEMORY;
  AM_SDK_TRY(am_record_set_string(pan, "title", "U_1"));
  AM_SDK_TRY(am_record_set_string(pan, "matrix", (r + "U.0").c_str()));
  AM_SDK_TRY(am_record_set_string(h, "row_labels", (r + "path_labels").c_str()));
  AM_SDK_TRY(am_record_set_string(h, "col_labels", (r + "path_labels").c_str()));
  AM_SDK_TRY(am_record_set_string(h, "scale", "diverging"));
  if (at_path(results, r + "pruning.single_drop") && at_path(results, r + "head_scores")) {
    am_record *s = new_plot(plots, "head_score_vs_drop", "scatter",
                            "Head score (theory U_1) vs accuracy drop when the head is pruned (trained network)",
                            "head score", "accuracy drop", false);
    if (!s) return AM_ERR_NO_MEMORY;
    AM_SDK_TRY(add_series(s, "heads", r + "head_scores", r + "pruning.single_drop", "points"));
    AM_SDK_TRY(am_record_set_bool(s, "diagonal", 0));
  }
  am_record *c = new_plot(plots, "pruning", "lines", "Cumulative pruning of the trained network (no retraining)",
                          "heads pruned", "test accuracy", false);
  if (!c) return AM_ERR_NO_MEMORY;
  const std::string x = r + "pruning.n_pruned";
  if (at_path(results, r + "pruning.score_order_accuracy")) {
    AM_SDK_TRY(add_series(c, "increasing score", x, r + "pruning.score_order_accuracy", "line+points"));
    AM_SDK_TRY(add_series(c, "decreasing score", x, r + "pruning.reverse_score_order_accuracy", "dashed"));
  }
  if (at_path(results, r + "pruning.random_order_accuracy_mean")) {
    const std::string sd = r + "pruning.random_order_accuracy_std";
    AM_SDK_TRY(add_series(c, "random order (mean ± sd)", x, r + "pruning.random_order_accuracy_mean", "line+points",
                   sd.c_str()));
  }
  return AM_OK;
}

}  // namespace

// The ABI-2 `describe` of the theory estimator: appends plot specs to report.plots (created if absent).
am_status theory_describe_scan(am_context *ctx, const am_record *results, am_record *report) {
  if (!results || !report) return am_context_fail(ctx, AM_ERR_INVALID_ARGUMENT, "theory: describe needs results and report");
  am_record *plots = am_record_get_mut(report, "plots");
  if (!plots) plots = am_record_list(report, "plots");
  if (!plots) return am_context_fail(ctx, AM_ERR_NO_MEMORY, "theory: cannot build the report");
  am_status st = am_record_get(at_path(results, "runs.0"), "temperature_scan") ? accuracy_plot(results, plots) : AM_OK;
  if (st == AM_OK) st = grid_plots(results, plots);
  if (st == AM_OK) st = pruning_plots(results, plots);
  if (st != AM_OK) return am_context_fail(ctx, st, "theory: cannot build the report (%s)", am_status_string(st));
  return AM_OK;
}

