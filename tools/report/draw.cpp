// attnmech-report — plots drawn from the report spec alone (docs/abi.md "report spec"): lines, scatter,
// heat maps and bars. Nothing here knows a plugin or a result layout.
#include "internal.hpp"
#include <common/labels.hpp>
#include "svg.hpp"

#include <common/safe_file.hpp>
#include <common/text.hpp>  // trim

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <tuple>

namespace am::report {

namespace {

bool any_finite(const std::vector<double> &v) {
  return std::any_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

// Optional per-series transforms: "abs", "y_scale" (also scales yerr), "x_offset".
void transform(const am_record *s, std::vector<double> *x, std::vector<double> *y, std::vector<double> *yerr) {
  const double scale = spec_number(s, "y_scale", 1.0), off = spec_number(s, "x_offset", 0.0);
  const bool absolute = spec_bool(s, "abs", false);
  if (x)
    for (auto &v : *x) v += off;
  for (auto &v : *y) v = (absolute ? std::fabs(v) : v) * scale;
  if (yerr)
    for (auto &v : *yerr) v *= std::fabs(scale);
}

// doc.report.labels: the plugins' names for their result keys (key or dotted tail → label).
am::labels::Table label_table(const am_record *doc) {
  am::labels::Table t;
  const am_record *l = am_record_get(am_record_get(doc, "report"), "labels");
  if (am_record_type_of(l) != AM_REC_OBJECT) return t;
  for (size_t i = 0; i < am_record_size(l); ++i) {
    const char *key = am_record_key(l, i), *label = nullptr;
    if (key && am_record_get_string(l, key, &label) == AM_OK) t[key] = label;
  }
  return t;
}

// A training curve drawn as a plain line ("train_loss", "train loss"): dashed, so that a test curve on top of it
// does not hide it.
bool is_train_curve(const std::string &label) { return label.compare(0, 6, "train_") == 0 || label.compare(0, 6, "train ") == 0; }

std::vector<double> numbers(const am_record *doc, const am_record *s, const char *key) {
  const Value v = resolve(doc, spec_string(s, key));
  return v.ok && !v.strings ? v.num : std::vector<double>{};
}

// Adds the series of one lines/scatter spec to `p` (labels prefixed with `prefix`; explicit colours
// dropped when `own_colours` is false). Returns the number of series and lines added.
size_t add_series(const am_record *doc, const am_record *spec, const std::string &prefix, bool own_colours,
                  const am::labels::Table &names, am::svg::LinePlot *p) {
  const std::string kind = spec_string(spec, "kind");
  const am_record *list = am_record_get(spec, "series");
  size_t added = 0;
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < am_record_size(list); ++i) {
    const am_record *s = am_record_at(list, i);
    const std::string style = spec_string(s, "style", kind == "scatter" ? "points" : "line+points");
    const std::string raw = spec_string(s, "label");
    const std::string label = prefix + am::labels::display(raw, &names), colour = own_colours ? spec_string(s, "color") : "";
    std::vector<double> y = numbers(doc, s, "y");
    if (style == "hline") {
      transform(s, nullptr, &y, nullptr);
      if (y.size() == 1 && std::isfinite(y[0])) {
        p->hlines.push_back({y[0], label, colour, true});
        ++added;
      }
      continue;
    }
    if (!any_finite(y)) continue;
    std::vector<double> x;
    if (am_record_get(s, "x")) {
      x = numbers(doc, s, "x");
    } else {
      for (size_t k = 0; k < y.size(); ++k) x.push_back(static_cast<double>(k));
    }
    if (x.size() != y.size()) continue;
    std::vector<double> yerr = numbers(doc, s, "yerr");
    if (yerr.size() != y.size()) yerr.clear();
    transform(s, &x, &y, &yerr);
    am::svg::Series se;
    se.name = label;
    se.x = x;
    se.y = y;
    se.yerr = yerr;
    se.color = colour;
    se.dashed = style == "dashed" || (style == "line" && is_train_curve(raw));
    se.line = style != "points";
    se.points = spec_bool(s, "points", style == "points" || style == "line+points");
    for (double v : x)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    p->series.push_back(std::move(se));
    ++added;
  }
  if (kind == "scatter" && spec_bool(spec, "diagonal", false) && lo <= hi) {
    am::svg::Series diag;
    diag.name = "y = x";
    diag.points = false;
    diag.dashed = true;
    diag.color = "#555555";
    diag.x = {lo, hi};
    diag.y = {lo, hi};
    p->series.push_back(diag);
  }
  return added;
}

void axes_of(const am_record *spec, const am::labels::Table &names, am::svg::LinePlot *p) {
  p->title = am::labels::display(spec_string(spec, "title"), &names);
  p->xlabel = am::labels::display(spec_string(spec, "x_label"), &names);
  p->ylabel = am::labels::display(spec_string(spec, "y_label"), &names);
  p->logx = spec_bool(spec, "x_log", false);
  p->logy = spec_bool(spec, "y_log", false);
}

// Index subset shown on one axis: all, or the first and the last `trim` when there are more than 2·trim + 10.
std::vector<size_t> shown(size_t n, size_t trim) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < n; ++i)
    if (trim == 0 || n <= 2 * trim + 10 || i < trim || i >= n - trim) idx.push_back(i);
  return idx;
}

