// attnmech figure — drawing: the plot blocks of a figure spec, resolved against the sweeps' point directories,
// become a report document (data + report.plots, the report library's generic kinds), written as figure.json and
// drawn by am_report_plot; caption.md says what the paper shows, what we computed and the numbers plotted.
#include "figure.hpp"

#include <common/read_input.hpp>  // the one reader of the tools' inputs
#include <common/npy_reference.hpp>  // arrays results.json keeps in .npy files

#include <attnmech/report.h>
#include <common/safe_file.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

namespace am::figure {

namespace {

using json = nlohmann::json;

// Numbers (a scalar, or a nested list flattened in row-major order with its shape) or strings at a path.
struct Found {
  bool ok = false;
  std::vector<double> num;
  std::vector<size_t> shape;
  std::vector<std::string> str;
};

bool flatten(const json &n, size_t depth, Found *f) {
  if (n.is_number() || n.is_null() || n.is_boolean()) {
    f->num.push_back(n.is_number() ? n.get<double>() : n.is_boolean() ? (n.get<bool>() ? 1.0 : 0.0) : NAN);
    return depth == f->shape.size();
  }
  if (n.is_string()) {
    f->str.push_back(n.get<std::string>());
    return depth == f->shape.size();
  }
  if (!n.is_array()) return false;
  if (depth == f->shape.size()) f->shape.push_back(n.size());
  else if (f->shape[depth] != n.size()) return false;  // ragged
  for (const auto &e : n)
    if (!flatten(e, depth + 1, f)) return false;
  return true;
}

// A point's results.json and its directory (where the .npy files its references name are).
struct PointDoc {
  json j;
  std::string dir;
};

// The value at a dotted path; an array kept in a .npy file (a reference) is read when the path reaches it, by the
// report library's reader (npy_reference.hpp): one it refuses is no value, never a NaN (SweepData::doc has said why).
Found lookup(const PointDoc &doc, const std::string &path) {
  Found f;
  const json *n = &doc.j;
  json loaded;
  std::string why;
  auto load = [&] {
    if (!am::npy_reference::is_reference(*n)) return true;
    loaded = am::npy_reference::as_nested(doc.dir, *n, &why);
    n = &loaded;
    return why.empty();
  };
  size_t pos = 0;
  while (!path.empty()) {
    if (!load()) return f;
    const size_t k = path.find('.', pos);
    const std::string part = path.substr(pos, k == std::string::npos ? std::string::npos : k - pos);
    if (n->is_object()) {
      auto it = n->find(part);
      if (it == n->end()) return f;
      n = &*it;
    } else if (n->is_array()) {
      char *end = nullptr;
      const unsigned long i = std::strtoul(part.c_str(), &end, 10);
      if (part.empty() || *end || i >= n->size()) return f;
      n = &(*n)[i];
    } else {
      return f;
    }
    if (k == std::string::npos) break;
    pos = k + 1;
  }
  if (!load() || n->is_object()) return f;
  f.ok = flatten(*n, 0, &f) && (f.num.empty() || f.str.empty());
  return f;
}

std::string fmt(double v, int digits = 4) {
  if (!std::isfinite(v)) return "nan";
  char b[48];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

void mean_se(const std::vector<double> &v, double *mean, double *se) {
  double m = 0, ss = 0;
  size_t n = 0;
  for (double x : v)
    if (std::isfinite(x)) m += x, ++n;
  m = n ? m / static_cast<double>(n) : NAN;
  for (double x : v)
    if (std::isfinite(x)) ss += (x - m) * (x - m);
  *mean = m;
  *se = n > 1 ? std::sqrt(ss / static_cast<double>(n - 1) / static_cast<double>(n)) : 0.0;
}

// One sweep's points and their results documents (read when first needed).
struct SweepData {
  const SweepEntry *entry = nullptr;
  std::string dir;
  std::vector<am::sweep::Point> points;
  std::map<size_t, std::unique_ptr<PointDoc>> docs;  // complete points only; nullptr = not complete
  std::vector<std::string> *bad = nullptr;           // "<point dir>: <why>" of points whose files are corrupt
  // Complete by the sweep's one judgment (am::sweep::check_point: its status, its identity, every .npy read by the
  // report library's reader); a corrupt point is incomplete, and said so.
  const PointDoc *doc(size_t i) {
    auto it = docs.find(i);
    if (it != docs.end()) return it->second.get();
    std::unique_ptr<PointDoc> d;
    const am::sweep::PointCheck c = am::sweep::check_point(dir, points[i]);
    const std::string pdir = am::sweep::point_dir(dir, points[i]);
    try {
      if (c.complete)
        d = std::make_unique<PointDoc>(PointDoc{am::input::parse_strict<json>(am::input::read_regular_file(
                                                    pdir + "/results.json", am::input::kMaxResultsBytes, "a results.json file")),
                                                pdir});
    } catch (const std::exception &e) {  // changed since the check
      if (bad) bad->push_back(pdir + ": " + e.what());
    }
    if (!c.problem.empty() && bad) bad->push_back(c.problem);
    return (docs[i] = std::move(d)).get();
  }
};

// The drawing state: the sweeps, the data list of the report document, the caption's lines, the warnings.
class Builder {
 public:
  Builder(const Figure &f, const std::string &dir) : fig_(f) {
    for (const auto &e : f.sweeps) {
      SweepData d;
      d.entry = &e;
      d.bad = &bad_points;
      d.dir = dir + "/" + e.id;
      d.points = am::sweep::expand(e.spec);
      data_.emplace(e.id, std::move(d));
    }
  }
  ojson data = ojson::array();
  std::vector<std::string> warnings, summary, bad_points;
  size_t series = 0;

  ojson panel(const ojson &p, const std::string &file);
  std::string number_line(const ojson &n);
  // Per sweep with points that are not complete (not computed, failed, or corrupt): "sweep \"id\": k of n points".
  std::vector<std::string> incomplete() {
    std::vector<std::string> out;
    for (auto &kv : data_) {
      size_t k = 0;
      for (size_t i = 0; i < kv.second.points.size(); ++i) k += kv.second.doc(i) == nullptr;
      if (k) out.push_back("sweep \"" + kv.first + "\": " + std::to_string(k) + " of " +
                           std::to_string(kv.second.points.size()) + " points");
    }
    return out;
  }

 private:
  const Figure &fig_;
  std::map<std::string, SweepData> data_;

  struct Selection {
    SweepData *sd = nullptr;
    std::vector<size_t> points;  // complete points matching `where`
    size_t matched = 0;          // points matching `where` (complete or not)
  };
  Selection select(const ojson &r);
  std::vector<std::string> auto_group(const Selection &s, const ojson &r) const;
  std::string group_label(const ojson &r, const std::vector<std::pair<std::string, std::string>> &g, double value) const;
  std::map<std::string, std::pair<std::vector<std::pair<std::string, std::string>>, std::vector<size_t>>> groups(
      const Selection &s, const std::vector<std::string> &by, std::vector<std::string> *order) const;
  std::string add(ojson entry) {
    data.push_back(std::move(entry));
    return "data." + std::to_string(data.size() - 1);
  }
  void warn(const std::string &where, const ojson &r, const Selection &s, const std::string &why) {
    warnings.push_back(where + ": " + why + " (sweep \"" + r.value("sweep", "") + "\": " + std::to_string(s.matched) +
                       " points selected, " + std::to_string(s.points.size()) + " complete)");
  }
  void line_series(const ojson &r, const std::string &where, ojson *out, std::vector<std::string> *lines);
  void array_series(const ojson &r, const std::string &where, ojson *out, std::vector<std::string> *lines);
  ojson heatmap(const ojson &p, const std::string &file, std::vector<std::string> *lines);
  ojson labels(const ojson &spec);
  void transform(const ojson &r, std::vector<double> *x, std::vector<double> *y, std::vector<double> *e) const;
};

Builder::Selection Builder::select(const ojson &r) {
  Selection s;
  s.sd = &data_.at(r["sweep"].get<std::string>());
  const am::sweep::Spec &spec = s.sd->entry->spec;
  for (const auto &p : s.sd->points) {
    bool match = true;
    if (r.contains("where"))
      for (auto it = r["where"].begin(); match && it != r["where"].end(); ++it) {
        std::set<std::string> want;
        if (it.value().is_array())
          for (const auto &v : it.value()) want.insert(am::sweep::value_text(v));
        else
          want.insert(am::sweep::value_text(it.value()));
        std::string have;
        bool found = false;
        for (const auto &av : p.axis_values)
          if (av.first == it.key()) have = am::sweep::value_text(av.second), found = true;
        if (!found)
          for (const auto &f : spec.fixed)
            if (f.first == it.key()) have = am::sweep::value_text(f.second), found = true;
        match = found && want.count(have);
      }
    if (!match) continue;
    ++s.matched;
    if (s.sd->doc(p.index)) s.points.push_back(p.index);
  }
  return s;
}

// Default grouping: every axis that is not averaged, not the x axis, and takes several values in the selection.
std::vector<std::string> Builder::auto_group(const Selection &s, const ojson &r) const {
  std::vector<std::string> by;
  if (r.contains("group")) {
    for (const auto &g : r["group"]) by.push_back(g.get<std::string>());
    return by;
  }
  const am::sweep::Spec &spec = s.sd->entry->spec;
  for (const auto &a : spec.axes) {
    if (std::count(spec.average.begin(), spec.average.end(), a.name) || a.name == r.value("x", "")) continue;
    std::set<std::string> seen;
    for (size_t i : s.points)
      for (const auto &av : s.sd->points[i].axis_values)
        if (av.first == a.name) seen.insert(am::sweep::value_text(av.second));
    if (seen.size() > 1) by.push_back(a.name);
  }
  return by;
}

std::map<std::string, std::pair<std::vector<std::pair<std::string, std::string>>, std::vector<size_t>>> Builder::groups(
    const Selection &s, const std::vector<std::string> &by, std::vector<std::string> *order) const {
  std::map<std::string, std::pair<std::vector<std::pair<std::string, std::string>>, std::vector<size_t>>> g;
  for (size_t i : s.points) {
    std::vector<std::pair<std::string, std::string>> key;
    std::string text;
    for (const auto &name : by)
      for (const auto &av : s.sd->points[i].axis_values)
        if (av.first == name) {
          key.emplace_back(name, am::sweep::value_text(av.second));
          text += name + "=" + key.back().second + " ";
        }
    if (!g.count(text)) order->push_back(text);
    g[text].first = key;
    g[text].second.push_back(i);
  }
  return g;
}

// "label" with {axis} → the group's value (through "names" when it has one) and {value} → the number.
std::string Builder::group_label(const ojson &r, const std::vector<std::pair<std::string, std::string>> &g,
                                 double value) const {
  auto display = [&](const std::string &v) {
    if (r.contains("names") && r["names"].is_object() && r["names"].contains(v) && r["names"][v].is_string())
      return r["names"][v].get<std::string>();
    return v;
  };
  std::string label;
  if (r.contains("label") && r["label"].is_string()) {
    label = r["label"].get<std::string>();
  } else {
    for (const auto &kv : g) label += (label.empty() ? "" : " ") + kv.first + "=" + display(kv.second);
    if (label.empty()) label = r.value("metric", r.value("y_array", r.value("array", "")));
  }
  for (const auto &kv : g) {
    const std::string tag = "{" + kv.first + "}";
    for (size_t pos; (pos = label.find(tag)) != std::string::npos;) label.replace(pos, tag.size(), display(kv.second));
  }
  for (size_t pos; (pos = label.find("{value}")) != std::string::npos;)
    label.replace(pos, 7, fmt(value, r.value("digits", 3)));
  return label;
}

// Optional per-reference transforms, applied to the data themselves (figure.json holds what is drawn).
void Builder::transform(const ojson &r, std::vector<double> *x, std::vector<double> *y, std::vector<double> *e) const {
  const double scale = r.value("y_scale", 1.0), off = r.value("x_offset", 0.0);
  const bool absolute = r.value("abs", false);
  if (x)
    for (auto &v : *x) v += off;
  for (auto &v : *y) v = (absolute ? std::fabs(v) : v) * scale;
  if (e)
    for (auto &v : *e) v *= std::fabs(scale);
}

ojson numbers_json(const std::vector<double> &v) {
  ojson a = ojson::array();
  for (double x : v) a.push_back(std::isfinite(x) ? ojson(x) : ojson(nullptr));
  return a;
}

// The report series of one group: label, style, colour ("color", or the k-th of "colors": the same list in two
// references gives their k-th groups the same colour, e.g. the lines and the points of one parameter value).
ojson report_series(const ojson &r, const std::string &label, const std::string &style, size_t k) {
  ojson s = {{"label", label}, {"style", style}};
  for (const char *key : {"color", "points"})
    if (r.contains(key)) s[key] = r[key];
  if (r.contains("colors") && r["colors"].is_array() && k < r["colors"].size()) s["color"] = r["colors"][k];
  return s;
}

// A scalar metric: against an axis (mean ± s.e. over the rest, one series per group) or as reference lines.
void Builder::line_series(const ojson &r, const std::string &where, ojson *out, std::vector<std::string> *lines) {
  const Selection s = select(r);
  const std::string metric = r["metric"].get<std::string>(), style = r.value("style", "line+points");
  const bool hline = style == "hline";
  if (!hline && !r.contains("x")) throw SpecError(where + ": a metric series needs \"x\" (an axis) or style \"hline\"");
  std::vector<std::string> order;
  const auto g = groups(s, hline ? (r.contains("group") ? auto_group(s, r) : std::vector<std::string>{}) : auto_group(s, r),
                        &order);
  size_t drawn = 0;
  for (const auto &text : order) {
    const auto &grp = g.at(text);
    std::map<double, std::vector<double>> by_x;
    for (size_t i : grp.second) {
      const Found v = lookup(*s.sd->doc(i), metric);
      if (!v.ok || v.num.size() != 1) continue;
      double x = 0;
      if (!hline)
        for (const auto &av : s.sd->points[i].axis_values)
          if (av.first == r["x"].get<std::string>()) x = std::strtod(am::sweep::value_text(av.second).c_str(), nullptr);
      by_x[x].push_back(v.num[0]);
    }
    if (by_x.empty()) continue;
    std::vector<double> x, y, e;
    for (const auto &kv : by_x) {
      double m, se;
      mean_se(kv.second, &m, &se);
      x.push_back(kv.first);
      y.push_back(m);
      e.push_back(se);
    }
    transform(r, &x, &y, &e);
    const std::string label = group_label(r, grp.first, y[0]);
    const std::string base = add({{"label", label}, {"x", numbers_json(x)}, {"y", numbers_json(y)}, {"yerr", numbers_json(e)}});
    ojson rs = report_series(r, label, style, drawn);
    rs["y"] = base + ".y";
    if (!hline) {
      rs["x"] = base + ".x";
      rs["yerr"] = base + ".yerr";
    }
    out->push_back(rs);
    std::string line = "- " + label + ": ";
    if (hline) {
      line += fmt(y[0]) + (e[0] > 0 ? " ± " + fmt(e[0], 2) : "");
    } else {
      for (size_t k = 0; k < x.size(); ++k)
        line += (k ? ", " : "") + fmt(x[k]) + " → " + fmt(y[k]) + (e[k] > 0 ? " ± " + fmt(e[k], 2) : "");
    }
    lines->push_back(line);
    ++drawn;
  }
  if (!drawn) warn(where, r, s, "no value of '" + metric + "'");
  series += drawn;
}

// Arrays of points (y_array against x_array or the index): one series per group, the element-wise mean ± s.e.
// over the group's points when it has several.
void Builder::array_series(const ojson &r, const std::string &where, ojson *out, std::vector<std::string> *lines) {
  const Selection s = select(r);
  const std::string ypath = r.value("y_array", r.value("array", "")), style = r.value("style", "line");
  std::vector<std::string> order;
  const auto g = groups(s, auto_group(s, r), &order);
  size_t drawn = 0;
  for (const auto &text : order) {
    const auto &grp = g.at(text);
    std::vector<std::vector<double>> ys;
    std::vector<double> x, e;
    for (size_t i : grp.second) {
      const Found y = lookup(*s.sd->doc(i), ypath);
      if (!y.ok || y.num.empty()) continue;
      if (ys.empty()) {
        if (r.contains("x_array")) x = lookup(*s.sd->doc(i), r["x_array"].get<std::string>()).num;
        if (r.contains("yerr_array")) e = lookup(*s.sd->doc(i), r["yerr_array"].get<std::string>()).num;
      }
      ys.push_back(y.num);
    }
    if (ys.empty()) continue;
    size_t n = ys[0].size();
    for (const auto &v : ys) n = std::min(n, v.size());
    std::vector<double> y(n);
    if (ys.size() > 1) e.assign(n, 0.0);
    for (size_t k = 0; k < n; ++k) {
      std::vector<double> col;
      for (const auto &v : ys) col.push_back(v[k]);
      double se = 0;
      mean_se(col, &y[k], &se);
      if (ys.size() > 1) e[k] = se;
    }
    if (x.size() < n) {
      x.clear();
      for (size_t k = 0; k < n; ++k) x.push_back(static_cast<double>(k));
    }
    x.resize(n);
    if (e.size() != n) e.clear();
    transform(r, &x, &y, &e);
    const std::string label = group_label(r, grp.first, y.empty() ? NAN : y.back());
    const std::string base = add({{"label", label}, {"x", numbers_json(x)}, {"y", numbers_json(y)}, {"yerr", numbers_json(e)}});
    ojson rs = report_series(r, label, style, drawn);
    rs["x"] = base + ".x";
    rs["y"] = base + ".y";
    if (!e.empty()) rs["yerr"] = base + ".yerr";
    out->push_back(rs);
    std::string line = "- " + label + (ys.size() > 1 ? " (mean of " + std::to_string(ys.size()) + " points)" : "") + ": ";
    if (n <= 12) {
      for (size_t k = 0; k < n; ++k)
        line += (k ? ", " : "") + fmt(x[k]) + " → " + fmt(y[k]) + (!e.empty() && e[k] > 0 ? " ± " + fmt(e[k], 2) : "");
    } else {
      const size_t lo = static_cast<size_t>(std::min_element(y.begin(), y.end()) - y.begin());
      const size_t hi = static_cast<size_t>(std::max_element(y.begin(), y.end()) - y.begin());
      line += std::to_string(n) + " values; first " + fmt(y[0]) + " at " + fmt(x[0]) + ", last " + fmt(y[n - 1]) + " at " +
              fmt(x[n - 1]) + ", min " + fmt(y[lo]) + " at " + fmt(x[lo]) + ", max " + fmt(y[hi]) + " at " + fmt(x[hi]);
    }
    lines->push_back(line);
    ++drawn;
  }
  if (!drawn) warn(where, r, s, "no array '" + ypath + "'");
  series += drawn;
}

// Labels of a heat map's rows / columns or a bar chart's categories: a literal list, or a reference to strings.
ojson Builder::labels(const ojson &spec) {
  if (spec.is_array()) return spec;
  if (!spec.is_object()) return ojson();
  const Selection s = select(spec);
  const std::string path = spec.value("array", spec.value("strings", ""));
  for (size_t i : s.points) {
    const Found f = lookup(*s.sd->doc(i), path);
    if (!f.ok) continue;
    ojson out = ojson::array();
    if (!f.str.empty())
      for (const auto &t : f.str) out.push_back(t);
    else
      for (double v : f.num) out.push_back(fmt(v));
    return out;
  }
  return ojson();
}

ojson Builder::heatmap(const ojson &p, const std::string &file, std::vector<std::string> *lines) {
  ojson plot = {{"file", file}, {"kind", "heatmap"}, {"title", p.value("title", "")}};
  for (const char *k : {"x_label", "y_label", "value_label", "scale", "annotate", "trim", "value_scale"})
    if (p.contains(k)) plot[k] = p[k];
  for (const char *k : {"row_labels", "col_labels"})
    if (p.contains(k)) {
      const ojson l = labels(p[k]);
      if (!l.is_null()) plot[k] = add({{"labels", l}}) + ".labels";
    }
  ojson panels = ojson::array();
  for (size_t i = 0; i < p["panels"].size(); ++i) {
    const ojson &r = p["panels"][i];
    const std::string where = file + ".panels." + std::to_string(i);
    const Selection s = select(r);
    const std::string path = r.value("array", "");
    std::vector<std::vector<double>> ms;
    std::vector<size_t> shape;
    for (size_t k : s.points) {
      const Found f = lookup(*s.sd->doc(k), path);
      if (!f.ok || f.num.empty() || f.shape.size() > 2 || (!ms.empty() && f.shape != shape)) continue;
      shape = f.shape;
      ms.push_back(f.num);
    }
    if (ms.empty()) {
      warn(where, r, s, "no matrix '" + path + "'");
      continue;
    }
    std::vector<double> m(ms[0].size());
    for (size_t k = 0; k < m.size(); ++k) {
      std::vector<double> col;
      for (const auto &v : ms) col.push_back(v[k]);
      double se;
      mean_se(col, &m[k], &se);
    }
    const size_t rows = shape.size() == 2 ? shape[0] : 1, cols = shape.empty() ? 1 : shape.back();
    ojson mat = ojson::array();
    for (size_t a = 0; a < rows; ++a) mat.push_back(numbers_json(std::vector<double>(m.begin() + a * cols, m.begin() + (a + 1) * cols)));
    const std::string title = r.value("title", path);
    panels.push_back({{"matrix", add({{"label", title}, {"matrix", mat}}) + ".matrix"}, {"title", r.value("title", "")}});
    const auto mm = std::minmax_element(m.begin(), m.end());
    std::string line = "- " + r.value("title", path) + ": " + std::to_string(rows) + "×" + std::to_string(cols) +
                       (ms.size() > 1 ? " (mean of " + std::to_string(ms.size()) + " points)" : "") + ", min " +
                       fmt(*mm.first) + ", max " + fmt(*mm.second);
    if (rows <= 6 && cols <= 6) {
      line += "; rows:";
      for (size_t a = 0; a < rows; ++a) {
        line += " [";
        for (size_t b = 0; b < cols; ++b) line += (b ? ", " : "") + fmt(m[a * cols + b], 3);
        line += "]";
      }
    }
    lines->push_back(line);
    ++series;
  }
  plot["panels"] = panels;
  return panels.empty() ? ojson() : plot;
}

ojson Builder::panel(const ojson &p, const std::string &file) {
  const std::string kind = p["kind"].get<std::string>();
  std::vector<std::string> lines;
  ojson plot;
  if (kind == "heatmap") {
    plot = heatmap(p, file, &lines);
  } else {
    plot = {{"file", file}, {"kind", kind}};
    for (const char *k : {"title", "x_label", "y_label", "x_log", "y_log", "diagonal"})
      if (p.contains(k)) plot[k] = p[k];
    ojson out = ojson::array();
    for (size_t i = 0; i < p["series"].size(); ++i) {
      const ojson &r = p["series"][i];
      const std::string where = file + ".series." + std::to_string(i);
      if (r.contains("metric")) line_series(r, where, &out, &lines);
      else array_series(r, where, &out, &lines);
    }
    if (kind == "bars" && p.contains("categories")) {
      const ojson l = labels(p["categories"]);
      if (!l.is_null()) plot["categories"] = add({{"labels", l}}) + ".labels";
    }
    plot["series"] = out;
    if (out.empty()) plot = ojson();
  }
  summary.push_back("**" + file + ".svg**" + (p.contains("title") ? " — " + p["title"].get<std::string>() : "") +
                    (plot.is_null() ? " (nothing to draw)" : ""));
  for (auto &l : lines) summary.push_back(l);
  summary.push_back("");
  return plot;
}

std::string Builder::number_line(const ojson &n) {
  const Selection s = select(n);
  std::vector<double> v;
  for (size_t i : s.points) {
    const Found f = lookup(*s.sd->doc(i), n["metric"].get<std::string>());
    if (f.ok && f.num.size() == 1) v.push_back(f.num[0]);
  }
  double m = NAN, se = 0;
  mean_se(v, &m, &se);
  std::vector<double> y{m}, e{se};
  transform(n, nullptr, &y, &e);
  const int digits = n.value("digits", 4);
  std::string line = "- " + n["label"].get<std::string>() + ": " + (v.empty() ? "no data" : fmt(y[0], digits));
  if (v.size() > 1) line += " ± " + fmt(e[0], 2) + " (mean ± s.e. of " + std::to_string(v.size()) + ")";
  if (v.empty()) warn("caption.numbers", n, s, "no value of '" + n["metric"].get<std::string>() + "'");
  return line;
}

std::string panel_file(const Figure &f, size_t i) {
  if (f.panels.size() == 1) return f.name;
  return f.name + "-" + f.panels[i].value("id", std::to_string(i + 1));
}

}  // namespace

void check_file_names(const Figure &f) {
  for (const auto &s : f.sweeps)  // each sweep runs in <out>/<id>
    if (!am::files::safe_name(s.id))
      throw SpecError("sweep id '" + s.id.substr(0, 60) + "' cannot be a directory name: " + am::files::name_problem(s.id));
  for (size_t i = 0; i < f.panels.size(); ++i) {
    const std::string file = panel_file(f, i), why = am::files::name_problem(file);
    if (!why.empty())
      throw SpecError((f.panels.size() == 1 ? std::string("plot") : "panels." + std::to_string(i)) +
                      ": the file name '" + file.substr(0, 60) + (file.size() > 60 ? "…" : "") +
                      "' (figure name + panel id) " + why);
  }
}

namespace {

// figure.py beside figure.json: a matplotlib redraw of the figure from figure.json alone (the drawn numbers, labels
// and style), to restyle it for a paper without attnmech.
const char *const kRedrawScript = R"PY(#!/usr/bin/env python3
"""Redraw this figure with matplotlib from figure.json (written by `attnmech figure`): every plot of
report.plots, its series, matrices and labels as the SVG drew them, and report.style's page when the figure was
drawn with --style / --font-size / --size. Edit the styling below and run: python3 figure.py [figure.json] [OUTDIR]
(default: the figure.json beside this script; OUTDIR: its directory). Writes <plot>.mpl.png and <plot>.mpl.pdf."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def resolve(doc, path):
    """A dotted path of the report spec ("data.3.x") in the document; "=1.5" is a literal number."""
    if not isinstance(path, str) or not path:
        return None
    if path.startswith("="):
        return float(path[1:])
    node = doc
    for part in path.split("."):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


def numbers(v):
    return [float("nan") if x is None else x for x in v] if isinstance(v, list) else v


def draw_lines(ax, doc, plot):
    for s in plot.get("series", []):
        y, style = resolve(doc, s.get("y")), s.get("style", "line+points")
        if style == "hline" and y is not None:
            ax.axhline(y if not isinstance(y, list) else y[0], ls="--", lw=1.2, label=s.get("label"))
            continue
        x, err = resolve(doc, s.get("x")), resolve(doc, s.get("yerr"))
        if not isinstance(y, list) or not isinstance(x, list):
            continue
        fmt = {"line": "-", "points": "o", "dashed": "--"}.get(style, "-o")
        ax.errorbar(numbers(x), numbers(y), yerr=numbers(err) if isinstance(err, list) else None, fmt=fmt,
                    ms=4, lw=1.5, capsize=2, label=s.get("label"))
    ax.set_xscale("log" if plot.get("x_log") else "linear")
    ax.set_yscale("log" if plot.get("y_log") else "linear")
    if any(s.get("label") for s in plot.get("series", [])):
        ax.legend(fontsize="small", frameon=False)


def draw_heatmap(fig, doc, plot):
    panels = [p for p in plot.get("panels", []) if isinstance(resolve(doc, p.get("matrix")), list)]
    axes = fig.subplots(1, max(1, len(panels)), squeeze=False)[0]
    mats = [numbers_2d(resolve(doc, p["matrix"])) for p in panels]
    vmax = max([abs(v) for m in mats for row in m for v in row if v == v] or [1])
    for ax, p, m in zip(axes, panels, mats):
        im = ax.imshow(m, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        ax.set_title(p.get("title", ""))
        rows, cols = resolve(doc, plot.get("row_labels")), resolve(doc, plot.get("col_labels"))
        if isinstance(rows, list) and len(rows) == len(m):
            ax.set_yticks(range(len(rows)), rows)
        if isinstance(cols, list) and m and len(cols) == len(m[0]):
            ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right")
    if panels:
        fig.colorbar(im, ax=list(axes), label=plot.get("value_label", ""))
    return axes[0]


def numbers_2d(m):
    return [numbers(row) for row in m]


def draw_bars(ax, doc, plot):
    series = [s for s in plot.get("series", []) if isinstance(resolve(doc, s.get("y")), list)]
    for k, s in enumerate(series):
        y = numbers(resolve(doc, s["y"]))
        err = resolve(doc, s.get("yerr"))
        w = 0.8 / len(series)
        ax.bar([i + (k - (len(series) - 1) / 2) * w for i in range(len(y))], y, w,
               yerr=numbers(err) if isinstance(err, list) else None, label=s.get("label"))
    cats = resolve(doc, plot.get("categories"))
    if isinstance(cats, list):
        ax.set_xticks(range(len(cats)), cats, rotation=45, ha="right")
    if any(s.get("label") for s in series):
        ax.legend(fontsize="small", frameon=False)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "figure.json")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(path))
    with open(path) as f:
        doc = json.load(f)
    style = doc.get("report", {}).get("style", {})
    size = (style.get("width", 680) / 72, style.get("height", 440) / 72)
    plt.rcParams.update({"font.size": style.get("font_size", 10), "lines.linewidth": 1.5 * style.get("line_scale", 1)})
    for plot in doc.get("report", {}).get("plots", []):
        fig = plt.figure(figsize=size, layout="constrained")
        if plot.get("kind") == "heatmap":
            ax = draw_heatmap(fig, doc, plot)
        else:
            ax = fig.add_subplot()
            (draw_bars if plot.get("kind") == "bars" else draw_lines)(ax, doc, plot)
        fig.suptitle(plot.get("title", ""))
        ax.set_xlabel(plot.get("x_label", ""))
        ax.set_ylabel(plot.get("y_label", ""))
        for ext in ("png", "pdf"):
            fig.savefig(os.path.join(out, plot["file"] + ".mpl." + ext), dpi=200)
        plt.close(fig)
        print(os.path.join(out, plot["file"] + ".mpl.png"))


if __name__ == "__main__":
    main()
)PY";

void write_text(const std::string &path, const std::string &text) {
  try {
    am::sweep::write_file_atomic(path, text);
  } catch (const std::exception &e) {
    throw am::sweep::SweepError(std::string("cannot write ") + path + ": " + e.what());
  }
}

std::string caption_text(const Figure &f, const Builder &b, const std::vector<std::string> &numbers,
                         const std::string &command) {
  std::ostringstream c;
  c << "# " << f.title << "\n\n";
  c << "*" << f.paper_ref << "* — `attnmech figure " << f.name << "`\n\n";
  c << "**What the paper shows.** " << f.caption["paper"].get<std::string>() << "\n\n";
  c << "**What we computed.** " << f.caption["ours"].get<std::string>() << "\n\n";
  if (!numbers.empty()) {
    c << "**Key numbers** (from the results in this directory):\n\n";
    for (const auto &l : numbers) c << l << "\n";
    c << "\n";
  }
  c << "**Plotted** (mean ± s.e. over the averaged axes where a point has several):\n\n";
  for (const auto &l : b.summary) c << l << "\n";
  if (!b.warnings.empty()) {
    c << "**Missing data:**\n\n";
    for (const auto &w : b.warnings) c << "- " << w << "\n";
    c << "\n";
  }
  c << "**Command:** `" << command << "` (default run here: " << f.runtime << ")";
  if (!f.long_text.empty()) c << ". Paper-quality averages: " << f.long_text;
  c << "\n";
  return c.str();
}

}  // namespace

DrawStats draw(am_context *ctx, const Figure &f, const std::string &dir, const std::string &command) {
  Builder b(f, dir);
  ojson plots = ojson::array();
  DrawStats st;
  for (size_t i = 0; i < f.panels.size(); ++i) {
    ojson p = b.panel(f.panels[i], panel_file(f, i));
    if (p.is_null()) ++st.empty_panels;
    else plots.push_back(std::move(p));
  }
  std::vector<std::string> numbers;
  if (f.caption.contains("numbers"))
    for (const auto &n : f.caption["numbers"]) numbers.push_back(b.number_line(n));
  ojson doc = ojson::object();
  doc["figure"] = f.name;
  doc["title"] = f.title;
  doc["paper_ref"] = f.paper_ref;
  doc["attnmech_version"] = am_version();
  doc["data"] = b.data;
  doc["report"] = {{"plots", plots}};
  for (const auto &kv : f.style) doc["report"]["style"][kv.first] = kv.second;
  const std::string json_path = dir + "/figure.json";
  write_text(json_path, doc.dump(1) + "\n");
  write_text(dir + "/caption.md", caption_text(f, b, numbers, command));  // the numbers first: kept if a plot fails
  write_text(dir + "/figure.py", kRedrawScript);
  am_record *rec = nullptr;
  if (am_report_read(ctx, json_path.c_str(), &rec) != AM_OK)
    throw am::sweep::SweepError(std::string("cannot read back figure.json: ") + am_context_last_error(ctx));
  am_report_plot_options po;
  am_report_plot_default_options(&po);
  po.formats = f.plot_formats;
  po.on_file = [](void *user, const char *name) { static_cast<DrawStats *>(user)->files.push_back(name); };
  po.user = &st;
  const am_status s = am_report_plot_with_options(ctx, rec, dir.c_str(), &po);
  am_record_destroy(&rec);
  if (s != AM_OK)
    throw am::sweep::SweepError(std::string("cannot draw the figure (figure.json and caption.md are written): ") +
                                am_context_last_error(ctx));
  st.series = b.series;
  st.warnings = b.warnings;
  st.incomplete = b.incomplete();
  st.bad_points = b.bad_points;
  return st;
}

}  // namespace am::figure
