// attnmech — the report spec of attention runs (the run record of am::attention::estimate: test, gp, U, U_a,
// solver, alignment, kernels, head_scores; docs/results-schema.md), shared by the describe functions of
// the estimators whose runs carry it (theory, posterior). Header only; everything is inline.
#ifndef ATTNMECH_PLUGINS_ATTENTION_REPORT_HPP
#define ATTNMECH_PLUGINS_ATTENTION_REPORT_HPP

#include <attnmech/report_spec.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace am::attention_report {

using namespace am::spec;

inline std::string wtag(double w) { return std::isfinite(w) ? format("%.0f", w) : "x"; }

inline bool any_run_has(const am_record *res, const std::string &key) {
  const size_t n = am_record_size(am_record_get(res, "runs"));
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(number(res, cat(cat("runs", i), key)))) return true;
  return false;
}

// Path of the path labels of run `r` ("" if none): the run's own, else the task's.
inline std::string path_labels(const am_record *res, const std::string &r) {
  if (count(at(res, cat(r, "path_labels"))) > 0) return cat(r, "path_labels");
  if (count(at(res, "task_extras.path_labels")) > 0) return "task_extras.path_labels";
  return "";
}

// Slice "a:b" of run.head_labels holding layer `layer`'s labels ("l<layer>_..."); "" if none.
inline std::string layer_head_labels(const am_record *res, const std::string &r, size_t layer) {
  const std::vector<std::string> hl = strings(res, cat(r, "head_labels"));
  const std::string prefix = "l" + std::to_string(layer) + "_";
  size_t a = hl.size(), b = 0;
  for (size_t i = 0; i < hl.size(); ++i)
    if (hl[i].compare(0, prefix.size(), prefix) == 0) a = std::min(a, i), b = i + 1;
  return a < b ? cat(cat(r, "head_labels"), std::to_string(a) + ":" + std::to_string(b)) : "";
}

// "good_denoising" → "good denoising"
inline std::string pretty(std::string s) {
  for (auto &c : s)
    if (c == '_' || c == '.') c = ' ';
  return s;
}

// Reference lines (and summary items) of GP-limit accuracies: the run's gp_subsets [{name, test{accuracy}}],
// else (results written before gp_subsets existed) task_extras.gp_test_accuracy.<name>.
inline std::vector<std::pair<std::string, std::string>> gp_references(const am_record *res) {
  std::vector<std::pair<std::string, std::string>> out;  // (label, path)
  const am_record *subsets = at(res, "runs.0.gp_subsets");
  for (size_t i = 0; i < am_record_size(subsets); ++i) {
    const char *name = am_record_string(am_record_get(am_record_at(subsets, i), "name"));
    out.emplace_back(std::string("GP ") + (name ? name : std::to_string(i)),
                     "runs.0.gp_subsets." + std::to_string(i) + ".test.accuracy");
  }
  if (!out.empty()) return out;
  const am_record *g = at(res, "task_extras.gp_test_accuracy");
  for (size_t i = 0; am_record_type_of(g) == AM_REC_OBJECT && i < am_record_size(g); ++i)
    if (am_record_type_of(am_record_at(g, i)) == AM_REC_NUMBER)
      out.emplace_back("GP limit: " + pretty(am_record_key(g, i)) + " paths",
                       std::string("task_extras.gp_test_accuracy.") + am_record_key(g, i));
  return out;
}

inline void accuracy_plot(Report &rep, const am_record *res, const char *sampled) {
  const size_t n = am_record_size(am_record_get(res, "runs"));
  bool have_x = false;
  for (size_t i = 0; i < n; ++i) have_x = have_x || run_width(res, i) > 0;
  if (!have_x) return;
  Node p = rep.lines("accuracy_vs_width", "Test accuracy vs width", "width N", "test accuracy").log_x();
  p.series("theory (renormalised kernel)", "runs.*.width", "runs.*.test.accuracy");
  if (sampled && any_run_has(res, sampled)) p.series("posterior sampling", "runs.*.width", cat("runs.*", sampled), "points");
  if (any_run_has(res, "test.full_accuracy"))
    p.series("theory, full accuracy (mean \u03a6(y f/\u03c3))", "runs.*.width", "runs.*.test.full_accuracy", "dashed").flag("points", true);
  std::set<long> seen;  // one line per distinct level
  const double gp = number(res, "runs.0.gp.test.accuracy");
  if (std::isfinite(gp)) {
    p.hline("GP limit (all paths of this network)", "runs.0.gp.test.accuracy").str("color", "#555555");
    seen.insert(std::lround(gp * 1e9));
  }
  size_t lines = seen.size();
  for (const auto &ref : gp_references(res)) {
    const double v = number(res, ref.second);
    if (!(v >= 0 && v <= 1) || lines >= 6 || !seen.insert(std::lround(v * 1e9)).second) continue;
    p.hline(ref.first, ref.second);
    ++lines;
  }
}

