// attnmech sweep — the aggregate of a sweep directory: sweep.json (points × metrics with the axis values),
// sweep.csv (one row per point) and plots/<metric>_vs_<axis>.svg (mean ± standard error over the averaged
// axes, one line per combination of the other axes), drawn by the report library from a report spec.
#include "sweep.hpp"

#include <common/read_input.hpp>  // the one reader of the tools' inputs
#include <common/labels.hpp>  // the human labels of result keys (runs.0.action → "action S")
#include <common/npy_reference.hpp>  // arrays results.json keeps in .npy files

#include <attnmech/report.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace am::sweep {

namespace fs = std::filesystem;

namespace {

using json = nlohmann::json;

bool excluded_metric(const std::string &key) {
  return key == "seconds" || key == "threads" || (key.find("time") != std::string::npos && key.size() > 2 &&
                                                  key.compare(key.size() - 2, 2, "_s") == 0);
}

// Every scalar number below `node` as dotted path → value (first-seen order kept in `order`).
void flatten(const json &node, const std::string &path, std::vector<std::pair<std::string, double>> *out) {
  if (am::npy_reference::is_reference(node)) return;  // an array (in its .npy file): not a scalar
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it)
      if (!excluded_metric(it.key())) flatten(it.value(), path + "." + it.key(), out);
  } else if (node.is_array()) {
    // lists of objects (runs, subsets) are walked; numeric lists (arrays) are not scalars
    for (size_t i = 0; i < node.size(); ++i)
      if (node[i].is_object()) flatten(node[i], path + "." + std::to_string(i), out);
  } else if (node.is_number()) {
    out->emplace_back(path, node.get<double>());
  } else if (node.is_boolean()) {
    out->emplace_back(path, node.get<bool>() ? 1.0 : 0.0);
  }
}

// The number at a dotted path of a point's results.json; an array kept in a .npy file of the point's directory
// `dir` (a reference) is read when the path reaches into it.
bool resolve(const json &doc, const std::string &dir, const std::string &path, double *v) {
  const json *n = &doc;
  json loaded;
  size_t pos = 0;
  while (pos <= path.size()) {
    if (am::npy_reference::is_reference(*n)) {
      loaded = am::npy_reference::as_nested(dir, *n);
      n = &loaded;
    }
    const size_t k = path.find('.', pos);
    const std::string part = path.substr(pos, k == std::string::npos ? std::string::npos : k - pos);
    if (n->is_object()) {
      auto it = n->find(part);
      if (it == n->end()) return false;
      n = &*it;
    } else if (n->is_array()) {
      char *end = nullptr;
      const unsigned long i = std::strtoul(part.c_str(), &end, 10);
      if (part.empty() || *end || i >= n->size()) return false;
      n = &(*n)[i];
    } else {
      return false;
    }
    if (k == std::string::npos) break;
    pos = k + 1;
  }
  if (n->is_number()) *v = n->get<double>();
  else if (n->is_boolean()) *v = n->get<bool>();
  else if (n->is_null()) *v = NAN;
  else return false;
  return true;
}