// Where a value of an overlay coordinate falls among `n` rows (or columns) labelled by `labels`: the row whose
// numeric label equals it (site numbers), or with no numeric labels the value as an index. n = none.
size_t label_position(double x, const Value &labels, size_t n) {
  if (labels.ok && !labels.strings && labels.num.size() == n) {
    for (size_t i = 0; i < n; ++i)
      if (labels.num[i] == x) return i;
    return n;
  }
  return x >= 0 && x < static_cast<double>(n) && x == std::floor(x) ? static_cast<size_t>(x) : n;
}

// "overlay": {"x": path, "y": path, "label": s, where/sort_by/limit}: cells marked at (row y, column x) in label
// units, among the rows (ri) and columns (ci) shown.
void overlay_marks(const am_record *doc, const am_record *spec, const std::vector<size_t> &ri,
                   const std::vector<size_t> &ci, size_t R, size_t C, am::svg::HeatMap *h) {
  const am_record *ov = am_record_get(spec, "overlay");
  if (!ov) return;
  const std::vector<double> x = numbers(doc, ov, "x"), y = numbers(doc, ov, "y");
  if (x.size() != y.size() || x.empty()) return;
  const Value rl = resolve(doc, spec_string(spec, "row_labels")), cl = resolve(doc, spec_string(spec, "col_labels"));
  for (size_t k : select_rows(doc, ov, x.size())) {
    const size_t r = label_position(y[k], rl, R), c = label_position(x[k], cl, C);
    const auto rp = std::find(ri.begin(), ri.end(), r), cp = std::find(ci.begin(), ci.end(), c);
    if (rp != ri.end() && cp != ci.end())
      h->marks.emplace_back(static_cast<size_t>(rp - ri.begin()), static_cast<size_t>(cp - ci.begin()));
  }
  h->mark_label = spec_string(ov, "label");
}

// What a matrix path holds, for its colour bar: the last key that is not an index ("runs.0.U.0" → "U"); "" for
// the figures' "data.<i>.matrix" (their spec names it with "value_label").
std::string value_key(const std::string &path) {
  std::string key;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!part.empty() && !std::isdigit(static_cast<unsigned char>(part[0])) && part != "*") key = part;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return key == "matrix" || key == "runs" ? "" : key;
}

