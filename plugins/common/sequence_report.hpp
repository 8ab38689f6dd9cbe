// attnmech — the report spec of sequence-estimator runs (docs/potts.md: A next to J, V_centred next to
// V_target_centred, training curves with epsilon_star, the a scan, other matrices, traces), shared by the
// describe functions of `pseudolikelihood` and `vanilla`. Header only; everything is inline.
#ifndef ATTNMECH_PLUGINS_SEQUENCE_REPORT_HPP
#define ATTNMECH_PLUGINS_SEQUENCE_REPORT_HPP

#include <attnmech/report_spec.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace am::sequence_report {

using namespace am::spec;

inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

inline std::string file_safe(std::string s) {
  for (auto &ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.')) ch = '_';
  return s;
}

// Matrices (2-d, both sides >= 2) below a node, by path relative to it, depth <= 4.
inline void collect_matrices(const am_record *n, const std::string &rel, std::vector<std::string> &out, int depth) {
  if (depth > 4 || !n) return;
  const am_record_type t = am_record_type_of(n);
  if (t == AM_REC_ARRAY || (t == AM_REC_LIST && am_record_type_of(am_record_at(n, 0)) != AM_REC_OBJECT)) {
    const std::vector<size_t> s = shape(n);
    if (s.size() == 2 && s[0] >= 2 && s[1] >= 2) out.push_back(rel);
    if (t == AM_REC_ARRAY || s.size() <= 2) return;
  }
  if (t != AM_REC_OBJECT && t != AM_REC_LIST) return;
  for (size_t i = 0; i < am_record_size(n); ++i) {
    const char *k = am_record_key(n, i);
    collect_matrices(am_record_at(n, i), cat(rel, k ? std::string(k) : std::to_string(i)), out, depth + 1);
  }
}

// Learned next to true, one colour scale: A | J, V_centred | V_target_centred.
inline std::set<std::string> paired_plots(Report &rep, const am_record *res, const std::string &r, const std::string &suffix) {
  std::set<std::string> paired;
  for (const auto &pr : {std::make_pair("A", "J"), std::make_pair("V_centred", "V_target_centred")}) {
    if (!is_matrix(at(res, cat(r, pr.first))) || !is_matrix(at(res, cat(r, pr.second)))) continue;
    Node h = rep.heatmap(std::string(pr.first) + "_vs_" + pr.second + suffix, "");
    h.panel(std::string("learned ") + pr.first, cat(r, pr.first));
    h.panel(std::string("target ") + pr.second, cat(r, pr.second));
    h.str("x_label", "column").str("y_label", "row");
    paired.insert(pr.first);
    paired.insert(pr.second);
  }
  return paired;
}

inline void a_scan_plot(Report &rep, const am_record *res, const std::string &r, const std::string &suffix) {
  const size_t na = numbers(res, cat(r, "a_scan.a")).size();
  if (na == 0 || numbers(res, cat(r, "a_scan.test_loss")).size() != na) return;
  Node p = rep.lines("a_scan" + suffix, "Test loss vs perturbation a", "a", "test loss");
  p.series("test loss", cat(r, "a_scan.a"), cat(r, "a_scan.test_loss"));
  if (numbers(res, cat(r, "a_scan.train_loss")).size() == na)
    p.series("train loss", cat(r, "a_scan.a"), cat(r, "a_scan.train_loss"), "dashed");
  const std::string es = std::isfinite(number(res, cat(r, "a_scan.epsilon_star"))) ? cat(r, "a_scan.epsilon_star") : cat(r, "epsilon_star");
  p.hline("\u03b5* (Bayes-optimal)", es).str("color", "#555555");
}

// Training curves: an object of equally long lists with an x key (epoch/iteration/step/sweep).
inline void curve_plots(Report &rep, const am_record *res, const std::string &r, const std::string &suffix) {
  const std::string cp = cat(r, "curves");
  const am_record *cv = at(res, cp);
  if (am_record_type_of(cv) != AM_REC_OBJECT) return;
  std::string xname;
  for (const char *k : {"epoch", "iteration", "step", "sweep"})
    if (xname.empty() && am_record_get(cv, k)) xname = k;
  const std::vector<double> x = xname.empty() ? std::vector<double>{} : numbers(res, cat(cp, xname));
  const bool shift = !x.empty() && x.front() == 0 && x.back() > 100;  // long runs on a log axis, epoch + 1
  const bool logx = (!x.empty() && x.front() > 0 && x.back() / x.front() > 100) || shift;
  const std::string xl = (xname.empty() ? std::string("index") : xname) + (shift ? " + 1" : "");
  Node loss(nullptr, nullptr), other(nullptr, nullptr);
  std::vector<std::string> others;
  for (size_t i = 0; i < am_record_size(cv); ++i) {
    const std::string key = am_record_key(cv, i);
    const size_t ny = numbers(res, cat(cp, key)).size();
    if (key == xname || count(am_record_at(cv, i)) == 0 || shape(am_record_at(cv, i)).size() != 1) continue;
    const bool is_loss = key.find("loss") != std::string::npos;
    Node &p = is_loss ? loss : other;
    if (!p.valid()) p = rep.lines(is_loss ? "curves_loss" + suffix : "curves_other" + suffix, is_loss ? "Training curves" : "",
                                  xl, is_loss ? "loss" : key).log_x(logx);
    Node s = p.series(key, x.size() == ny ? cat(cp, xname) : "", cat(cp, key), "line");
    if (shift) s.num("x_offset", 1);
    if (!is_loss) others.push_back(key);
  }
  if (other.valid()) other.str("title", others.size() == 1 ? others[0] : "Training curves");
  if (!loss.valid()) return;
  const am_record *run = at(res, r);  // reference levels of the run (e.g. epsilon_star)
  for (size_t i = 0; i < am_record_size(run); ++i) {
    const std::string key = am_record_key(run, i);
    if (key.find("epsilon_star") != std::string::npos && am_record_type_of(am_record_at(run, i)) == AM_REC_NUMBER)
      loss.hline(key, cat(r, key));
  }
}

inline void other_plots(Report &rep, const am_record *res, const std::string &r, const std::string &suffix, size_t ri,
                        size_t nruns, const std::set<std::string> &paired) {
  std::vector<std::string> mats;
  collect_matrices(at(res, r), "", mats, 0);
  int drawn = 0;
  for (const auto &m : mats) {
    if (drawn >= 12) break;
    if (paired.count(m)) continue;
    Node h = rep.heatmap("matrix_" + file_safe(m) + suffix, "");
    h.panel(m + (nruns > 1 ? " (run " + std::to_string(ri) + ")" : ""), cat(r, m));
    h.str("x_label", "column").str("y_label", "row");
    ++drawn;
  }
  const am_record *run = at(res, r);  // scalar-vs-index traces
  for (size_t i = 0; i < am_record_size(run); ++i) {
    const std::string key = am_record_key(run, i), lk = lower(key);
    if (lk.find("trace") == std::string::npos && lk.find("history") == std::string::npos && lk.find("loss") == std::string::npos)
      continue;
    const std::vector<size_t> s = shape(am_record_at(run, i));
    if (s.size() != 1 || s[0] == 0) continue;
    rep.lines("trace_" + file_safe(key) + suffix, key, "index", key).series("", "", cat(r, key), s[0] <= 60 ? "line+points" : "line");
  }
}

// Plots and summary of a document whose runs are sequence-estimator fits.
inline am_status describe(const am_record *results, am_record *report) {
  Report rep(report);
  const size_t n = am_record_size(am_record_get(results, "runs"));
  for (size_t ri = 0; ri < n; ++ri) {
    const std::string r = cat("runs", ri), suffix = n > 1 ? "_run" + std::to_string(ri) : "";
    const std::set<std::string> paired = paired_plots(rep, results, r, suffix);
    a_scan_plot(rep, results, r, suffix);
    other_plots(rep, results, r, suffix, ri, n, paired);
    curve_plots(rep, results, r, suffix);
    Node v = rep.values("run " + std::to_string(ri));
    rep.scalar_items(v, results, r);
  }
  return rep.status();
}

}  // namespace am::sequence_report

#endif
