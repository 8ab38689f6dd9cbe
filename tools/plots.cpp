// SVG plots drawn from a results document (see plots.hpp and docs/results-schema.md).
#include "plots.hpp"

#include "svg.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace amtool {

namespace {

struct Writer {
  std::string dir;
  std::vector<std::string> *written;
  std::string *err;
  bool ok = true;
  void put(const std::string &name, const std::string &content) {
    if (!ok) return;
    if (!svg::write_file(dir + "/" + name, content)) {
      ok = false;
      if (err) *err = "cannot write " + dir + "/" + name;
      return;
    }
    if (written) written->push_back(name);
  }
};

std::string wtag(double w) {
  if (!std::isfinite(w)) return "x";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", w);
  return buf;
}

// "gp_accuracy.good_and_denoising" → "gp accuracy: good and denoising"
std::string pretty(const std::string &path) {
  std::string s = path;
  for (auto &c : s)
    if (c == '_') c = ' ';
  size_t dot;
  while ((dot = s.find('.')) != std::string::npos) s.replace(dot, 1, ": ");
  return s;
}

void numeric_leaves(const json &j, const std::string &path, std::vector<std::pair<std::string, double>> &out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      numeric_leaves(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
  } else if (j.is_number()) {
    out.emplace_back(path, j.get<double>());
  }
}

// Run indices to show matrices for: widths 10, 100, 1000 when scanned, else the first and the last.
std::vector<size_t> selected_runs(const json &runs) {
  std::vector<size_t> show;
  for (double target : {10.0, 100.0, 1000.0})
    for (size_t i = 0; i < runs.size(); ++i)
      if (run_width(runs[i]) == target) show.push_back(i);
  if (show.empty() && !runs.empty()) {
    show.push_back(0);
    if (runs.size() > 1) show.push_back(runs.size() - 1);
  }
  return show;
}

svg::HeatMap heat(const std::string &title, size_t r, size_t c, std::vector<double> v,
                  const std::vector<std::string> &labels, const std::string &xl, const std::string &yl) {
  svg::HeatMap h;
  h.title = title;
  h.rows = r;
  h.cols = c;
  h.values = std::move(v);
  if (labels.size() == r && r == c) h.row_labels = h.col_labels = labels;
  h.xlabel = xl;
  h.ylabel = yl;
  return h;
}

// Collect square matrices below a "kernels"/"pre_kernels" node: name → (n, row-major values).
void collect_matrices(const json &j, const std::string &name, std::vector<std::pair<std::string, const json *>> &out,
                      int depth) {
  if (depth > 4) return;
  size_t r, c;
  std::vector<double> tmp;
  if (j.is_array() && !j.empty() && j[0].is_array() && !j[0].empty() && !j[0][0].is_array()) {
    out.emplace_back(name, &j);
    return;
  }
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      collect_matrices(it.value(), name.empty() ? it.key() : name + "." + it.key(), out, depth + 1);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i)
      collect_matrices(j[i], name.empty() ? std::to_string(i) : name + "." + std::to_string(i), out, depth + 1);
  }
  (void)r;
  (void)c;
}