bool heat_panel(const am_record *doc, const am_record *spec, const am_record *panel, const am::labels::Table &names,
                am::svg::HeatMap *h) {
  const Value m = resolve(doc, spec_string(panel, "matrix"));
  if (!m.ok || m.strings || m.num.empty() || m.shape.size() > 2) return false;
  const size_t R = m.shape.size() == 2 ? m.shape[0] : 1, C = m.shape.empty() ? 1 : m.shape.back();
  const auto trim = static_cast<size_t>(std::max(0.0, spec_number(spec, "trim", 0)));
  const auto ri = shown(R, trim), ci = shown(C, trim);
  std::vector<std::string> rl = as_labels(resolve(doc, spec_string(spec, "row_labels")));
  std::vector<std::string> cl = as_labels(resolve(doc, spec_string(spec, "col_labels")));
  if (rl.size() != R) rl.clear();
  if (cl.size() != C) cl.clear();
  // "indices": the matrix is a block of a larger one, its rows and columns these indices of it (a kernel's first and
  // last training examples): they label the axes, and a jump between neighbours is a break like a trimmed axis's.
  const Value idx = resolve(doc, spec_string(spec, "indices"));
  const bool block = idx.ok && !idx.strings && idx.num.size() == R && R == C;
  auto index_of = [&](size_t i) { return block && idx.num[i] >= 0 ? static_cast<size_t>(idx.num[i]) : i; };
  h->rows = ri.size();
  h->cols = ci.size();
  const double scale = spec_number(spec, "value_scale", 1.0);
  for (size_t i : ri) {
    for (size_t j : ci) h->values.push_back(m.num[i * C + j] * scale);
    h->row_labels.push_back(rl.empty() ? std::to_string(index_of(i)) : rl[i]);
  }
  for (size_t j : ci) h->col_labels.push_back(cl.empty() ? std::to_string(index_of(j)) : cl[j]);
  if (rl.empty() && trim == 0 && !block) h->row_labels.clear();
  if (cl.empty() && trim == 0 && !block) h->col_labels.clear();
  h->title = am::labels::display(spec_string(panel, "title"), &names);
  h->xlabel = am::labels::display(spec_string(spec, "x_label"), &names);
  h->ylabel = am::labels::display(spec_string(spec, "y_label"), &names);
  h->value_label = am::labels::display(spec_string(spec, "value_label", value_key(spec_string(panel, "matrix"))), &names);
  for (size_t k = 1; k < ri.size(); ++k)
    if (index_of(ri[k]) != index_of(ri[k - 1]) + 1) h->row_breaks.push_back(k);
  for (size_t k = 1; k < ci.size(); ++k)
    if (index_of(ci[k]) != index_of(ci[k - 1]) + 1) h->col_breaks.push_back(k);
  h->diverging = spec_string(spec, "scale", "diverging") != "sequential";
  h->annotate = spec_bool(spec, "annotate", true);
  h->upper_only = spec_string(spec, "triangle") == "upper";
  h->clip_quantile = spec_number(spec, "clip_quantile", NAN);
  overlay_marks(doc, spec, ri, ci, R, C, h);
  return true;
}

bool draw_heatmap(const am_record *doc, const am_record *spec, const am::labels::Table &names,
                  am::svg::Drawing *out) {
  const am_record *panels = am_record_get(spec, "panels");
  std::vector<am::svg::HeatMap> maps;
  for (size_t i = 0; i < am_record_size(panels); ++i) {
    am::svg::HeatMap h;
    if (heat_panel(doc, spec, am_record_at(panels, i), names, &h)) maps.push_back(std::move(h));
  }
  if (maps.empty()) return false;
  if (maps.size() == 1) {
    if (maps[0].title.empty()) maps[0].title = spec_string(spec, "title");
    *out = am::svg::draw(maps[0]);
    return true;
  }
  double vmax = 0;  // one colour scale for every panel
  for (const auto &h : maps)
    for (double x : h.values)
      if (std::isfinite(x)) vmax = std::max(vmax, std::fabs(x));
  std::vector<am::svg::Drawing> parts;
  for (auto &h : maps) {
    h.size = 360;
    h.vmax = vmax;
    parts.push_back(am::svg::draw(h));
  }
  *out = am::svg::hstack(parts);
  return true;
}

struct PageStyle;
am::svg::Drawing draw_bars_styled(const am::svg::BarChart &b, const PageStyle &st);