std::string num(double v) {
  if (!std::isfinite(v)) return "";
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

std::string csv_field(const std::string &s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string file_word(const std::string &s) {
  std::string w;
  for (char c : s) w += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return w;
}

// ojson → record under obj[key]: numeric lists become f64 vectors (null = NaN).
void put(am_record *obj, const std::string &key, const ojson &v);
void append(am_record *list, const ojson &v) {
  if (v.is_object()) {
    am_record *o = am_record_append_object(list);
    for (auto it = v.begin(); it != v.end(); ++it) put(o, it.key(), it.value());
  } else if (v.is_string()) {
    am_record_append_string(list, v.get<std::string>().c_str());
  } else if (v.is_number()) {
    am_record_append_number(list, v.get<double>());
  }
}
void put(am_record *obj, const std::string &key, const ojson &v) {
  if (v.is_object()) {
    am_record *o = am_record_object(obj, key.c_str());
    for (auto it = v.begin(); it != v.end(); ++it) put(o, it.key(), it.value());
  } else if (v.is_array()) {
    const bool numbers = std::all_of(v.begin(), v.end(), [](const ojson &e) { return e.is_number() || e.is_null(); });
    if (numbers && !v.empty()) {
      std::vector<double> x;
      for (const auto &e : v) x.push_back(e.is_null() ? NAN : e.get<double>());
      am_record_set_vector(obj, key.c_str(), x.data(), x.size());
    } else {
      am_record *l = am_record_list(obj, key.c_str());
      for (const auto &e : v) append(l, e);
    }
  } else if (v.is_string()) {
    am_record_set_string(obj, key.c_str(), v.get<std::string>().c_str());
  } else if (v.is_boolean()) {
    am_record_set_bool(obj, key.c_str(), v.get<bool>());
  } else if (v.is_number()) {
    am_record_set_number(obj, key.c_str(), v.get<double>());
  }
}

struct Row {
  const Point *p;
  std::string status, message;
  std::map<std::string, double> metrics;
};

double axis_number(const ojson &v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    char *end = nullptr;
    const std::string t = v.get<std::string>();
    const double x = std::strtod(t.c_str(), &end);
    if (!t.empty() && !*end) return x;
  }
  return NAN;
}

// Counts plots, not files: a plot may be a .svg, a .pdf and a .png (one stem).
void count_plots(void *user, const char *name) {
  const std::string f = name;
  static_cast<std::set<std::string> *>(user)->insert(f.substr(0, f.rfind('.')));
}

// The plots: every metric against every numeric axis that is not averaged over.
size_t draw_plots(am_context *ctx, const Spec &spec, const std::vector<Row> &rows,
                  const std::vector<std::string> &metrics, const am::labels::Table &names, const std::string &out,
                  uint32_t formats) {
  const std::string dir = out + "/plots";
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".svg" || e.path().extension() == ".pdf" || e.path().extension() == ".png")
      fs::remove(e.path(), ec);
  auto averaged = [&](const std::string &n) { return std::count(spec.average.begin(), spec.average.end(), n) > 0; };
  ojson data = ojson::array(), plots = ojson::array();
  for (const auto &axis : spec.axes) {
    if (averaged(axis.name)) continue;
    std::vector<double> xs;
    for (const auto &v : axis.values) xs.push_back(axis_number(v));
    std::set<double> distinct(xs.begin(), xs.end());
    if (std::any_of(xs.begin(), xs.end(), [](double x) { return std::isnan(x); }) || distinct.size() < 2) continue;
    const bool xlog = *distinct.begin() > 0 && *distinct.rbegin() / *distinct.begin() >= 30;
    for (const auto &m : metrics) {
      // group → x → values
      std::map<std::string, std::map<double, std::vector<double>>> groups;
      std::vector<std::string> group_order;
      for (const auto &r : rows) {
        auto it = r.metrics.find(m);
        if (it == r.metrics.end() || !std::isfinite(it->second)) continue;
        std::string label;
        double x = NAN;
        for (const auto &av : r.p->axis_values) {
          if (av.first == axis.name) x = axis_number(av.second);
          else if (!averaged(av.first)) label += (label.empty() ? "" : " ") + av.first + "=" + value_text(av.second);
        }
        if (!groups.count(label)) group_order.push_back(label);
        groups[label][x].push_back(it->second);
      }
      if (groups.empty()) continue;
      ojson series = ojson::array();
      for (const auto &label : group_order) {
        ojson x = ojson::array(), y = ojson::array(), e = ojson::array();
        for (const auto &kv : groups[label]) {
          const auto &v = kv.second;
          double mean = 0, ss = 0;
          for (double t : v) mean += t;
          mean /= static_cast<double>(v.size());
          for (double t : v) ss += (t - mean) * (t - mean);
          const double se = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1) / static_cast<double>(v.size())) : 0.0;
          x.push_back(kv.first);
          y.push_back(mean);
          e.push_back(se);
        }
        const std::string base = "data." + std::to_string(data.size());
        data.push_back({{"x", x}, {"y", y}, {"e", e}});
        series.push_back({{"label", label.empty() ? am::labels::human(m, &names) : label}, {"x", base + ".x"}, {"y", base + ".y"},
                          {"yerr", base + ".e"}, {"style", "line+points"}});
      }
      std::string avg;
      for (const auto &a : spec.average) avg += (avg.empty() ? "" : ", ") + a;
      plots.push_back({{"file", file_word(m) + "_vs_" + file_word(axis.name)},
                       {"kind", "lines"},
                       {"title", am::labels::human(m, &names) + " vs " + am::labels::human(axis.name, &names) +
                                     (avg.empty() ? "" : " (mean ± s.e. over " + avg + ")")},
                       {"x_label", am::labels::human(axis.name, &names)},
                       {"y_label", am::labels::human(m, &names)},
                       {"x_log", xlog},
                       {"series", series}});
    }
  }
  if (plots.empty()) return 0;
  am_record *doc = nullptr;
  if (am_record_create(&doc) != AM_OK) throw SweepError("out of memory");
  put(doc, "data", data);
  put(doc, "report", ojson{{"plots", plots}});
  std::set<std::string> stems;
  am_report_plot_options po;
  am_report_plot_default_options(&po);
  po.formats = formats, po.on_file = count_plots, po.user = &stems;
  const am_status st = am_report_plot_with_options(ctx, doc, dir.c_str(), &po);
  am_record_destroy(&doc);
  if (st != AM_OK) throw SweepError(std::string("cannot draw the sweep plots: ") + am_context_last_error(ctx));
  return stems.size();
}