std::string file_safe(std::string s) {
  for (auto &ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')) ch = '_';
  return s;
}

// Examples shown in kernel heat maps: all when P <= 60, else the first and the last 25 (the two classes
// of a balanced, class-sorted split, like the spec's figure on examples 0–24 and 75–99).
std::vector<size_t> kernel_examples(size_t P) {
  std::vector<size_t> idx;
  if (P <= 60) {
    for (size_t i = 0; i < P; ++i) idx.push_back(i);
  } else {
    for (size_t i = 0; i < 25; ++i) idx.push_back(i);
    for (size_t i = P - 25; i < P; ++i) idx.push_back(i);
  }
  return idx;
}

void kernel_heat(const std::string &title, const std::string &file, size_t P,
                 const std::function<double(size_t, size_t)> &at, Writer &w) {
  auto idx = kernel_examples(P);
  svg::HeatMap h;
  h.title = title;
  h.rows = h.cols = idx.size();
  h.values.resize(idx.size() * idx.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    h.row_labels.push_back(std::to_string(idx[i]));
    for (size_t j = 0; j < idx.size(); ++j) h.values[i * idx.size() + j] = at(idx[i], idx[j]);
  }
  h.col_labels = h.row_labels;
  h.xlabel = "training example \u03bd";
  h.ylabel = "training example \u03bc";
  h.annotate = false;
  h.diverging = std::any_of(h.values.begin(), h.values.end(), [](double x) { return x < 0; });
  w.put(file, svg::render(h));
}

// run.kernels: {path: [P, P, H] (or [H, P, P]) per-path pre-kernels C^{pp}, gp: [P, P], rn: [P, P], ...}
void kernel_plots(const json &run, const std::vector<std::string> &labels, const std::string &tag, Writer &w) {
  const json *k = jpath(run, "kernels");
  if (!k || !k->is_object()) k = jpath(run, "pre_kernels");
  if (!k || !k->is_object()) return;
  for (auto it = k->begin(); it != k->end(); ++it) {
    const json &v = it.value();
    if (!v.is_array() || v.empty() || !v[0].is_array() || v[0].empty()) continue;
    std::string key = it.key();
    if (v[0][0].is_array()) {  // 3-D: a stack of per-path kernels
      size_t d0 = v.size(), d1 = v[0].size(), d2 = v[0][0].size();
      bool last = d0 == d1;  // [P, P, H]
      size_t P = last ? d0 : d1, H = last ? d2 : d0;
      if (!last && d1 != d2) continue;
      for (size_t p = 0; p < H; ++p) {
        std::string name = p < labels.size() && labels.size() == H ? labels[p] : std::to_string(p);
        auto at = [&](size_t i, size_t j) {
          const json &e = last ? v[i][j][p] : v[p][i][j];
          return jnumber(&e);
        };
        std::string short_name = file_safe(name.substr(0, name.find(' ')));
        while (!short_name.empty() && short_name.front() == '_') short_name.erase(0, 1);
        while (!short_name.empty() && short_name.back() == '_') short_name.pop_back();
        kernel_heat("pre-kernel C of path " + name, "kernel_path" + std::to_string(p) + "_" + short_name + ".svg",
                    P, at, w);
      }
    } else {
      size_t P = v.size();
      if (v[0].size() != P) continue;
      std::string title = key == "gp" ? "GP kernel" : key == "rn" ? "renormalised kernel at N = " + tag : "kernel " + key + " at N = " + tag;
      kernel_heat(title, "kernel_" + file_safe(key) + (key == "gp" ? "" : "_N" + tag) + ".svg", P,
                  [&](size_t i, size_t j) { return jnumber(&v[i][j]); }, w);
    }
  }
}

void attention_plots(const json &doc, const json &runs, Writer &w) {
  // Accuracy vs width with GP reference lines.
  svg::LinePlot acc;
  acc.title = "Test accuracy vs width";
  acc.xlabel = "width N";
  acc.ylabel = "test accuracy";
  acc.logx = true;
  svg::Series rn;
  rn.name = "theory (renormalised kernel)";
  svg::Series full;
  full.name = "theory, full accuracy (mean \u03a6(y f/\u03c3))";
  full.dashed = true;
  for (const auto &r : runs) {
    double x = run_width(r);
    rn.x.push_back(x);
    rn.y.push_back(jnumber(jpath(r, "test.accuracy")));
    full.x.push_back(x);
    full.y.push_back(jnumber(jpath(r, "test.full_accuracy")));
  }
  acc.series.push_back(rn);
  svg::Series post;
  post.name = "posterior sampling";
  post.line = false;
  for (const auto &r : runs) {
    post.x.push_back(run_width(r));
    post.y.push_back(jnumber(jpath(r, "posterior.test.accuracy")));
  }
  if (std::any_of(post.y.begin(), post.y.end(), [](double v) { return std::isfinite(v); })) acc.series.push_back(post);
  if (std::any_of(full.y.begin(), full.y.end(), [](double v) { return std::isfinite(v); })) acc.series.push_back(full);
  double gp = jnumber(jpath(runs[0], "gp.test.accuracy"));
  std::set<long> seen;
  if (std::isfinite(gp)) {
    acc.hlines.push_back({gp, "GP limit (all paths of this network)", "#555555", true});
    seen.insert(std::lround(gp * 1e9));
  }
  // GP limits of the dataset's path subsets (theory estimator key gp_subsets).
  if (const json *subs = jpath(runs[0], "gp_subsets"); subs && subs->is_array())
    for (const auto &e : *subs) {
      const double a = jnumber(jpath(e, "test.accuracy"));
      const json *nm = jpath(e, "name");
      if (!std::isfinite(a) || !nm || !nm->is_string() || acc.hlines.size() >= 6) continue;
      if (!seen.insert(std::lround(a * 1e9)).second) continue;
      acc.hlines.push_back({a, "GP limit: " + pretty(nm->get<std::string>()) + " paths", "", true});
    }
  const json *extras = jpath(doc, "task_extras");
  if (extras) {
    std::vector<std::pair<std::string, double>> leaves;
    numeric_leaves(*extras, "", leaves);
    for (const auto &l : leaves) {
      std::string key = l.first;
      std::transform(key.begin(), key.end(), key.begin(), [](unsigned char ch) { return std::tolower(ch); });
      // GP-limit test accuracies of the task (e.g. of sub-networks); not train/validation/out-of-distribution.
      std::set<std::string> words;  // key split at '.' and '_'
      {
        std::string cur;
        for (char ch : key + ".") {
          if (ch == '.' || ch == '_') {
            if (!cur.empty()) words.insert(cur);
            cur.clear();
          } else {
            cur += ch;
          }
        }
      }
      if (key.find("accuracy") == std::string::npos || !words.count("gp") || words.count("train") ||
          words.count("val") || words.count("validation") || words.count("ood") || !(l.second >= 0 && l.second <= 1) ||
          acc.hlines.size() >= 6)
        continue;
      if (!seen.insert(std::lround(l.second * 1e9)).second) continue;  // same line already drawn
      std::string label = pretty(l.first);
      const std::string gpkey = "gp_test_accuracy.";
      if (l.first.compare(0, gpkey.size(), gpkey) == 0) label = "GP limit: " + pretty(l.first.substr(gpkey.size())) + " paths";
      acc.hlines.push_back({l.second, label, "", true});
    }
  }
  bool have_x = std::any_of(rn.x.begin(), rn.x.end(), [](double v) { return std::isfinite(v) && v > 0; });
  if (have_x) w.put("accuracy_vs_width.svg", svg::render(acc));

  // U heat maps and kernels at selected widths.
  for (size_t i : selected_runs(runs)) {
    const json &r = runs[i];
    std::string tag = wtag(run_width(r));
    auto labels = path_labels(doc, r);
    const json *U = jpath(r, "U");
    if (U && U->is_array()) {
      for (size_t l = 0; l < U->size(); ++l) {
        size_t rr, cc;
        std::vector<double> v;
        if (!jmatrix(&(*U)[l], &rr, &cc, &v)) continue;
        std::string t = "U" + std::to_string(l + 1) + " at N = " + tag;
        w.put("U" + std::to_string(l + 1) + "_N" + tag + ".svg",
              svg::render(heat(t, rr, cc, std::move(v), l == 0 ? labels : layer_head_labels(r, l + 1),
                               l == 0 ? "path \u03c0'" : "index", l == 0 ? "path \u03c0" : "index")));
      }
    }
    kernel_plots(r, labels, tag, w);
  }

  // Kernel–task alignment at the first width that has it.
  for (const auto &r : runs) {
    auto rnv = alignment_overlaps(jpath(r, "alignment.rn")), gpv = alignment_overlaps(jpath(r, "alignment.gp"));
    if (rnv.empty() && gpv.empty()) continue;
    svg::BarChart b;
    b.title = "Kernel\u2013task alignment at N = " + wtag(run_width(r));
    b.xlabel = "principal component (by decreasing eigenvalue)";
    b.ylabel = "overlap |v\u2096\u00b7y| / |y|";
    size_t k = std::max(rnv.size(), gpv.size());
    for (size_t i = 0; i < k; ++i) b.categories.push_back(std::to_string(i + 1));
    auto absv = [](std::vector<double> v) {
      for (auto &x : v) x = std::fabs(x);
      return v;
    };
    b.groups.push_back({"GP kernel", absv(gpv), "#7f7f7f"});
    b.groups.push_back({"renormalised kernel", absv(rnv), "#d62728"});
    b.ymin = 0;
    w.put("alignment_N" + wtag(run_width(r)) + ".svg", svg::render(b));
    break;
  }

  // Posterior (sampled) U₁ against the theory's, with Monte-Carlo error bars.
  {
    svg::LinePlot p;
    p.title = "Sampled vs theory U\u2081 entries";
    p.xlabel = "theory U\u2081 entry";
    p.ylabel = "posterior mean of U\u2081 entry";
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < runs.size(); ++i) {
      const json &r = runs[i];
      auto th = jvector(jpath(r, "U.0")), sa = jvector(jpath(r, "posterior.U")), se = jvector(jpath(r, "posterior.U_stderr"));
      if (th.empty() || th.size() != sa.size()) continue;
      svg::Series s;
      s.name = "N = " + wtag(run_width(r));
      s.line = false;
      s.x = th;
      s.y = sa;
      if (se.size() == sa.size()) s.yerr = se;
      for (double v : th) lo = std::min(lo, v), hi = std::max(hi, v);
      p.series.push_back(s);
    }
    if (!p.series.empty()) {
      svg::Series diag;
      diag.name = "y = x";
      diag.points = false;
      diag.dashed = true;
      diag.color = "#555555";
      diag.x = {lo, hi};
      diag.y = {lo, hi};
      p.series.push_back(diag);
      w.put("U_posterior_vs_theory.svg", svg::render(p));
    }
  }

  // Head scores per selected width.
  svg::BarChart hs;
  hs.title = "Head scores (from U\u2081, max = 1)";
  hs.xlabel = "head (layer 1 first)";
  hs.ylabel = "score";
  size_t nh = 0;
  for (size_t i : selected_runs(runs)) {
    auto v = jvector(jpath(runs[i], "head_scores"));
    if (v.empty()) continue;
    nh = std::max(nh, v.size());
    hs.groups.push_back({"N = " + wtag(run_width(runs[i])), v, ""});
  }
  if (nh > 0) {
    auto hl = jstrings(jpath(runs[0], "head_labels"));
    for (size_t i = 0; i < nh; ++i) hs.categories.push_back(i < hl.size() ? hl[i] : "#" + std::to_string(i + 1));
    hs.ymin = 0;
    w.put("head_scores.svg", svg::render(hs));
  }
}

