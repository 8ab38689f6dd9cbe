// SVG plots of the oneshot study (docs/oneshot.md): accuracy vs N (theory with validation- and
// test-selected T, GP, GD network, out of distribution), U_1 at the head-score width, head score vs single-head
// pruning drop, cumulative pruning (score order vs random), GD training loss, accuracy over the N × T grid.
//
// Called from write_plots (plots.cpp) for documents whose runs scanned temperatures or pruned a network.
// To be replaced by the theory estimator's report spec (plugins/estimator-theory/describe.cpp).
#include "results.hpp"
#include "svg.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace amtool {

namespace {

bool put(const std::string &dir, const std::string &name, const std::string &content,
         std::vector<std::string> *written, std::string *err) {
  if (!svg::write_file(dir + "/" + name, content)) {
    if (err) *err = "cannot write " + dir + "/" + name;
    return false;
  }
  if (written) written->push_back(name);
  return true;
}

std::vector<double> pct(std::vector<double> v) {
  for (auto &x : v) x *= 100;
  return v;
}

// The oneshot study in the layout these plots were written for, gathered from where it lives now: the theory
// estimator's runs (temperature_scan, gp.temperature_scan, head scores and pruning of the run that pruned) and
// the task's extras (gd, path_labels). Keys: docs/oneshot.md.
json study_view(const json &doc) {
  json v = json::object();
  if (const json *ex = jpath(doc, "task_extras"); ex && ex->is_object()) v = *ex;
  const json *runs = jpath(doc, "runs");
  if (!runs || !runs->is_array()) return v;
  json widths = json::array(), grid_val = json::array(), grid_test = json::array();
  json sel_v = json::array(), sel_t = json::array(), sel_o = json::array();
  for (const auto &r : *runs) {
    if (!jpath(r, "temperature_scan")) continue;
    widths.push_back(run_width(r));
    grid_val.push_back(r["temperature_scan"].value("accuracy_val", json::array()));
    grid_test.push_back(r["temperature_scan"].value("accuracy_test", json::array()));
    const json *bv = jpath(r, "temperature_scan.by_validation.accuracy_test");
    const json *bt = jpath(r, "temperature_scan.by_test.accuracy_test");
    const json *bo = jpath(r, "temperature_scan.by_validation.accuracy_ood");
    sel_v.push_back(bv ? *bv : json(nullptr));
    sel_t.push_back(bt ? *bt : json(nullptr));
    sel_o.push_back(bo ? *bo : json(nullptr));
    if (!v.contains("gp"))
      if (const json *g = jpath(r, "gp.temperature_scan")) v["gp"] = *g;
    if (r.contains("pruning") && !v.contains("pruning")) {
      v["pruning"] = r["pruning"];
      v["head_scores"] = {{"scores", r.value("head_scores", json::array())}, {"width", run_width(r)},
                          {"temperature", r.value("temperature", json(nullptr))}};
      if (const json *U = jpath(r, "U.0")) v["head_scores"]["U1"] = *U;
    }
  }
  if (widths.empty()) return v;
  const json *temps = jpath((*runs)[0], "temperature_scan.temperatures");
  v["theory_grid"] = {{"widths", widths}, {"temperatures", temps ? *temps : json::array()},
                      {"accuracy_val", grid_val}, {"accuracy_test", grid_test}};
  v["selection"] = {{"by_validation", {{"accuracy_test", sel_v}, {"accuracy_ood", sel_o}}},
                    {"by_test", {{"accuracy_test", sel_t}}}};
  return v;
}

// 6. accuracy over the N × T grid (validation and test)
bool grid_plots(const json &ex, const std::vector<double> &widths, const std::string &dir,
                std::vector<std::string> *written, std::string *err) {
  for (const char *which : {"accuracy_val", "accuracy_test"}) {
    size_t r = 0, c = 0;
    std::vector<double> A;
    if (!jmatrix(jpath(ex, std::string("theory_grid.") + which), &r, &c, &A)) continue;
    const auto temps = jvector(jpath(ex, "theory_grid.temperatures"));
    svg::HeatMap h;
    h.title = std::string("Theory ") + (which[9] == 'v' ? "validation" : "test") + " accuracy (%) over N (rows) x T";
    h.rows = r;
    h.cols = c;
    h.values = pct(A);
    h.diverging = false;
    for (double w : widths) h.row_labels.push_back(svg::format_tick(w));
    for (double t : temps) h.col_labels.push_back(svg::format_tick(t));
    if (h.row_labels.size() != r || h.col_labels.size() != c) h.row_labels.clear(), h.col_labels.clear();
    h.xlabel = "temperature T";
    h.ylabel = "width N";
    if (!put(dir, std::string("oneshot_grid_") + which + ".svg", svg::render(h), written, err)) return false;
  }
  return true;
}

}  // namespace

