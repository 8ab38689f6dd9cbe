// msa_core — the report spec of alignment fits (runs whose key `fit` is "alignment", msa_fit.h; docs/msa.md): what a
// coevolution user reads. The contact map (APC scores, the top-L pairs with |i − j| ≥ 6 marked), couplings.txt in
// plmc's `-c` format (`i res_i j res_j 0 score`, pairs in plmc's (i, j) order), contacts.tsv (ranked, with |i − j|),
// the fitted parameters only as .npy files, and a summary with the top 10 contacts. Header only; called by the
// describe of the estimator pseudolikelihood (plugins/estimator-pseudolikelihood) for documents with such runs.
#ifndef ATTNMECH_MSA_MSA_REPORT_HPP
#define ATTNMECH_MSA_MSA_REPORT_HPP

#include <attnmech/report_spec.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../sequence_report.hpp"
#include "msa_fit.h"

namespace am::msa_report {

using namespace am::spec;

// Pairs closer than this along the sequence are left out of the marks and the top-10 table: their couplings
// are dominated by the chain's local structure (the convention of contact-prediction benchmarks).
constexpr double kMinSeparation = 6;

// True when a run of the document is an alignment fit.
inline bool has_alignment_fit(const am_record *results) {
  const am_record *runs = am_record_get(results, "runs");
  for (size_t i = 0; i < am_record_size(runs); ++i)
    if (am::msa::is_alignment_fit(am_record_at(runs, i))) return true;
  return false;
}

// The contact map's colour scale ends at this quantile of the L² scores, where the top-L pairs begin (2L cells): a
// few strong pairs would otherwise leave the rest of the map at the bottom colour.
inline double clip_quantile(double L) { return std::max(0.5, 1 - 2 / std::max(L, 1.0)); }

// The score at quantile q of the finite values of an n×n matrix as the report library draws it (every stride-th row
// and column of a side over 300; the value at index ⌊q·(count − 1)⌋ in ascending order), and the largest score.
inline void clip_and_max(const std::vector<double> &S, size_t n, double q, double *clip, double *top) {
  size_t stride = 1;
  while (n / stride > 300) ++stride;
  std::vector<double> v;
  *top = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < n; i += stride)
    for (size_t j = 0; j < n; j += stride)
      if (std::isfinite(S[i * n + j])) v.push_back(S[i * n + j]);
  for (double x : S)
    if (std::isfinite(x)) *top = std::max(*top, x);
  *clip = NAN;
  if (v.empty()) return;
  const auto k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  *clip = v[k];
}

// The colour bar's label: the scores, and where the scale is clipped with the largest score above it, so the map
// says that its top colour holds every pair from the clip up (docs/msa.md "Outputs").
inline std::string score_label(const am_record *res, const std::string &scores, double q) {
  const std::vector<double> S = numbers(res, scores);
  const size_t n = count(at(res, scores));
  double clip = NAN, top = NAN;
  if (n > 0 && S.size() == n * n) clip_and_max(S, n, q, &clip, &top);
  if (!(clip < top)) return "APC score";
  return "APC score (colour scale clipped at " + format("%.4g", clip) + ", quantile " + format("%.4g", q) +
         "; top pair " + format("%.4g", top) + ")";
}

// Scores above the diagonal, the top-L pairs (|i − j| ≥ 6) as rings below it (site numbers on both axes).
inline void contact_map(Report &rep, const am_record *res, const std::string &r, const std::string &suffix) {
  const double L = static_cast<double>(count(at(res, cat(r, "scores"))));
  const std::string sites = has(res, cat(r, "site_numbers")) ? cat(r, "site_numbers") : "";
  Node h = rep.heatmap("contact_map" + suffix, "Contact map (APC-corrected Frobenius scores)", "sequential");
  h.panel("", cat(r, "scores"));
  h.labels(sites, sites).str("x_label", "site i").str("y_label", "site j").str("triangle", "upper");
  const double q = clip_quantile(L);
  h.flag("annotate", false).num("clip_quantile", q).str("value_label", score_label(res, cat(r, "scores"), q));
  const std::string label = "top " + format("%.0f", L) + " pairs with |i \u2212 j| \u2265 6 (ranked by score)";
  Node o = h.overlay(label, cat(r, "contacts.i"), cat(r, "contacts.j"));
  o.object("where").str("path", cat(r, "contacts.separation")).num("min", kMinSeparation);
  o.num("limit", L);
}