// Replica curves (docs/replica.md): run.curves = [{nu, lambda, alpha[], test_loss[], bayes_loss,
// sim_test_loss?, sim_stderr?, sim_alpha_realised?}, ...]; run.lambda_curves = [{nu?, alpha[], lambda[],
// test_loss [n_alpha, n_lambda]}, ...].
bool replica_plots(const json &runs, Writer &w) {
  bool any = false;
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    std::string suffix = runs.size() > 1 ? "_" + std::to_string(ri) : "";
    const json *curves = jpath(runs[ri], "curves");
    if (curves && curves->is_array() && !curves->empty()) {
      svg::LinePlot p;
      p.title = "Replica theory: test loss vs \u03b1";
      p.xlabel = "\u03b1";
      p.ylabel = "test loss";
      p.logx = true;
      std::map<double, double> bayes;  // nu → Bayes loss line
      size_t ci = 0;
      bool positive = true;
      for (const auto &c : *curves) {
        double nu = jnumber(jpath(c, "nu")), lam = jnumber(jpath(c, "lambda"));
        char name[96];
        std::snprintf(name, sizeof name, "\u03bd = %g, \u03bb = %g", nu, lam);
        std::string col = svg::palette(ci++);
        svg::Series s;
        s.name = name;
        s.color = col;
        s.points = false;
        s.x = jvector(jpath(c, "alpha"));
        s.y = jvector(jpath(c, "test_loss"));
        if (!s.x.empty() && s.x.size() == s.y.size()) p.series.push_back(s);
        auto sy = jvector(jpath(c, "sim_test_loss"));
        if (!sy.empty()) {
          svg::Series m;
          m.name = std::string(name) + " (simulation)";
          m.color = col;
          m.line = false;
          m.y = sy;
          m.yerr = jvector(jpath(c, "sim_stderr"));
          m.x = jvector(jpath(c, "sim_alpha_realised"));
          if (m.x.size() != m.y.size()) m.x = s.x;
          if (m.x.size() == m.y.size()) p.series.push_back(m);
        }
        for (double v : s.y)
          if (std::isfinite(v) && v <= 0) positive = false;
        double b = jnumber(jpath(c, "bayes_loss"));
        if (!std::isfinite(b) && std::isfinite(nu) && nu > 0) b = 1.0 / nu;
        if (std::isfinite(nu) && std::isfinite(b)) bayes[nu] = b;
      }
      size_t bi = 0;
      for (const auto &nb : bayes) {
        char lab[64];
        std::snprintf(lab, sizeof lab, "Bayes loss (1/\u03bd line), \u03bd = %g", nb.first);
        p.hlines.push_back({nb.second, lab, bi++ % 2 ? "#999999" : "#444444", true});
      }
      p.logy = positive;
      if (!p.series.empty()) {
        w.put("replica_curves" + suffix + ".svg", svg::render(p));
        any = true;
      }
    }
    const json *lc = jpath(runs[ri], "lambda_curves");
    if (lc && lc->is_array()) {
      for (size_t k = 0; k < lc->size(); ++k) {
        const json &c = (*lc)[k];
        auto alpha = jvector(jpath(c, "alpha")), lam = jvector(jpath(c, "lambda"));
        size_t r = 0, cc = 0;
        std::vector<double> tl;
        if (!jmatrix(jpath(c, "test_loss"), &r, &cc, &tl) || r != alpha.size() || cc != lam.size()) continue;
        svg::LinePlot p;
        double nu = jnumber(jpath(c, "nu"));
        p.title = std::isfinite(nu) ? "Replica theory: test loss vs \u03bb (\u03bd = " + svg::format_tick(nu) + ")"
                                    : "Replica theory: test loss vs \u03bb";
        p.xlabel = "\u03bb";
        p.ylabel = "test loss";
        p.logx = true;
        size_t step = (r + 7) / 8;  // at most 8 curves
        for (size_t i = 0; i < r; i += step) {
          svg::Series s;
          s.name = "\u03b1 = " + svg::format_tick(alpha[i]);
          s.points = false;
          s.x = lam;
          s.y.assign(tl.begin() + static_cast<std::ptrdiff_t>(i * cc), tl.begin() + static_cast<std::ptrdiff_t>((i + 1) * cc));
          p.series.push_back(s);
        }
        w.put("replica_lambda_" + std::to_string(k) + suffix + ".svg", svg::render(p));
        any = true;
      }
    }
  }
  return any;
}

