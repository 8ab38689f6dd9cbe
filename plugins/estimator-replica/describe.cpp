// The `replica` estimator's report spec: test loss vs alpha per (nu, lambda) with the simulations and the
// Bayes lines, test loss vs lambda at fixed alpha, and the learning-curve tables.
#include <attnmech/plugin.hpp>
#include <attnmech/report_spec.hpp>

#include <cmath>
#include <map>
#include <string>

namespace am::replica_plugin {

namespace {

using namespace am::spec;

const char *const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string curve_name(const am_record *res, const std::string &c) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "\u03bd = %g, \u03bb = %g", number(res, cat(c, "nu")), number(res, cat(c, "lambda")));
  return buf;
}

void curves_plot(Report &rep, const am_record *res, const std::string &r, const std::string &suffix) {
  const std::string cs = cat(r, "curves");
  const size_t n = am_record_size(at(res, cs));
  if (n == 0) return;
  Node p = rep.lines("replica_curves" + suffix, "Replica theory: test loss vs \u03b1", "\u03b1", "test loss").log_x();
  std::map<double, std::string> bayes;  // nu → the level of its Bayes line
  bool positive = true;
  for (size_t ci = 0; ci < n; ++ci) {
    const std::string c = cat(cs, ci), name = curve_name(res, c), colour = kPalette[ci % 10];
    p.series(name, cat(c, "alpha"), cat(c, "test_loss"), "line").str("color", colour);
    const size_t ns = numbers(res, cat(c, "sim_test_loss")).size();
    if (ns > 0) {
      const bool realised = numbers(res, cat(c, "sim_alpha_realised")).size() == ns;
      p.series(name + " (simulation)", cat(c, realised ? "sim_alpha_realised" : "alpha"), cat(c, "sim_test_loss"), "points")
          .str("yerr", cat(c, "sim_stderr"))
          .str("color", colour);
    }
    for (double v : numbers(res, cat(c, "test_loss")))
      if (std::isfinite(v) && v <= 0) positive = false;
    const double nu = number(res, cat(c, "nu")), b = number(res, cat(c, "bayes_loss"));
    if (!std::isfinite(nu)) continue;
    if (std::isfinite(b))
      bayes[nu] = cat(c, "bayes_loss");
    else if (nu > 0)
      bayes[nu] = "=" + format("%.17g", 1.0 / nu);
  }
  size_t bi = 0;
  for (const auto &nb : bayes) {
    char lab[64];
    std::snprintf(lab, sizeof lab, "Bayes loss (1/\u03bd line), \u03bd = %g", nb.first);
    p.hline(lab, nb.second).str("color", bi++ % 2 ? "#999999" : "#444444");
  }
  p.log_y(positive);
}

void lambda_plots(Report &rep, const am_record *res, const std::string &r, const std::string &suffix) {
  const std::string ls = cat(r, "lambda_curves");
  for (size_t k = 0; k < am_record_size(at(res, ls)); ++k) {
    const std::string c = cat(ls, k);
    const std::vector<double> alpha = numbers(res, cat(c, "alpha")), lam = numbers(res, cat(c, "lambda"));
    const std::vector<size_t> s = shape(at(res, cat(c, "test_loss")));
    if (s.size() != 2 || s[0] != alpha.size() || s[1] != lam.size() || alpha.empty()) continue;
    const double nu = number(res, cat(c, "nu"));
    char title[96];
    std::snprintf(title, sizeof title, "Replica theory: test loss vs \u03bb (\u03bd = %g)", nu);
    Node p = rep.lines("replica_lambda_" + std::to_string(k) + suffix,
                       std::isfinite(nu) ? title : "Replica theory: test loss vs \u03bb", "\u03bb", "test loss")
                 .log_x();
    const size_t step = (alpha.size() + 7) / 8;  // at most 8 curves
    for (size_t i = 0; i < alpha.size(); i += step)
      p.series("\u03b1 = " + format("%.6g", alpha[i]), cat(c, "lambda"), cat(cat(c, "test_loss"), i), "line");
  }
}