// couplings.txt as plmc writes it (`%d %c %d %c 0 %f`, i ascending then j), contacts.tsv ranked by score.
inline void coupling_files(Report &rep, const std::string &r, const std::string &suffix) {
  const std::string c = cat(r, "contacts");
  Node plmc = rep.file("couplings" + suffix + ".txt");
  plmc.column("i", cat(c, "i"), "%d").column("res_i", cat(c, "res_i"), "%c").column("j", cat(c, "j"), "%d");
  plmc.column("res_j", cat(c, "res_j"), "%c").column("", "=0", "%d").column("score", cat(c, "score"), "%f");
  plmc.strings("sort_by", {cat(c, "i"), cat(c, "j")});
  Node ranked = rep.file("contacts" + suffix + ".tsv", "\t").flag("header", true);
  ranked.column("i", cat(c, "i"), "%d").column("res_i", cat(c, "res_i"), "%c").column("j", cat(c, "j"), "%d");
  ranked.column("res_j", cat(c, "res_j"), "%c").column("score", cat(c, "score"), "%.6f");
  ranked.column("separation", cat(c, "separation"), "%d");
}

// The summary's table of the 10 best-scored pairs at |i − j| ≥ kMinSeparation of run path `r` (its `contacts`): the
// alignment fit's and the mean-field estimator's.
inline void top_contacts(Report &rep, const std::string &r) {
  const std::string c = cat(r, "contacts");
  Node t = rep.table("top 10 contacts, |i \u2212 j| \u2265 6");
  t.column("i", cat(c, "i"), "%d").column("", cat(c, "res_i"), "%c").column("j", cat(c, "j"), "%d");
  t.column("", cat(c, "res_j"), "%c").column("score", cat(c, "score"), "%.4f").column("|i\u2212j|", cat(c, "separation"), "%d");
  t.object("where").str("path", cat(c, "separation")).num("min", kMinSeparation);
  t.num("limit", 10);
}

inline void summary(Report &rep, const std::string &r, size_t ri) {
  Node v = rep.values("alignment fit (run " + std::to_string(ri) + ")");
  v.value("Neff", cat(r, "neff"), "%.1f").value("L (sites)", cat(r, "L"), "%.0f").value("C (states)", cat(r, "C"), "%.0f");
  v.value("M (train)", cat(r, "M"), "%.0f").value("M (test)", cat(r, "M_test"), "%.0f");
  v.value("model", cat(r, "model"), "%s").value("model rule", cat(r, "model_rule"), "%s");
  v.value("heads", cat(r, "heads"), "%.0f");
  v.value("train loss", cat(r, "train_loss"), "%.5f").value("test loss", cat(r, "test_loss"), "%.5f");
  v.value("iterations", cat(r, "iterations"), "%.0f").value("evaluations", cat(r, "evaluations"), "%.0f");
  v.value("stop reason", cat(r, "stop_reason"), "%s").value("fit time (s)", cat(r, "fit_time_s"), "%.2f");
  top_contacts(rep, r);
}

// The report of the runs `mine` picks (the run records): parameters as .npy only, and draw(rep, r, suffix, ri) for
// each — r its path ("runs.<ri>"), suffix "_run<ri>" when the document has several runs. The alignment fit's and the
// mean-field estimator's describe.
template <class Mine, class Draw>
am_status describe_runs(const am_record *results, am_record *report, Mine &&mine, Draw &&draw) {
  Report rep(report);
  rep.npy_only("runs.*.params");
  const am_record *runs = am_record_get(results, "runs");
  const size_t n = am_record_size(runs);
  for (size_t ri = 0; ri < n; ++ri) {
    if (!mine(am_record_at(runs, ri))) continue;
    draw(rep, cat("runs", ri), n > 1 ? "_run" + std::to_string(ri) : std::string(), ri);
  }
  return rep.status();
}

// Plots, files and summary of a document with alignment fits (its other runs get none).
inline am_status describe(const am_record *results, am_record *report) {
  return describe_runs(results, report, am::msa::is_alignment_fit,
                       [&](Report &rep, const std::string &r, const std::string &suffix, size_t ri) {
                         contact_map(rep, results, r, suffix);
                         coupling_files(rep, r, suffix);
                         am::sequence_report::curve_plots(rep, results, r, suffix);
                         summary(rep, r, ri);
                       });
}

}  // namespace am::msa_report

#endif