// Generic fallbacks for other estimators: every square matrix named like a coupling / order parameter
// (J, U, couplings, W) as a heat map, and every 1-D series named "trace"/"history"/"loss" as a line plot.
void generic_plots(const json &runs, Writer &w) {
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    const json &r = runs[ri];
    if (!r.is_object()) continue;
    std::string suffix = runs.size() > 1 ? "_run" + std::to_string(ri) : "";
    std::vector<std::pair<std::string, const json *>> mats;
    collect_matrices(r, "", mats, 0);
    // Learned vs true side by side (docs/potts.md): A next to J, V_centred next to V_target_centred.
    std::set<std::string> paired;
    for (auto pr : {std::make_pair("A", "J"), std::make_pair("V_centred", "V_target_centred")}) {
      size_t r1, c1, r2, c2;
      std::vector<double> v1, v2;
      if (!jmatrix(jpath(r, pr.first), &r1, &c1, &v1) || !jmatrix(jpath(r, pr.second), &r2, &c2, &v2)) continue;
      svg::HeatMap h1 = heat(std::string("learned ") + pr.first, r1, c1, std::move(v1), {}, "column", "row");
      svg::HeatMap h2 = heat(std::string("target ") + pr.second, r2, c2, std::move(v2), {}, "column", "row");
      h1.size = h2.size = 360;
      double m = 0;
      for (const auto *hm : {&h1, &h2})
        for (double x : hm->values)
          if (std::isfinite(x)) m = std::max(m, std::fabs(x));
      h1.vmax = h2.vmax = m;  // one colour scale for both
      w.put(std::string(pr.first) + "_vs_" + pr.second + suffix + ".svg", svg::hstack({svg::render(h1), svg::render(h2)}));
      paired.insert(pr.first);
      paired.insert(pr.second);
    }
    // Test loss vs the perturbation a (pseudolikelihood a_scan).
    auto sa = jvector(jpath(r, "a_scan.a")), st = jvector(jpath(r, "a_scan.test_loss"));
    if (!sa.empty() && sa.size() == st.size()) {
      svg::LinePlot p;
      p.title = "Test loss vs perturbation a";
      p.xlabel = "a";
      p.ylabel = "test loss";
      svg::Series s;
      s.name = "test loss";
      s.x = sa;
      s.y = st;
      p.series.push_back(s);
      auto tr = jvector(jpath(r, "a_scan.train_loss"));
      if (tr.size() == sa.size()) {
        svg::Series t;
        t.name = "train loss";
        t.x = sa;
        t.y = tr;
        t.dashed = true;
        p.series.push_back(t);
      }
      double es = jnumber(jpath(r, "a_scan.epsilon_star"));
      if (!std::isfinite(es)) es = jnumber(jpath(r, "epsilon_star"));
      if (std::isfinite(es)) p.hlines.push_back({es, "\u03b5* (Bayes-optimal)", "#555555", true});
      w.put("a_scan" + suffix + ".svg", svg::render(p));
    }
    int drawn = 0;
    for (const auto &m : mats) {
      if (drawn >= 12) break;
      if (paired.count(m.first)) continue;
      size_t rr, cc;
      std::vector<double> v;
      if (!jmatrix(m.second, &rr, &cc, &v) || rr < 2 || cc < 2) continue;
      svg::HeatMap h = heat(m.first + (runs.size() > 1 ? " (run " + std::to_string(ri) + ")" : ""), rr, cc,
                            std::move(v), {}, "column", "row");
      w.put("matrix_" + file_safe(m.first) + suffix + ".svg", svg::render(h));
      ++drawn;
    }
    // Training curves: an object of equally long numeric lists with an x key (epoch/iteration/step).
    const json *cv = jpath(r, "curves");
    if (cv && cv->is_object()) {
      std::vector<double> x;
      std::string xname = "index";
      for (const char *k : {"epoch", "iteration", "step", "sweep"})
        if (cv->contains(k)) {
          x = jvector(&(*cv)[k]);
          xname = k;
          break;
        }
      svg::LinePlot loss, other;
      loss.title = "Training curves";
      loss.xlabel = other.xlabel = xname;
      loss.ylabel = "loss";
      for (auto it = cv->begin(); it != cv->end(); ++it) {
        if (it.key() == xname || !it.value().is_array() || it.value().empty() || !it.value()[0].is_number()) continue;
        svg::Series s;
        s.name = it.key();
        s.points = false;
        s.y = jvector(&it.value());
        s.x = x;
        if (s.x.size() != s.y.size()) {
          s.x.clear();
          for (size_t i = 0; i < s.y.size(); ++i) s.x.push_back(static_cast<double>(i));
        }
        bool is_loss = it.key().find("loss") != std::string::npos;
        (is_loss ? loss : other).series.push_back(s);
        if (!is_loss) other.ylabel = it.key();
      }
      // Long runs read best on a log axis; an x that starts at 0 is shifted by one.
      bool shift = !x.empty() && x.front() == 0 && x.back() > 100;
      bool logx = (!x.empty() && x.front() > 0 && x.back() / x.front() > 100) || shift;
      if (shift) {
        for (auto *pl : {&loss, &other})
          for (auto &se : pl->series)
            for (auto &v : se.x) v += 1;
        loss.xlabel = other.xlabel = xname + " + 1";
      }
      loss.logx = other.logx = logx;
      // Reference levels of the run (e.g. the Bayes-optimal loss epsilon_star of the pseudolikelihood fit).
      for (auto it = r.begin(); it != r.end(); ++it)
        if (it.key().find("epsilon_star") != std::string::npos && it.value().is_number())
          loss.hlines.push_back({it.value().get<double>(), it.key(), "", true});
      if (!loss.series.empty()) w.put("curves_loss" + suffix + ".svg", svg::render(loss));
      if (!other.series.empty()) {
        other.title = other.series.size() == 1 ? other.series[0].name : "Training curves";
        w.put("curves_other" + suffix + ".svg", svg::render(other));
      }
    }
    // Scalar-vs-index traces.
    for (auto it = r.begin(); it != r.end(); ++it) {
      std::string key = it.key();
      std::string lk = key;
      std::transform(lk.begin(), lk.end(), lk.begin(), [](unsigned char ch) { return std::tolower(ch); });
      if (lk.find("trace") == std::string::npos && lk.find("history") == std::string::npos &&
          lk.find("loss") == std::string::npos)
        continue;
      if (!it.value().is_array() || it.value().empty() || !it.value()[0].is_number()) continue;
      svg::LinePlot p;
      p.title = key;
      p.xlabel = "index";
      p.ylabel = key;
      svg::Series s;
      s.points = it.value().size() <= 60;
      s.y = jvector(&it.value());
      for (size_t i = 0; i < s.y.size(); ++i) s.x.push_back(static_cast<double>(i));
      p.series.push_back(s);
      w.put("trace_" + file_safe(key) + suffix + ".svg", svg::render(p));
    }
  }
}

}  // namespace