bool write_oneshot_plots(const json &doc, const std::string &dir, std::vector<std::string> *written, std::string *err) {
  const json view = study_view(doc);
  const json *ex = &view;
  const std::vector<double> widths = jvector(jpath(*ex, "theory_grid.widths"));

  // 1. accuracy vs N
  if (!widths.empty()) {
    svg::LinePlot p;
    p.title = "One-shot task: test accuracy vs width N";
    p.xlabel = "width N";
    p.ylabel = "accuracy (%)";
    p.logx = true;
    auto series = [&](const char *path, const std::string &name, bool dashed) {
      std::vector<double> y = jvector(jpath(*ex, path));
      if (y.size() != widths.size()) return;
      svg::Series s;
      s.name = name;
      s.x = widths;
      s.y = pct(y);
      s.dashed = dashed;
      p.series.push_back(s);
    };
    series("selection.by_validation.accuracy_test", "theory, T selected on validation", false);
    series("selection.by_test.accuracy_test", "theory, T selected on test (reference)", true);
    series("selection.by_validation.accuracy_ood", "theory OOD, T selected on validation", false);
    // the standard estimator runs at the dataset's temperature
    const json *runs = jpath(doc, "runs");
    if (runs && runs->is_array()) {
      svg::Series s;
      s.name = "estimator runs (selected T)";
      s.line = false;
      for (const auto &r : *runs) {
        const double a = jnumber(jpath(r, "test.accuracy")), w = run_width(r);
        if (std::isfinite(a) && std::isfinite(w)) {
          s.x.push_back(w);
          s.y.push_back(100 * a);
        }
      }
      if (!s.x.empty()) p.series.push_back(s);
    }
    auto hline = [&](const char *path, const std::string &label) {
      const double v = jnumber(jpath(*ex, path));
      if (std::isfinite(v)) {
        svg::HLine h;
        h.y = 100 * v;
        h.label = label;
        p.hlines.push_back(h);
      }
    };
    hline("gp.by_validation.accuracy_test", "GP (T on validation)");
    hline("gp.by_validation.accuracy_ood", "GP OOD");
    hline("gd.accuracy.test", "GD network");
    if (!put(dir, "oneshot_accuracy_vs_N.svg", svg::render(p), written, err)) return false;
  }

  // 2. U_1 at the head-score width
  {
    size_t r = 0, c = 0;
    std::vector<double> U;
    if (jmatrix(jpath(*ex, "head_scores.U1"), &r, &c, &U) && r == c) {
      svg::HeatMap h;
      char t[160];
      std::snprintf(t, sizeof t, "U_1 (theory, N=%g, T=%g); paths (h1,h2)", jnumber(jpath(*ex, "head_scores.width")),
                    jnumber(jpath(*ex, "head_scores.temperature")));
      h.title = t;
      h.rows = r;
      h.cols = c;
      h.values = U;
      auto labels = jstrings(jpath(*ex, "path_labels"));
      if (labels.size() == r) h.row_labels = h.col_labels = labels;
      h.xlabel = "path";
      h.ylabel = "path";
      h.annotate = false;
      if (!put(dir, "oneshot_U1.svg", svg::render(h), written, err)) return false;
    }
    if (jmatrix(jpath(*ex, "gd.path_overlap"), &r, &c, &U) && r == c) {
      svg::HeatMap h;
      h.title = "GD network: overlap of effective path weights w_p . w_p' / W";
      h.rows = r;
      h.cols = c;
      h.values = U;
      auto labels = jstrings(jpath(*ex, "path_labels"));
      if (labels.size() == r) h.row_labels = h.col_labels = labels;
      h.annotate = false;
      if (!put(dir, "oneshot_gd_overlap.svg", svg::render(h), written, err)) return false;
    }
  }

  // 3. head score vs single-head pruning drop
  {
    const auto sc = jvector(jpath(*ex, "head_scores.scores"));
    const auto drop = jvector(jpath(*ex, "pruning.single_drop"));
    if (!sc.empty() && sc.size() == drop.size()) {
      svg::LinePlot p;
      p.title = "Head score (theory U_1) vs accuracy drop when the head is pruned (GD network)";
      p.xlabel = "head score";
      p.ylabel = "accuracy drop (points)";
      svg::Series s;
      s.name = "heads";
      s.x = sc;
      s.y = pct(drop);
      s.line = false;
      p.series.push_back(s);
      if (!put(dir, "oneshot_head_score_vs_drop.svg", svg::render(p), written, err)) return false;
    }
  }

  // 4. cumulative pruning
  {
    const auto n = jvector(jpath(*ex, "pruning.n_pruned"));
    if (!n.empty()) {
      svg::LinePlot p;
      p.title = "Cumulative pruning of the GD network (no retraining)";
      p.xlabel = "heads pruned";
      p.ylabel = "test accuracy (%)";
      auto add = [&](const char *path, const char *sdpath, const std::string &name, bool dashed) {
        auto y = jvector(jpath(*ex, path));
        if (y.size() != n.size()) return;
        svg::Series s;
        s.name = name;
        s.x = n;
        s.y = pct(y);
        if (sdpath) {
          s.yerr = pct(jvector(jpath(*ex, sdpath)));
          if (s.yerr.size() != y.size()) s.yerr.clear();
        }
        s.dashed = dashed;
        p.series.push_back(s);
      };
      add("pruning.score_order_accuracy", nullptr, "increasing score", false);
      add("pruning.reverse_score_order_accuracy", nullptr, "decreasing score", true);
      add("pruning.random_order_accuracy_mean", "pruning.random_order_accuracy_std", "random order (mean ± sd)", false);
      if (!put(dir, "oneshot_pruning.svg", svg::render(p), written, err)) return false;
    }
  }

  // 5. GD training loss
  {
    const auto st = jvector(jpath(*ex, "gd.loss_step")), lo = jvector(jpath(*ex, "gd.loss"));
    if (!st.empty() && st.size() == lo.size()) {
      svg::LinePlot p;
      p.title = "GD training: mean squared error per batch";
      p.xlabel = "Adam step";
      p.ylabel = "MSE";
      svg::Series s;
      s.name = "training loss";
      s.x = st;
      s.y = lo;
      s.points = false;
      p.series.push_back(s);
      if (!put(dir, "oneshot_gd_loss.svg", svg::render(p), written, err)) return false;
    }
  }

  return grid_plots(*ex, widths, dir, written, err);
}

}  // namespace amtool