// One point's row: its status (missing, unreadable, or the results' own) and its metrics. Without metrics named
// in the spec, every number under "runs" is one; names seen first here are appended to `metrics`.
// The points' report.labels (the plugins' names for their result keys), merged: the sweep's plots use them.
void collect_labels(const json &doc, am::labels::Table *names) {
  const auto rep = doc.find("report");
  if (rep == doc.end() || !rep->is_object() || !rep->contains("labels") || !(*rep)["labels"].is_object()) return;
  for (const auto &kv : (*rep)["labels"].items())
    if (kv.value().is_string()) names->emplace(kv.key(), kv.value().get<std::string>());
}

Row read_point(const Spec &spec, const Point &p, const std::string &out, std::vector<std::string> &metrics,
               std::set<std::string> &seen, AggregateStats &stats, am::labels::Table *names) {
  Row r{&p, "missing", "", {}};
  const PointCheck c = check_point(out, p);  // the one judgment of a point (store.cpp)
  json doc;
  if (!c.problem.empty()) {
    r.status = "invalid", r.message = c.problem;  // not this point's results: counted as missing, no metrics
  } else if (!c.status.empty()) {
    try {
      const std::string file = point_dir(out, p) + "/results.json";
      doc = am::input::parse_strict<json>(am::input::read_regular_file(file, am::input::kMaxResultsBytes, "a results.json file"));
      r.status = c.status;
      if (doc.contains("error") && doc["error"].is_string()) r.message = doc["error"].get<std::string>();
    } catch (const std::exception &e) {  // changed since the check
      r.status = "invalid", r.message = e.what();
    }
  }
  if (c.complete) ++stats.complete, collect_labels(doc, names);
  else if (r.status == "missing" || r.status == "invalid") ++stats.missing;
  else ++stats.failed;
  if (doc.is_object()) {
    if (!spec.metrics.empty()) {
      for (const auto &m : spec.metrics) {
        double v = NAN;
        if (resolve(doc, point_dir(out, p), m, &v)) r.metrics[m] = v;
      }
    } else if (doc.contains("runs")) {
      std::vector<std::pair<std::string, double>> flat;
      flatten(doc["runs"], "runs", &flat);
      for (const auto &kv : flat) {
        r.metrics[kv.first] = kv.second;
        if (seen.insert(kv.first).second) metrics.push_back(kv.first);
      }
    }
  }
  return r;
}

// sweep.json (spec, axes, counts, every point) and sweep.csv (one line a point), each written atomically.
void write_tables(const Spec &spec, const AggregateStats &stats, const std::vector<Row> &rows,
                  const std::vector<std::string> &metrics, const std::string &out) {
  ojson j = ojson::object();
  j["attnmech_version"] = am_version();
  j["spec"] = spec.source;
  j["axes"] = ojson::array();
  for (const auto &a : spec.axes) j["axes"].push_back({{"name", a.name}, {"values", a.values}});
  j["average"] = spec.average;
  j["metrics"] = metrics;
  j["counts"] = {{"points", stats.points}, {"complete", stats.complete}, {"failed", stats.failed}, {"missing", stats.missing}};
  j["points"] = ojson::array();
  std::ostringstream csv;
  csv << "key";
  for (const auto &a : spec.axes) csv << "," << csv_field(a.name);
  csv << ",status";
  for (const auto &m : metrics) csv << "," << csv_field(m);
  csv << "\n";
  for (const auto &r : rows) {
    ojson pj = ojson::object();
    pj["key"] = r.p->key;
    pj["axes"] = ojson::object();
    for (const auto &av : r.p->axis_values) pj["axes"][av.first] = av.second;
    pj["status"] = r.status;
    if (!r.message.empty()) pj["message"] = r.message;
    pj["metrics"] = ojson::object();
    csv << r.p->key;
    for (const auto &av : r.p->axis_values) csv << "," << csv_field(value_text(av.second));
    csv << "," << r.status;
    for (const auto &m : metrics) {
      auto it = r.metrics.find(m);
      const double v = it == r.metrics.end() ? NAN : it->second;
      pj["metrics"][m] = std::isfinite(v) ? ojson(v) : ojson(nullptr);
      csv << "," << num(v);
    }
    csv << "\n";
    j["points"].push_back(std::move(pj));
  }
  write_file_atomic(out + "/sweep.json", j.dump(1) + "\n");
  write_file_atomic(out + "/sweep.csv", csv.str());
}

}  // namespace

AggregateStats aggregate(am_context *ctx, const Spec &spec, const std::vector<Point> &points, const std::string &out,
                         uint32_t plot_formats) {
  AggregateStats stats;
  stats.points = points.size();
  std::vector<Row> rows;
  std::vector<std::string> metrics = spec.metrics;
  std::set<std::string> seen(metrics.begin(), metrics.end());
  am::labels::Table names;
  for (const auto &p : points) rows.push_back(read_point(spec, p, out, metrics, seen, stats, &names));
  write_tables(spec, stats, rows, metrics, out);
  stats.plots = draw_plots(ctx, spec, rows, metrics, names, out, plot_formats);
  return stats;
}

}  // namespace am::sweep