bool write_plots(const json &doc, const std::string &dir, std::vector<std::string> *written, std::string *err) {
  Writer w{dir, written, err};
  const json *runs = jpath(doc, "runs");
  if (!runs || !runs->is_array() || runs->empty()) return true;
  json att = json::array();
  for (const auto &r : *runs)
    if (is_attention_run(r)) att.push_back(r);
  if (!att.empty()) attention_plots(doc, att, w);
  if (w.ok && std::any_of(runs->begin(), runs->end(),
                          [](const json &r) { return jpath(r, "temperature_scan") || jpath(r, "pruning"); }))
    w.ok = write_oneshot_plots(doc, dir, written, err);
  bool rep = replica_plots(*runs, w);
  if (att.empty() && !rep) {
    generic_plots(*runs, w);
    // The task's own matrices (e.g. the true couplings J and colour matrix U of potts).
    const json *ex = jpath(doc, "task_extras");
    // Equilibration test of the potts task: conditional entropy vs sweeps.
    auto sw = jvector(jpath(doc, "task_extras.equilibration.sweeps")),
         ce = jvector(jpath(doc, "task_extras.equilibration.cond_entropy"));
    if (!sw.empty() && sw.size() == ce.size()) {
      svg::LinePlot p;
      p.title = "Equilibration: conditional entropy vs sweeps";
      p.xlabel = "sweeps";
      p.ylabel = "conditional entropy (nats per site)";
      svg::Series s;
      s.name = "Gibbs chains";
      s.x = sw;
      s.y = ce;
      s.yerr = jvector(jpath(doc, "task_extras.equilibration.cond_entropy_se"));
      if (s.yerr.size() != s.y.size()) s.yerr.clear();
      bool shift = sw.front() == 0;
      if (shift) {
        for (auto &x : s.x) x += 1;
        p.xlabel = "sweeps + 1";
      }
      p.logx = s.x.front() > 0 && s.x.back() / s.x.front() > 30;
      p.series.push_back(s);
      w.put("task_equilibration.svg", svg::render(p));
    }
    if (ex && ex->is_object()) {
      int drawn = 0;
      for (auto it = ex->begin(); it != ex->end() && drawn < 6; ++it) {
        size_t rr, cc;
        std::vector<double> v;
        if (!jmatrix(&it.value(), &rr, &cc, &v) || rr < 2 || cc < 2) continue;
        svg::HeatMap h = heat("task: " + it.key(), rr, cc, std::move(v), {}, "column", "row");
        w.put("task_" + file_safe(it.key()) + ".svg", svg::render(h));
        ++drawn;
      }
    }
  }
  return w.ok;
}