// The discrete right panel: test loss of the pseudo-likelihood fit on Potts data vs alpha = M/L (mean ± standard
// error over the realisations), with the mean conditional entropy eps* as the floor.
void potts_panel_plot(Report &rep, const am_record *res, const std::string &r, const std::string &suffix) {
  const std::string pp = cat(r, "potts_panel");
  const char *status = am_record_string(at(res, cat(pp, "status")));
  if (!status || std::string(status) != "done") return;
  const double R = number(res, cat(pp, "realisations"));
  char title[160];
  std::snprintf(title, sizeof title, "Discrete model (L = C = %g): test loss vs \u03b1 = M/L, \u2113\u2082 = %g%s", number(res, cat(pp, "L")),
                number(res, cat(pp, "l2")), std::isfinite(R) && R > 1 ? format(", mean \u00b1 s.e. of %g realisations", R).c_str() : "");
  Node p = rep.lines("replica_potts_panel" + suffix, title, "\u03b1 = M/L", "test loss").log_x();
  Node s = p.series("factored attention, pseudo-likelihood fit", cat(pp, "alpha"), cat(pp, "test_loss"), "line");
  if (has(res, cat(pp, "test_loss_stderr"))) s.str("yerr", cat(pp, "test_loss_stderr"));
  double e = 0;
  const std::vector<double> eps = numbers(res, cat(pp, "epsilon_star"));
  for (double v : eps) e += v / (double)eps.size();
  if (!eps.empty() && std::isfinite(e)) p.hline("\u03b5* (conditional entropy, mean)", "=" + format("%.17g", e)).str("color", "#444444");
  bool positive = true;
  for (double v : numbers(res, cat(pp, "test_loss")))
    if (std::isfinite(v) && v <= 0) positive = false;
  p.log_y(positive);
}

void tables(Report &rep, const am_record *res, const std::string &r, size_t ri) {
  const std::string cs = cat(r, "curves");
  for (size_t ci = 0; ci < am_record_size(at(res, cs)); ++ci) {
    const std::string c = cat(cs, ci);
    const char *model = am_record_string(at(res, cat(c, "model")));
    char title[160];
    std::snprintf(title, sizeof title, "learning curve %s  nu = %g, lambda = %g, Bayes loss %.6g", model ? model : "",
                  number(res, cat(c, "nu")), number(res, cat(c, "lambda")), number(res, cat(c, "bayes_loss")));
    Node t = rep.table(title);
    t.column("alpha", cat(c, "alpha"), "%g").column("test loss", cat(c, "test_loss"), "%.6g");
    if (has(res, cat(c, "sim_test_loss")))
      t.column("simulation", cat(c, "sim_test_loss"), "%.6g").column("\u00b1", cat(c, "sim_stderr"), "%.2g");
  }
  Node v = rep.values("run " + std::to_string(ri));
  rep.scalar_items(v, res, r, {"curves", "lambda_curves"});
  if (am_record_size(at(res, cat(r, "lambda_curves"))) > 0)
    v.value("lambda_curves (tables in results.json)", "=" + std::to_string(am_record_size(at(res, cat(r, "lambda_curves")))), "%.0f");
}

}  // namespace

am_status describe(const am_record *results, am_record *report) {
  try {
    Report rep(report);
    const size_t n = am_record_size(am_record_get(results, "runs"));
    for (size_t ri = 0; ri < n; ++ri) {
      const std::string r = cat("runs", ri), suffix = n > 1 ? "_" + std::to_string(ri) : "";
      curves_plot(rep, results, r, suffix);
      lambda_plots(rep, results, r, suffix);
      potts_panel_plot(rep, results, r, suffix);
      tables(rep, results, r, ri);
    }
    return rep.status();
  } catch (...) {
    throw am::sdk::Error(AM_ERR_NO_MEMORY, "replica: cannot describe the results");
  }
}

}  // namespace am::replica_plugin