bool draw_bars(const am_record *doc, const am_record *spec, const am::labels::Table &names, const PageStyle &st,
               am::svg::Drawing *out) {
  am::svg::BarChart b;
  b.title = am::labels::display(spec_string(spec, "title"), &names);
  b.xlabel = am::labels::display(spec_string(spec, "x_label"), &names);
  b.ylabel = am::labels::display(spec_string(spec, "y_label"), &names);
  const am_record *list = am_record_get(spec, "series");
  size_t n = 0;
  for (size_t i = 0; i < am_record_size(list); ++i) {
    const am_record *s = am_record_at(list, i);
    std::vector<double> y = numbers(doc, s, "y"), err = numbers(doc, s, "yerr");
    if (!any_finite(y)) continue;
    if (err.size() != y.size()) err.clear();
    transform(s, nullptr, &y, &err);
    n = std::max(n, y.size());
    b.groups.push_back({am::labels::display(spec_string(s, "label"), &names), y, spec_string(s, "color"), err});
  }
  if (b.groups.empty()) return false;
  b.categories = as_labels(resolve(doc, spec_string(spec, "categories")));
  if (b.categories.size() < n) {
    for (size_t i = b.categories.size(); i < n; ++i) b.categories.push_back(std::to_string(i + 1));
  }
  *out = draw_bars_styled(b, st);
  return true;
}

// A document's report.style (set by `attnmech plot` / `figure` --style, --font-size, --size; never stored by a
// run): the page in pt (0 = the drawing's own size), the font size the drawing's 12 px text takes on the page,
// (the axis labels'; the drawing's are 13 px) and the line and marker scales. Absent: today's drawing, byte for byte.
struct PageStyle {
  bool set = false;
  double width = 0, height = 0, font = 13;
  am::svg::Strokes strokes;
};

PageStyle style_of(const am_record *doc) {
  const am_record *s = am_record_get(am_record_get(doc, "report"), "style");
  PageStyle st;
  if (am_record_type_of(s) != AM_REC_OBJECT) return st;
  auto positive = [&](const char *key, double def) {
    const double v = spec_number(s, key, def);
    return std::isfinite(v) && v > 0 ? v : def;
  };
  st.set = true;
  st.width = positive("width", 0), st.height = positive("height", 0), st.font = positive("font_size", 13);
  st.strokes.line = positive("line_scale", 1), st.strokes.marker = positive("marker_scale", 1);
  return st;
}

// A line plot or bar chart laid out for the page: its layout units are the page's pt divided by font / 13 (so the
// 13-unit axis labels read `font` pt; ticks and legend are 11 units, the title 15), the plot area as wide as the
// page leaves beside the legend. Where the legend beside would leave a plot area under 160 units, the legend goes
// in rows under the plot (the plot area as wide as the page) so the text keeps its size; only a page below
// 258 × 120 units scales the drawing down.
template <class Plot>
am::svg::Drawing draw_for_page(Plot p, const PageStyle &st) {
  p.strokes = st.strokes;
  am::svg::Drawing d = am::svg::draw(p);
  const double k = st.font / 13.0;
  const double page_w = st.width > 0 ? st.width : d.width * k, page_h = st.height > 0 ? st.height : d.height * k;
  const int canvas_w = static_cast<int>(std::lround(page_w / k)), legend = d.width - p.width;
  const int narrowest = 160 + 98;  // 98: the axes' margins beside the plot area
  p.legend_below = legend > 0 && canvas_w - legend < narrowest;
  p.width = std::max(narrowest, p.legend_below ? canvas_w : canvas_w - legend);
  p.height = std::max(120, static_cast<int>(std::lround(page_h / k)));
  d = am::svg::draw(p);
  am::svg::fit_page(&d, page_w, page_h);
  return d;
}

am::svg::Drawing draw_bars_styled(const am::svg::BarChart &b, const PageStyle &st) {
  return st.set ? draw_for_page(b, st) : am::svg::draw(b);
}

am::svg::Drawing draw_styled(const am::svg::LinePlot &p, const PageStyle &st) {
  return st.set ? draw_for_page(p, st) : am::svg::draw(p);
}