bool write_comparison(const std::vector<json> &docs, const std::vector<std::string> &labels, const std::string &dir,
                      std::vector<std::string> *written, std::string *err) {
  Writer w{dir, written, err};
  svg::LinePlot acc, loss;
  acc.title = "Test accuracy vs width";
  acc.xlabel = "width N";
  acc.ylabel = "test accuracy";
  acc.logx = true;
  loss.title = "Test loss during training";
  loss.ylabel = "test loss";
  std::string xname;
  bool shift = false;
  double eps = NAN;
  for (size_t d = 0; d < docs.size(); ++d) {
    const json *runs = jpath(docs[d], "runs");
    if (!runs || !runs->is_array()) continue;
    svg::Series a;
    a.name = labels[d];
    for (const auto &r : *runs)
      if (is_attention_run(r)) {
        a.x.push_back(run_width(r));
        a.y.push_back(jnumber(jpath(r, "test.accuracy")));
      }
    if (!a.x.empty()) acc.series.push_back(a);
    for (size_t ri = 0; ri < runs->size(); ++ri) {
      const json &r = (*runs)[ri];
      auto y = jvector(jpath(r, "curves.test_loss"));
      if (y.empty()) continue;
      std::vector<double> x;
      for (const char *k : {"epoch", "iteration", "step"}) {
        x = jvector(jpath(r, std::string("curves.") + k));
        if (!x.empty()) {
          if (xname.empty()) xname = k;
          break;
        }
      }
      if (x.size() != y.size()) {
        x.clear();
        for (size_t i = 0; i < y.size(); ++i) x.push_back(static_cast<double>(i));
      }
      if (!x.empty() && x.front() == 0) shift = true;
      svg::Series s;
      s.name = runs->size() > 1 ? labels[d] + " #" + std::to_string(ri) : labels[d];
      s.points = false;
      s.x = x;
      s.y = y;
      loss.series.push_back(s);
      if (!std::isfinite(eps)) eps = jnumber(jpath(r, "epsilon_star"));
    }
  }
  if (!acc.series.empty()) w.put("compare_accuracy_vs_width.svg", svg::render(acc));
  if (!loss.series.empty()) {
    loss.xlabel = (xname.empty() ? std::string("index") : xname) + (shift ? " + 1" : "");
    if (shift)
      for (auto &s : loss.series)
        for (auto &x : s.x) x += 1;
    loss.logx = true;
    if (std::isfinite(eps)) loss.hlines.push_back({eps, "\u03b5* (Bayes-optimal)", "#555555", true});
    w.put("compare_test_loss.svg", svg::render(loss));
  }
  return w.ok;
}

}  // namespace amtool