inline std::string file_safe(std::string s) {
  for (auto &ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')) ch = '_';
  while (!s.empty() && s.front() == '_') s.erase(0, 1);
  while (!s.empty() && s.back() == '_') s.pop_back();
  return s;
}

// `examples` (may be ""): the path of the training examples a stored block holds (the theory's default kernels).
inline Node kernel_map(Report &rep, const std::string &file, const std::string &title, const std::string &matrix,
                       bool diverging, const std::string &examples) {
  Node h = rep.heatmap(file, title, diverging ? "diverging" : "sequential");
  h.panel("", matrix);
  if (!examples.empty()) h.str("indices", examples);
  return h.num("trim", 25).flag("annotate", false).str("x_label", "training example \u03bd").str("y_label", "training example \u03bc");
}

// Whether the kernel at `path` has a negative element: min.<key> (index p of a list) when the run stored blocks
// with the minima of the whole kernels, else its stored values.
inline bool kernel_negative(const am_record *res, const std::string &kp, const std::string &key, size_t p,
                            const std::vector<double> &v, size_t stride, size_t first, size_t n) {
  const std::vector<double> lo = numbers(res, cat(cat(kp, "min"), key));
  if (lo.size() > p) return lo[p] < 0;
  for (size_t e = 0; e < n; ++e)
    if (v[first + e * stride] < 0) return true;
  return false;
}

// Kernels of run r: per-path pre-kernels ([P, P, H] or [H, P, P]) and the P × P kernels (gp, rn, ...).
inline void kernel_plots(Report &rep, const am_record *res, const std::string &r, const std::string &tag) {
  std::string kp = cat(r, "kernels");
  if (am_record_type_of(at(res, kp)) != AM_REC_OBJECT) kp = cat(r, "pre_kernels");
  const am_record *k = at(res, kp);
  const std::vector<std::string> labels = strings(res, path_labels(res, r));
  const std::string examples = has(res, cat(kp, "examples")) ? cat(kp, "examples") : "";  // blocks of these examples
  for (size_t i = 0; am_record_type_of(k) == AM_REC_OBJECT && i < am_record_size(k); ++i) {
    const std::string key = am_record_key(k, i), path = cat(kp, key);
    const std::vector<size_t> s = shape(am_record_at(k, i));
    if (s.size() != 3 && !(s.size() == 2 && s[0] == s[1])) continue;
    const std::vector<double> v = numbers(res, path);
    if (s.size() == 3) {
      const bool last = s[0] == s[1];  // [P, P, H]
      const size_t P = last ? s[0] : s[1], H = last ? s[2] : s[0];
      if ((!last && s[1] != s[2]) || v.size() != P * P * H) continue;
      for (size_t p = 0; p < H; ++p) {
        const std::string name = labels.size() == H ? labels[p] : std::to_string(p);
        const bool negative = kernel_negative(res, kp, key, p, v, last ? H : 1, last ? p : p * P * P, P * P);
        kernel_map(rep, "kernel_path" + std::to_string(p) + "_" + file_safe(name.substr(0, name.find(' '))),
                   "pre-kernel C of path " + name, last ? cat(path, "*.*." + std::to_string(p)) : cat(path, p), negative,
                   examples);
      }
    } else {
      const bool negative = kernel_negative(res, kp, key, 0, v, 1, 0, v.size());
      const std::string title = key == "gp" ? "GP kernel" : key == "rn" ? "renormalised kernel at N = " + tag : "kernel " + key + " at N = " + tag;
      kernel_map(rep, "kernel_" + file_safe(key) + (key == "gp" ? "" : "_N" + tag), title, path, negative, examples);
    }
  }
}

// Path of an alignment entry's overlaps (an array, or an object with "overlaps").
inline std::string overlaps(const am_record *res, const std::string &p) {
  return am_record_type_of(at(res, p)) == AM_REC_OBJECT ? cat(p, "overlaps") : p;
}

inline void matrix_plots(Report &rep, const am_record *res) {
  for (size_t i : selected_runs(res)) {
    const std::string r = cat("runs", i), tag = wtag(run_width(res, i)), labels = path_labels(res, r);
    const size_t L = count(at(res, cat(r, "U")));
    for (size_t l = 0; l < L; ++l) {
      const std::string name = "U" + std::to_string(l + 1), lab = l == 0 ? labels : layer_head_labels(res, r, l + 1);
      Node h = rep.heatmap(name + "_N" + tag, name + " at N = " + tag);
      h.panel("", cat(cat(r, "U"), l));
      h.labels(lab, lab).str("x_label", l == 0 ? "path \u03c0'" : "index").str("y_label", l == 0 ? "path \u03c0" : "index");
    }
    kernel_plots(rep, res, r, tag);
  }
  const size_t n = am_record_size(am_record_get(res, "runs"));
  for (size_t i = 0; i < n; ++i) {  // alignment at the first width that has it
    const std::string r = cat("runs", i), tag = wtag(run_width(res, i));
    const std::string rn = overlaps(res, cat(r, "alignment.rn")), gp = overlaps(res, cat(r, "alignment.gp"));
    if (numbers(res, rn).empty() && numbers(res, gp).empty()) continue;
    Node b = rep.bars("alignment_N" + tag, "Kernel\u2013task alignment at N = " + tag,
                      "principal component (by decreasing eigenvalue)", "overlap |v\u2096\u00b7y| / |y|");
    b.series("GP kernel", "", gp).flag("abs", true).str("color", "#7f7f7f");
    b.series("renormalised kernel", "", rn).flag("abs", true).str("color", "#d62728");
    break;
  }
  Node hs(nullptr, nullptr);
  for (size_t i : selected_runs(res)) {
    const std::string r = cat("runs", i);
    if (numbers(res, cat(r, "head_scores")).empty()) continue;
    if (!hs.valid()) {
      hs = rep.bars("head_scores", "Head scores (from U\u2081, max = 1)", "head (layer 1 first)", "score");
      if (count(at(res, "runs.0.head_labels")) > 0) hs.str("categories", "runs.0.head_labels");
    }
    hs.series("N = " + wtag(run_width(res, i)), "", cat(r, "head_scores"));
  }
}

inline void summary(Report &rep, const am_record *res, const char *sampled) {
  Node t = rep.table("");
  t.column("N", "runs.*.width", "%.0f").column("RN acc", "runs.*.test.accuracy", "%.4f");
  t.column("GP acc", "runs.*.gp.test.accuracy", "%.4f");
  if (sampled && any_run_has(res, sampled)) t.column("sampled", cat("runs.*", sampled), "%.4f");
  t.column("S_code", "runs.*.action", "%.6f").column("U_a", "runs.*.U_a", "%.4f");
  t.column("iters", "runs.*.solver.iterations", "%.0f").column("solver status", "runs.*.solver.status", "%s");
  const auto refs = gp_references(res);
  if (!refs.empty()) {
    Node v = rep.values("reference accuracies");
    v.value("GP limit of this network", "runs.0.gp.test.accuracy", "%.4f");
    for (const auto &ref : refs) v.value(ref.first, ref.second, "%.4f");
  }
  for (size_t i : selected_runs(res)) {
    const std::string r = cat("runs", i), tag = wtag(run_width(res, i)), labels = path_labels(res, r);
    const size_t L = count(at(res, cat(r, "U")));
    for (size_t l = 0; l < L; ++l) {
      const std::string lab = l == 0 ? labels : layer_head_labels(res, r, l + 1);
      std::string title = "U_" + std::to_string(l + 1) + " at N = " + tag;
      if (l == 0 && !labels.empty()) title += " (paths in packing order, h_1 most significant)";
      rep.matrix(title, cat(cat(r, "U"), l)).labels(lab, lab);
    }
  }
  const size_t n = am_record_size(am_record_get(res, "runs"));
  for (size_t i = 0; i < n; ++i) {
    const std::string r = cat("runs", i);
    const std::string rn = overlaps(res, cat(r, "alignment.rn")), gp = overlaps(res, cat(r, "alignment.gp"));
    const std::vector<double> vr = numbers(res, rn), vg = numbers(res, gp);
    if (vr.empty() && vg.empty()) continue;
    Node v = rep.values("kernel-task alignment at N = " + wtag(run_width(res, i)) + " (overlap |v_k . y|/|y| of the top " +
                        std::to_string(std::max(vr.size(), vg.size())) + " PCs)");
    for (const auto &e : {std::make_pair(std::string("renormalised kernel"), std::make_pair(rn, vr)),
                          std::make_pair(std::string("GP kernel"), std::make_pair(gp, vg))}) {
      const std::vector<double> &x = e.second.second;
      if (x.empty()) continue;
      size_t best = 0;
      for (size_t k = 1; k < x.size(); ++k)
        if (std::fabs(x[k]) > std::fabs(x[best])) best = k;
      v.value(e.first + ": best PC #" + std::to_string(best + 1), cat(e.second.first, best), "%.3f");
      v.value(e.first + ": top 3 PCs", cat(e.second.first, "0:3"), "%.3f");
    }
    break;
  }
  if (any_run_has(res, "head_scores")) rep.matrix("head scores (rows: N; max = 1)", "runs.*.head_scores", "%.3f").labels("runs.*.width", "runs.0.head_labels");
}

// Plots and summary of a results document whose runs are attention runs. `sampled`: the run key of a
// sampled test accuracy drawn next to the theory's ("posterior.test.accuracy"), or nullptr.
inline am_status describe(const am_record *results, am_record *report, const char *sampled) {
  Report rep(report);
  accuracy_plot(rep, results, sampled);
  matrix_plots(rep, results);
  summary(rep, results, sampled);
  return rep.status();
}

}  // namespace am::attention_report

#endif