bool draw_one(const am_record *doc, const am_record *spec, const am::labels::Table &names, const PageStyle &st,
              am::svg::Drawing *out) {
  const std::string kind = spec_string(spec, "kind");
  if (kind == "lines" || kind == "scatter") {
    am::svg::LinePlot p;
    axes_of(spec, names, &p);
    if (add_series(doc, spec, "", true, names, &p) == 0) return false;
    *out = draw_styled(p, st);
    return true;
  }
  bool drawn = false;
  if (kind == "heatmap") drawn = draw_heatmap(doc, spec, names, out);
  if (kind == "bars") drawn = draw_bars(doc, spec, names, st, out);
  // heat maps keep their layout: scaled onto the page whole (their text follows the page, not --font-size)
  if (drawn && st.set && kind == "heatmap")
    am::svg::fit_page(out, st.width > 0 ? st.width : out->width, st.height > 0 ? st.height : out->height);
  return drawn;  // a kind this version does not know: skipped
}

const am_record *plot_list(const am_record *doc) { return am_record_get(am_record_get(doc, "report"), "plots"); }

// <dir>/<stem>.svg, .pdf and .png of the same drawing, as `formats` (resolved: plot_formats) asks. The PDF and the
// PNG are drawn before either is written: a drawing cairo refuses leaves neither.
void write_drawing(const std::string &dir, const std::string &stem, const am::svg::Drawing &d, uint32_t formats,
                   std::vector<std::string> *written) {
  if (formats & AM_REPORT_FORMAT_SVG) {
    write_file_synced(dir + "/" + stem + ".svg", d.svg);
    if (written) written->push_back(stem + ".svg");
  }
#if AM_REPORT_CAIRO
  std::string why;
  const std::string pdf = formats & AM_REPORT_FORMAT_PDF ? am::svg::pdf_bytes(d, &why) : std::string();
  const std::string png = why.empty() && formats & AM_REPORT_FORMAT_PNG ? am::svg::png_bytes(d, kPngScale, &why)
                                                                         : std::string();
  if (!why.empty()) throw Error(AM_ERR_IO, "cannot draw " + stem + ".pdf/.png: " + why);
  for (const auto &[bit, ext, bytes] : {std::tuple(AM_REPORT_FORMAT_PDF, ".pdf", &pdf),
                                        std::tuple(AM_REPORT_FORMAT_PNG, ".png", &png)}) {
    if (!(formats & bit)) continue;
    write_file_synced(dir + "/" + stem + ext, *bytes);
    if (written) written->push_back(stem + ext);
  }
#endif
}

}  // namespace

void check_plot_formats() {
  const char *v = std::getenv("AM_PLOT_FORMATS");
  if (!v || std::string(v) == "all" || std::string(v) == "svg") return;
  throw Error(AM_ERR_USAGE, std::string("AM_PLOT_FORMATS='") + std::string(v).substr(0, 60) +
                                "': expected svg (SVG plots only) or all (SVG, PDF and PNG), one word (a list such "
                                "as svg,pdf: attnmech --plots, the report library's formats setting)");
}

namespace {
const char *const kNoCairo =
    "this attnmech was built without cairo, so its plots are svg only (pdf and png need libcairo2-dev when it is built)";
}  // namespace

uint32_t available_formats() {
#if AM_REPORT_CAIRO  // a build without it (or one that does not define it, as the fuzz harnesses'): SVG only
  return AM_REPORT_FORMAT_SVG | AM_REPORT_FORMAT_PDF | AM_REPORT_FORMAT_PNG;
#else
  return AM_REPORT_FORMAT_SVG;
#endif
}

uint32_t parse_formats(const std::string &list) {
  static const std::pair<const char *, uint32_t> kNames[] = {
      {"svg", AM_REPORT_FORMAT_SVG}, {"pdf", AM_REPORT_FORMAT_PDF}, {"png", AM_REPORT_FORMAT_PNG}, {"all", 0}};
  const std::string shown = "'" + list.substr(0, 60) + (list.size() > 60 ? "…" : "") + "'";
  const std::string valid = "; the formats are svg, pdf and png, comma-separated (e.g. svg,pdf), or all";
  uint32_t bits = 0;
  size_t pos = 0;
  do {
    const size_t comma = list.find(',', pos);
    const std::string name = am::text::trim(list.substr(pos, comma == std::string::npos ? comma : comma - pos));
    const auto hit = std::find_if(std::begin(kNames), std::end(kNames), [&](const auto &n) { return name == n.first; });
    if (hit == std::end(kNames))
      throw Error(AM_ERR_USAGE, (name.empty() ? "an empty plot format in " : "unknown plot format '" +
                                    name.substr(0, 20) + "' in ") + shown + valid);
    bits |= hit->second ? hit->second : available_formats();
    pos = comma == std::string::npos ? comma : comma + 1;
  } while (pos != std::string::npos);
  if (bits & ~available_formats())
    throw Error(AM_ERR_USAGE, "plot formats " + shown + ": " + kNoCairo);
  return bits;
}

uint32_t plot_formats(uint32_t asked) {
  if (asked & ~AM_REPORT_FORMAT_ALL)
    throw Error(AM_ERR_INVALID_ARGUMENT, "report: plot formats " + std::to_string(asked) +
                                             ": expected AM_REPORT_FORMAT_* bits (svg 1, pdf 2, png 4)");
  if (asked & ~available_formats())
    throw Error(AM_ERR_USAGE, std::string("plot formats: ") + kNoCairo);
  if (asked != AM_REPORT_FORMATS_DEFAULT) return asked;
  check_plot_formats();  // 3.6's variable: "all" = every format the build has, "svg" (or unset) = SVG
  const char *v = std::getenv("AM_PLOT_FORMATS");
  return v && std::string(v) == "all" ? available_formats() : AM_REPORT_FORMAT_SVG;
}

void draw_plots(const am_record *doc, const std::string &dir, uint32_t formats, std::vector<std::string> *written) {
  const uint32_t files = plot_formats(formats);  // before the first plot: a bad setting draws nothing
  const am_record *plots = plot_list(doc);
  const PageStyle st = style_of(doc);
  const am::labels::Table names = label_table(doc);  // report.labels, read once for every plot
  for (size_t i = 0; i < am_record_size(plots); ++i) {
    const am_record *spec = am_record_at(plots, i);
    const std::string file = spec_string(spec, "file");
    const std::string why = am::files::name_problem(file);  // the one safe-name rule: refused, not encoded
    if (!why.empty())
      throw Error(AM_ERR_FORMAT, "report.plots." + std::to_string(i) + ": invalid file name '" +
                                     file.substr(0, 60) + (file.size() > 60 ? "…" : "") + "': " + why);
    am::svg::Drawing d;
    if (!draw_one(doc, spec, names, st, &d)) continue;
    write_drawing(dir, file, d, files, written);
  }
}

void draw_compare(const std::vector<const am_record *> &docs, const std::vector<std::string> &labels,
                  const std::string &dir, uint32_t formats, std::vector<std::string> *written) {
  const uint32_t files = plot_formats(formats);
  std::vector<std::string> order;  // files in the order of their first appearance
  std::map<std::string, std::vector<std::pair<size_t, const am_record *>>> by_file;
  std::vector<am::labels::Table> names;  // each document's report.labels, read once
  for (size_t d = 0; d < docs.size(); ++d) {
    names.push_back(label_table(docs[d]));
    const am_record *plots = plot_list(docs[d]);
    for (size_t i = 0; i < am_record_size(plots); ++i) {
      const am_record *spec = am_record_at(plots, i);
      const std::string file = spec_string(spec, "file");
      if (spec_string(spec, "kind") != "lines" || !am::files::safe_name(file)) continue;
      auto &v = by_file[file];
      if (v.empty()) order.push_back(file);
      if (v.empty() || v.back().first != d) v.emplace_back(d, spec);
    }
  }
  for (const auto &file : order) {
    const auto &v = by_file[file];
    if (v.size() < 2) continue;
    am::svg::LinePlot p;
    axes_of(v[0].second, names[v[0].first], &p);
    size_t added = 0;
    for (const auto &e : v)
      added += add_series(docs[e.first], e.second, labels[e.first] + ": ", false, names[e.first], &p);
    if (added == 0) continue;
    write_drawing(dir, "compare_" + file, draw_styled(p, style_of(docs[v[0].first])), files, written);
  }
}

}  // namespace am::report
