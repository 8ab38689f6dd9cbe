// A small self-contained SVG plot writer (see svg.hpp).
#include "svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace am::svg {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

struct Rgb {
  double r, g, b;
};

std::string hex(Rgb c) {
  char buf[16];
  auto clamp = [](double x) { return static_cast<int>(std::lround(std::min(255.0, std::max(0.0, x)))); };
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", clamp(c.r), clamp(c.g), clamp(c.b));
  return buf;
}

Rgb mix(Rgb a, Rgb b, double t) { return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t}; }

// Diverging blue–white–red for t in [-1, 1].
std::string diverging_colour(double t) {
  if (!std::isfinite(t)) return "#bbbbbb";
  t = std::max(-1.0, std::min(1.0, t));
  const Rgb white{247, 247, 247}, blue{59, 76, 192}, red{180, 4, 38};
  return hex(t < 0 ? mix(white, blue, -t) : mix(white, red, t));
}

// Sequential (viridis-like stops) for t in [0, 1].
std::string sequential_colour(double t) {
  if (!std::isfinite(t)) return "#bbbbbb";
  static const Rgb stops[] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  t = std::max(0.0, std::min(1.0, t)) * 4.0;
  int i = std::min(3, static_cast<int>(t));
  return hex(mix(stops[i], stops[i + 1], t - i));
}

// Approximate text width (px) of a string at a given font size (sans-serif).
double text_width(const std::string &s, double font) {
  size_t chars = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++chars;  // count UTF-8 code points
  return static_cast<double>(chars) * font * 0.58;
}

// How a text is drawn beyond its anchor and size: turned about its anchor, bold, or in another colour.
struct TextStyle {
  double rotate = 0;
  bool bold = false;
  const char *fill = nullptr;  // nullptr = black (the SVG default)
};

// A number as `<<` prints it ("3.5", "16"): the few attributes written that way before numbers were rounded.
std::string plain(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

// The drawing being built: the SVG text (an output stream; it owns no library handle) and, in step, the
// primitives it is made of (the cairo back end's input).
struct Doc {
  std::ostringstream o;
  std::vector<Op> ops;
  int width, height;
  Strokes k;  // a style's line and marker scales; at 1 every width is written as before
  Doc(int w, int h, Strokes strokes = {}) : width(w), height(h), k(strokes) {
    o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << w << "\" height=\"" << h
      << "\" viewBox=\"0 0 " << w << ' ' << h << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      << "<rect x=\"0\" y=\"0\" width=\"" << w << "\" height=\"" << h << "\" fill=\"white\"/>\n";
    add_rect(0, 0, w, h, "white", "");
  }
  void add_rect(double x, double y, double w, double h, const std::string &fill, const std::string &stroke) {
    Op op;
    op.kind = Op::Rect, op.x = x, op.y = y, op.w = w, op.h = h, op.fill = fill, op.stroke = stroke;
    ops.push_back(std::move(op));
  }
  void text(double x, double y, const std::string &s, double size = 12, const char *anchor = "middle",
            const TextStyle &st = {}) {
    std::string extra;
    if (st.rotate != 0) extra = "transform=\"rotate(" + plain(st.rotate) + " " + num(x) + " " + num(y) + ")\"";
    if (st.bold) extra = "font-weight=\"bold\"";
    if (st.fill) extra = std::string("fill=\"") + st.fill + "\"";
    o << "<text x=\"" << num(x) << "\" y=\"" << num(y) << "\" font-size=\"" << size << "\" text-anchor=\"" << anchor
      << "\"" << (extra.empty() ? "" : " ") << extra << ">" << escape(s) << "</text>\n";
    Op op;
    op.kind = Op::Text, op.x = x, op.y = y, op.text = s, op.font = size, op.anchor = anchor[0];
    op.rotate = st.rotate, op.bold = st.bold, op.fill = st.fill ? st.fill : "black";
    ops.push_back(std::move(op));
  }
  void line(double x1, double y1, double x2, double y2, const std::string &stroke, double width = 1,
            bool dashed = false) {
    width *= k.line;
    o << "<line x1=\"" << num(x1) << "\" y1=\"" << num(y1) << "\" x2=\"" << num(x2) << "\" y2=\"" << num(y2)
      << "\" stroke=\"" << stroke << "\" stroke-width=\"" << width << "\"" << (dashed ? " stroke-dasharray=\"6 4\"" : "")
      << "/>\n";
    Op op;
    op.kind = Op::Line, op.x = x1, op.y = y1, op.w = x2, op.h = y2, op.stroke = stroke, op.stroke_width = width;
    op.dashed = dashed;
    ops.push_back(std::move(op));
  }
  void rect(double x, double y, double w, double h, const std::string &fill) {
    o << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w) << "\" height=\"" << num(h)
      << "\" fill=\"" << fill << "\"/>\n";
    add_rect(x, y, w, h, fill, "");
  }
  // An unfilled rectangle outlined in #333 (a plot's frame); `width_text` as the SVG writes the width.
  void frame(double x, double y, double w, double h, const std::string &width_text) {
    o << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << width_text << "\" height=\"" << num(h)
      << "\" fill=\"none\" stroke=\"#333\"/>\n";
    add_rect(x, y, w, h, "", "#333");
  }
  // A filled dot (stroke "") or a ring; `r_text`, `width_text` as the SVG writes them.
  void circle(double cx, double cy, double r, const std::string &r_text, const std::string &fill,
              const std::string &stroke = "", double stroke_width = 0, const std::string &width_text = "") {
    if (k.marker != 1) return circle_scaled(cx, cy, r * k.marker, fill, stroke, stroke_width * k.line);
    o << "<circle cx=\"" << num(cx) << "\" cy=\"" << num(cy) << "\" r=\"" << r_text << "\" fill=\""
      << (fill.empty() ? "none" : fill) << "\"";
    if (!stroke.empty()) o << " stroke=\"" << stroke << "\" stroke-width=\"" << width_text << "\"";
    o << "/>\n";
    Op op;
    op.kind = Op::Circle, op.x = cx, op.y = cy, op.w = r, op.fill = fill, op.stroke = stroke;
    op.stroke_width = stroke_width;
    ops.push_back(std::move(op));
  }
  void circle_scaled(double cx, double cy, double r, const std::string &fill, const std::string &stroke,
                     double stroke_width) {
    const Strokes unit = k;
    k = Strokes{};
    circle(cx, cy, r, plain(r), fill, stroke, stroke_width, plain(stroke_width));
    k = unit;
  }
  // An open polyline through (x0, y0, x1, y1, ...), no fill.
  void polyline(const std::vector<double> &pts, const std::string &stroke, bool dashed) {
    o << "<polyline fill=\"none\" stroke=\"" << stroke << "\" stroke-width=\"" << 2 * k.line << "\""
      << (dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"";
    for (size_t i = 0; i + 1 < pts.size(); i += 2) o << num(pts[i]) << "," << num(pts[i + 1]) << " ";
    o << "\"/>\n";
    Op op;
    op.kind = Op::Polyline, op.points = pts, op.stroke = stroke, op.stroke_width = 2 * k.line, op.dashed = dashed;
    ops.push_back(std::move(op));
  }
  // Everything until clip_end() is clipped to the plot area.
  void clip_begin(double x, double y, double w, double h) {
    o << "<defs><clipPath id=\"plotarea\"><rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(w)
      << "\" height=\"" << num(h) << "\"/></clipPath></defs>\n<g clip-path=\"url(#plotarea)\">\n";
    Op op;
    op.kind = Op::ClipBegin, op.x = x, op.y = y, op.w = w, op.h = h;
    ops.push_back(std::move(op));
  }
  void clip_end() {
    o << "</g>\n";
    Op op;
    op.kind = Op::ClipEnd;
    ops.push_back(std::move(op));
  }
  Drawing finish() {
    o << "</svg>\n";
    Drawing d;
    d.width = width, d.height = height, d.ops = std::move(ops), d.svg = o.str();
    return d;
  }
};

const TextStyle kBold{0, true, nullptr};

struct Axis {
  double lo, hi;
  bool log;
  double p0, p1;  // pixel positions of lo and hi
  double t(double v) const { return log ? std::log10(v) : v; }
  double px(double v) const {
    double a = t(lo), b = t(hi);
    return p0 + (t(v) - a) / (b - a) * (p1 - p0);
  }
  bool valid(double v) const { return std::isfinite(v) && (!log || v > 0); }
};

// Expand [lo, hi] to a sensible non-empty range with a margin.
void auto_range(double &lo, double &hi, bool log, double pad_frac) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    lo = log ? 1 : 0;
    hi = log ? 10 : 1;
    return;
  }
  if (log) {
    double a = std::log10(lo), b = std::log10(hi);
    if (b - a < 1e-12) {
      a -= 0.5;
      b += 0.5;
    }
    double pad = (b - a) * pad_frac;
    lo = std::pow(10.0, a - pad);
    hi = std::pow(10.0, b + pad);
  } else {
    if (hi - lo < 1e-300) {
      double d = std::max(std::fabs(lo) * 0.1, 1e-3);
      lo -= d;
      hi += d;
    }
    double pad = (hi - lo) * pad_frac;
    lo -= pad;
    hi += pad;
  }
}

// Axes frame, ticks and labels for a plot area.
void draw_axes(Doc &d, const Axis &x, const Axis &y, const std::string &xlabel, const std::string &ylabel,
               bool xticks = true) {
  double left = x.p0, right = x.p1, bottom = y.p0, top = y.p1;
  for (double v : ticks(y.lo, y.hi, y.log)) {
    double py = y.px(v);
    d.line(left, py, right, py, "#e4e4e4");
    d.line(left - 5, py, left, py, "#333");
    d.text(left - 8, py + 4, format_tick(v), 11, "end");
  }
  if (xticks) {
    for (double v : ticks(x.lo, x.hi, x.log)) {
      double px = x.px(v);
      d.line(px, bottom, px, top, "#e4e4e4");
      d.line(px, bottom, px, bottom + 5, "#333");
      d.text(px, bottom + 18, format_tick(v), 11);
    }
  }
  d.frame(left, top, right - left, bottom - top, num(right - left));
  if (!xlabel.empty()) d.text((left + right) / 2, bottom + 38, xlabel, 13);
  if (!ylabel.empty()) {
    double cx = left - 52, cy = (top + bottom) / 2;
    d.text(cx, cy, ylabel, 13, "middle", TextStyle{-90});
  }
}

// The legend's text measure: DejaVu Sans advance widths (the SVG's first font, and cairo's) per 1000 em for printable
// ASCII, 0.9 em for any other code point (Greek, ±, ×, subscripts: 0.4–0.84 em). Helvetica and Arial, the SVG's
// fallbacks, are narrower, so a legend laid out by it fits the canvas in every viewer.
double legend_text_width(const std::string &s, double font) {
  static const unsigned short adv[95] = {
      318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636, 636, 636, 636, 636,
      636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863, 748, 787,
      603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352, 635,
      634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838};
  double em = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte
    em += c >= 32 && c < 127 ? adv[c - 32] / 1000.0 : 0.9;
  }
  return em * font;
}

// The bytes of s from `from`, as many whole code points as fit in `width` (at least one).
size_t fit_prefix(const std::string &s, size_t from, double width, double font) {
  size_t end = from;
  do {
    size_t next = end + 1;
    while (next < s.size() && (static_cast<unsigned char>(s[next]) & 0xC0) == 0x80) ++next;
    if (end > from && legend_text_width(s.substr(from, next - from), font) > width) break;
    end = next;
  } while (end < s.size());
  return end;
}

// A legend label in lines no wider than `width`: broken at spaces, a word wider than `width` by characters. Every
// character of the label is kept (two series that differ only at the end stay two).
std::vector<std::string> wrap_label(const std::string &s, double width, double font) {
  std::vector<std::string> lines;
  std::string cur;
  size_t i = 0;
  while (i < s.size()) {
    const size_t sp = s.find(' ', i), end = sp == std::string::npos ? s.size() : sp;
    std::string word = s.substr(i, end - i);
    i = end == s.size() ? end : end + 1;
    const std::string joined = cur.empty() ? word : cur + " " + word;
    if (legend_text_width(joined, font) <= width) {
      cur = joined;
      continue;
    }
    if (!cur.empty()) lines.push_back(cur);
    cur.clear();
    while (legend_text_width(word, font) > width) {  // alone and still too wide: cut by characters
      const size_t n = fit_prefix(word, 0, width, font);
      lines.push_back(word.substr(0, n));
      word = word.substr(n);
    }
    cur = word;
  }
  if (!cur.empty() || lines.empty()) lines.push_back(cur);
  return lines;
}

struct LegendEntry {
  std::string label, color;
  bool line, points, dashed;
  std::vector<std::string> lines;  // the label as drawn (wrap_legend); empty = the label on one line
};

constexpr double kLegendRow = 18, kLegendLine = 13;  // an entry's first line, each further line of its label
constexpr double kLegendBeside = 260;                // the widest legend beside a plot (marker 30 + text + 18)

// Every entry's label wrapped to `width` of text; the widest line.
double wrap_legend(std::vector<LegendEntry> &entries, double width) {
  double widest = 0;
  for (auto &e : entries) {
    e.lines = wrap_label(e.label, width, 11);
    for (const auto &l : e.lines) widest = std::max(widest, legend_text_width(l, 11));
  }
  return widest;
}

double entry_height(const LegendEntry &e) {
  return kLegendRow + kLegendLine * static_cast<double>(e.lines.size() > 1 ? e.lines.size() - 1 : 0);
}

void draw_legend_entry(Doc &d, double x, double yy, const LegendEntry &e) {
  if (e.line) d.line(x, yy, x + 24, yy, e.color, 2, e.dashed);
  if (e.points) d.circle(x + 12, yy, 3.5, "3.5", e.color);
  if (!e.line && !e.points) d.rect(x + 4, yy - 6, 16, 12, e.color);
  if (e.lines.empty()) d.text(x + 30, yy + 4, e.label, 11, "start");
  for (size_t k = 0; k < e.lines.size(); ++k) d.text(x + 30, yy + 4 + kLegendLine * static_cast<double>(k), e.lines[k], 11, "start");
}

// The entries one under the other from (x, y); returns the y below the last.
double draw_legend(Doc &d, double x, double y, const std::vector<LegendEntry> &entries) {
  for (const auto &e : entries) {
    draw_legend_entry(d, x, y, e);
    y += entry_height(e);
  }
  return y;
}

// The legend beside the plot: labels wrapped so that no line runs past kLegendBeside (the canvas's right edge);
// the width it takes.
double legend_width(std::vector<LegendEntry> &entries) {
  if (entries.empty()) return 0;
  return std::min(kLegendBeside, wrap_legend(entries, kLegendBeside - 48) + 48);
}

double legend_height(const std::vector<LegendEntry> &entries) {
  double h = 0;
  for (const auto &e : entries) h += entry_height(e);
  return h;
}

// A legend under the plot: rows of as many columns as fit in `width`, each column as wide as the widest entry
// (labels wrapped to the width when one alone is wider), each row as tall as its tallest entry.
struct LegendGrid {
  size_t cols = 1;
  double col_width = 0;
  std::vector<double> row_heights;
  double height() const {
    double h = 0;
    for (double r : row_heights) h += r;
    return row_heights.empty() ? 0 : h + 6;
  }
};

LegendGrid legend_grid(std::vector<LegendEntry> &entries, double width) {
  LegendGrid g;
  if (entries.empty()) return g;
  g.col_width = std::min(width, wrap_legend(entries, std::max(40.0, width - 42)) + 42);
  g.cols = std::max<size_t>(1, std::min(entries.size(), static_cast<size_t>(width / g.col_width)));
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i % g.cols == 0) g.row_heights.push_back(0);
    g.row_heights.back() = std::max(g.row_heights.back(), entry_height(entries[i]));
  }
  return g;
}

// The grid centred across a drawing `width` wide, its last row's text 14 units above the bottom edge `bottom`.
void draw_legend_below(Doc &d, double width, double bottom, const std::vector<LegendEntry> &entries,
                       const LegendGrid &g) {
  const double x0 = std::max(8.0, (width - g.col_width * static_cast<double>(g.cols)) / 2);
  double y = bottom - g.height() + 6;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0 && i % g.cols == 0) y += g.row_heights[i / g.cols - 1];
    draw_legend_entry(d, x0 + g.col_width * static_cast<double>(i % g.cols), y, entries[i]);
  }
}

}  // namespace

LinePlot::LinePlot() : xmin(kNaN), xmax(kNaN), ymin(kNaN), ymax(kNaN) {}
BarChart::BarChart() : ymin(kNaN), ymax(kNaN) {}
HeatMap::HeatMap() : vmax(kNaN), clip_quantile(kNaN) {}

std::string palette(size_t i) {
  static const char *const cols[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                     "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return cols[i % 10];
}

void fit_page(Drawing *d, double w, double h) {
  const std::string own = "width=\"" + std::to_string(d->width) + "\" height=\"" + std::to_string(d->height) + "\"";
  const size_t at = d->svg.find(own);  // the <svg> element's: the first width/height pair of the document
  if (at != std::string::npos) d->svg.replace(at, own.size(), "width=\"" + plain(w) + "\" height=\"" + plain(h) + "\"");
  d->page_width = w, d->page_height = h;
}

std::string escape(const std::string &s) {
  std::string r;
  r.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&quot;"; break;
      default: r += c;
    }
  }
  return r;
}

std::string format_tick(double v) {
  if (std::fabs(v) < 1e-12) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::vector<double> ticks(double lo, double hi, bool log) {
  std::vector<double> out;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return out;
  if (log && lo > 0) {
    int a = static_cast<int>(std::floor(std::log10(lo))), b = static_cast<int>(std::ceil(std::log10(hi)));
    int decades = b - a;
    std::vector<double> mult;
    if (decades <= 1)
      mult = {1, 2, 3, 5};
    else if (decades <= 3)
      mult = {1, 2, 5};
    else
      mult = {1};
    int dstep = decades > 12 ? (decades + 5) / 6 : 1;
    for (int e = a; e <= b; e += dstep)
      for (double m : mult) {
        double v = m * std::pow(10.0, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push_back(v);
      }
    if (out.size() >= 2) return out;
    out.clear();
  }
  double span = hi - lo, raw = span / 6;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step)
    out.push_back(std::fabs(v) < 1e-9 * step ? 0.0 : v);
  return out;
}

namespace {

// The data's x and y ranges (error bars and reference lines included), padded, then the plot's fixed limits.
void line_plot_ranges(const LinePlot &p, double &xlo, double &xhi, double &ylo, double &yhi) {
  xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  for (const auto &s : p.series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      double x = s.x[i], y = s.y[i];
      if (!std::isfinite(x) || !std::isfinite(y) || (p.logx && x <= 0) || (p.logy && y <= 0)) continue;
      xlo = std::min(xlo, x);
      xhi = std::max(xhi, x);
      double e = i < s.yerr.size() && std::isfinite(s.yerr[i]) ? s.yerr[i] : 0;
      double ya = y - e, yb = y + e;
      if (p.logy && ya <= 0) ya = y;
      ylo = std::min(ylo, ya);
      yhi = std::max(yhi, yb);
    }
  for (const auto &h : p.hlines)
    if (std::isfinite(h.y) && (!p.logy || h.y > 0)) {
      ylo = std::min(ylo, h.y);
      yhi = std::max(yhi, h.y);
    }
  auto_range(xlo, xhi, p.logx, 0.04);
  auto_range(ylo, yhi, p.logy, 0.06);
  if (std::isfinite(p.xmin)) xlo = p.xmin;
  if (std::isfinite(p.xmax)) xhi = p.xmax;
  if (std::isfinite(p.ymin)) ylo = p.ymin;
  if (std::isfinite(p.ymax)) yhi = p.ymax;
}

// Legend entries: named series, then labelled reference lines (colours as drawn).
std::vector<LegendEntry> line_plot_legend(const LinePlot &p) {
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < p.series.size(); ++i) {
    const auto &s = p.series[i];
    if (!s.name.empty())
      legend.push_back({s.name, s.color.empty() ? palette(i) : s.color, s.line, s.points, s.dashed, {}});
  }
  for (size_t i = 0; i < p.hlines.size(); ++i) {
    const auto &h = p.hlines[i];
    if (!h.label.empty())
      legend.push_back({h.label, h.color.empty() ? palette(p.series.size() + i) : h.color, true, false, h.dashed, {}});
  }
  return legend;
}

// One series: its polyline (broken at points the axes cannot show), error bars and markers.
void draw_series(Doc &d, const Series &s, const std::string &c, const Axis &ax, const Axis &ay, double bottom) {
  size_t n = std::min(s.x.size(), s.y.size());
  if (s.line) {
    std::vector<double> pts;
    auto flush = [&]() {
      if (!pts.empty()) d.polyline(pts, c, s.dashed);
      pts.clear();
    };
    for (size_t i = 0; i < n; ++i) {
      if (!ax.valid(s.x[i]) || !ay.valid(s.y[i])) {
        flush();
        continue;
      }
      pts.push_back(ax.px(s.x[i]));
      pts.push_back(ay.px(s.y[i]));
    }
    flush();
  }
  for (size_t i = 0; i < n; ++i) {
    if (!ax.valid(s.x[i]) || !ay.valid(s.y[i])) continue;
    double px = ax.px(s.x[i]), py = ay.px(s.y[i]);
    if (i < s.yerr.size() && std::isfinite(s.yerr[i]) && s.yerr[i] > 0) {
      double lo = s.y[i] - s.yerr[i], hi = s.y[i] + s.yerr[i];
      double plo = ay.valid(lo) ? ay.px(lo) : bottom, phi = ay.px(hi);
      d.line(px, plo, px, phi, c, 1.2);
      d.line(px - 4, plo, px + 4, plo, c, 1.2);
      d.line(px - 4, phi, px + 4, phi, c, 1.2);
    }
    if (s.points) d.circle(px, py, 3.5, "3.5", c);
  }
}

// The heat map as drawn: every stride-th row and column of a matrix larger than 300 (keeps files small).
struct HeatGrid {
  const HeatMap &h;
  size_t stride = 1, R = 0, C = 0;
  explicit HeatGrid(const HeatMap &hm) : h(hm) {
    while (h.rows / stride > 300 || h.cols / stride > 300) ++stride;
    R = (h.rows + stride - 1) / stride;
    C = (h.cols + stride - 1) / stride;
  }
  double at(size_t i, size_t j) const { return h.values[i * stride * h.cols + j * stride]; }
  std::string row_label(size_t i) const {
    size_t k = i * stride;
    return k < h.row_labels.size() ? h.row_labels[k] : std::to_string(k);
  }
  std::string col_label(size_t j) const {
    size_t k = j * stride;
    return k < h.col_labels.size() ? h.col_labels[k] : std::to_string(k);
  }
};

// Colour scale: the finite values' range and the diverging scale's half-width amax.
struct HeatScale {
  double vmin = INFINITY, vmax = -INFINITY, amax = 0;
};

// The scale's end at the q-quantile of the values (of |values| for the diverging scale's half-width): one outlier
// (a contact map's strongest pair) would otherwise leave every other cell at the bottom colour.
void clip_scale(const HeatGrid &g, double q, HeatScale *sc) {
  std::vector<double> v;
  for (size_t i = 0; i < g.R; ++i)
    for (size_t j = 0; j < g.C; ++j) {
      const double x = g.at(i, j);
      if (std::isfinite(x)) v.push_back(g.h.diverging ? std::fabs(x) : x);
    }
  if (v.empty()) return;
  const auto k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  if (g.h.diverging && v[k] > 0) sc->amax = v[k];
  if (!g.h.diverging && v[k] > sc->vmin) sc->vmax = v[k];
}

HeatScale heat_scale(const HeatGrid &g) {
  const HeatMap &h = g.h;
  HeatScale sc;
  for (size_t i = 0; i < g.R; ++i)
    for (size_t j = 0; j < g.C; ++j) {
      double v = g.at(i, j);
      if (std::isfinite(v)) {
        sc.vmin = std::min(sc.vmin, v);
        sc.vmax = std::max(sc.vmax, v);
      }
    }
  if (!std::isfinite(sc.vmin)) sc.vmin = sc.vmax = 0;
  sc.amax = std::max(std::fabs(sc.vmin), std::fabs(sc.vmax));
  if (h.clip_quantile > 0 && h.clip_quantile < 1) clip_scale(g, h.clip_quantile, &sc);
  if (std::isfinite(h.vmax) && h.vmax > 0) sc.amax = h.vmax;
  if (sc.amax == 0) sc.amax = 1;
  if (!h.diverging && sc.vmax - sc.vmin < 1e-300) sc.vmax = sc.vmin + 1;
  return sc;
}

// Where things go: label font and spacing, cell size, the plot area's corner and size.
struct HeatLayout {
  double font;
  size_t label_every_r, label_every_c;
  bool rotate_cols;
  double cell, left, top, pw, ph, bottom_space;
};

HeatLayout heat_layout(const HeatGrid &g) {
  const HeatMap &h = g.h;
  const size_t R = g.R, C = g.C;
  HeatLayout lo;
  lo.font = R > 40 || C > 40 ? 9 : 11;
  lo.label_every_r = (R + 24) / 25, lo.label_every_c = (C + 24) / 25;
  double rl = 0, cl = 0;
  for (size_t i = 0; i < R; i += lo.label_every_r) rl = std::max(rl, text_width(g.row_label(i), lo.font));
  for (size_t j = 0; j < C; j += lo.label_every_c) cl = std::max(cl, text_width(g.col_label(j), lo.font));
  lo.rotate_cols =
      cl > static_cast<double>(h.size) / static_cast<double>(C) / static_cast<double>(lo.label_every_c) - 4;
  lo.cell = static_cast<double>(h.size) / static_cast<double>(std::max(R, C));
  lo.left = 30 + rl + (h.ylabel.empty() ? 0 : 22), lo.top = h.title.empty() ? 16 : 40;
  if (!h.marks.empty() && !h.mark_label.empty()) lo.top += 18;  // the marks' legend line
  lo.pw = lo.cell * static_cast<double>(C), lo.ph = lo.cell * static_cast<double>(R);
  lo.bottom_space = (lo.rotate_cols ? cl * 0.75 + 16 : 20) + (h.xlabel.empty() ? 8 : 28);
  return lo;
}

// The coloured cells, annotated with their values when the matrix is at most 10 × 10.
void draw_cells(Doc &d, const HeatGrid &g, const HeatScale &sc, const HeatLayout &lo) {
  const HeatMap &h = g.h;
  const size_t R = g.R, C = g.C;
  const double cell = lo.cell;
  bool annotate = h.annotate && R <= 10 && C <= 10;
  for (size_t i = 0; i < R; ++i)
    for (size_t j = 0; j < C; ++j) {
      if (h.upper_only && i > j) continue;
      double v = g.at(i, j);
      double t = h.diverging ? v / sc.amax : (v - sc.vmin) / (sc.vmax - sc.vmin);
      std::string fill = h.diverging ? diverging_colour(t) : sequential_colour(t);
      double x = lo.left + cell * static_cast<double>(j), y = lo.top + cell * static_cast<double>(i);
      d.rect(x, y, cell + 0.3, cell + 0.3, fill);
      if (annotate) {
        char buf[32];
        double shown = std::fabs(v) < 1e-4 * sc.amax ? 0.0 : v;  // round-off zeros print as 0
        std::snprintf(buf, sizeof buf, R > 5 || C > 5 ? "%.2g" : "%.3g", shown);
        bool dark = h.diverging ? std::fabs(t) > 0.6 : t < 0.5;
        TextStyle st;
        st.fill = dark ? "white" : "black";
        d.text(x + cell / 2, y + cell / 2 + 4, buf, std::min(12.0, cell / 4.5), "middle", st);
      }
    }
}

// The marked cells as rings (dots where cells are a few pixels wide), and their legend line above the map.
void draw_marks(Doc &d, const HeatGrid &g, const HeatLayout &lo) {
  const HeatMap &h = g.h;
  if (h.marks.empty()) return;
  const double r = std::max(1.4, lo.cell * 0.36), w = std::max(0.9, lo.cell * 0.14);
  auto ring = [&](double x, double y) { d.circle(x, y, r, num(r), "", "#000", w, num(w)); };
  for (const auto &m : h.marks) {
    const size_t i = m.first / g.stride, j = m.second / g.stride;
    if (i < g.R && j < g.C) ring(lo.left + lo.cell * (static_cast<double>(j) + 0.5), lo.top + lo.cell * (static_cast<double>(i) + 0.5));
  }
  if (h.mark_label.empty()) return;
  const double y = lo.top - 9;
  d.circle(lo.left + 5, y - 4, 4, "4", "", "#000", 1.2, "1.2");
  d.text(lo.left + 14, y, h.mark_label, 11, "start");
}

// Frame, row and column labels (columns rotated when they would overlap) and the axis labels.
void draw_heat_labels(Doc &d, const HeatGrid &g, const HeatLayout &lo) {
  const HeatMap &h = g.h;
  const double left = lo.left, top = lo.top, pw = lo.pw, ph = lo.ph, cell = lo.cell, font = lo.font;
  d.frame(left, top, pw, ph, num(pw));
  for (size_t i = 0; i < g.R; i += lo.label_every_r)
    d.text(left - 5, top + cell * (static_cast<double>(i) + 0.5) + font / 3, g.row_label(i), font, "end");
  for (size_t j = 0; j < g.C; j += lo.label_every_c) {
    double x = left + cell * (static_cast<double>(j) + 0.5), y = top + ph + 14;
    if (lo.rotate_cols)
      d.text(x, y, g.col_label(j), font, "end", TextStyle{-45});
    else
      d.text(x, y, g.col_label(j), font);
  }
  if (!h.xlabel.empty()) d.text(left + pw / 2, top + ph + lo.bottom_space, h.xlabel, 13);
  if (!h.ylabel.empty()) {
    double cx = 16, cy = top + ph / 2;
    d.text(cx, cy, h.ylabel, 13, "middle", TextStyle{-90});
  }
}

// The colour bar right of the plot, with its ticks.
void draw_colour_bar(Doc &d, const HeatMap &h, const HeatScale &sc, const HeatLayout &lo) {
  const double top = lo.top, ph = lo.ph;
  double bx = lo.left + lo.pw + 20, bw = 16;
  const int steps = 64;
  for (int k = 0; k < steps; ++k) {
    double f = 1.0 - (k + 0.5) / steps;  // top = max
    std::string fill = h.diverging ? diverging_colour(2 * f - 1) : sequential_colour(f);
    d.rect(bx, top + ph * k / steps, bw, ph / steps + 0.5, fill);
  }
  d.frame(bx, top, bw, ph, plain(bw));
  double lo_v = h.diverging ? -sc.amax : sc.vmin, hi_v = h.diverging ? sc.amax : sc.vmax;
  double widest = 0;
  for (double v : ticks(lo_v, hi_v, false)) {
    double y = top + ph * (hi_v - v) / (hi_v - lo_v);
    d.line(bx + bw, y, bx + bw + 4, y, "#333");
    d.text(bx + bw + 7, y + 4, format_tick(v), 10, "start");
    widest = std::max(widest, text_width(format_tick(v), 10));
  }
  if (!h.value_label.empty())  // turned like a y label, right of the tick labels
    d.text(bx + bw + 7 + widest + 14, top + ph / 2, h.value_label, 12, "middle", TextStyle{-90});
}

// Where a trimmed axis jumps (row or column k follows one that is not k - 1): a white gap across the map and a
// "//" on the frame, so a reader sees that indices are missing.
void draw_breaks(Doc &d, const HeatGrid &g, const HeatLayout &lo) {
  const HeatMap &h = g.h;
  for (size_t k : h.row_breaks) {
    if (k % g.stride || k / g.stride == 0 || k / g.stride >= g.R) continue;
    const double y = lo.top + lo.cell * static_cast<double>(k / g.stride);
    d.line(lo.left, y, lo.left + lo.pw, y, "white", 3);
    for (double dx : {-3.0, 1.0}) d.line(lo.left + dx - 3, y + 4, lo.left + dx + 3, y - 4, "#333", 1.2);
  }
  for (size_t k : h.col_breaks) {
    if (k % g.stride || k / g.stride == 0 || k / g.stride >= g.C) continue;
    const double x = lo.left + lo.cell * static_cast<double>(k / g.stride), y = lo.top + lo.ph;
    d.line(x, lo.top, x, y, "white", 3);
    for (double dx : {-3.0, 1.0}) d.line(x + dx - 2, y + 4, x + dx + 2, y - 4, "#333", 1.2);
  }
}

}  // namespace

Drawing draw(const LinePlot &p) {
  double xlo, xhi, ylo, yhi;
  line_plot_ranges(p, xlo, xhi, ylo, yhi);
  std::vector<LegendEntry> legend = line_plot_legend(p);
  const double lw = p.legend_below ? 0 : legend_width(legend);
  const LegendGrid below = p.legend_below ? legend_grid(legend, p.width - 16.0) : LegendGrid{};
  int width = p.width + static_cast<int>(std::ceil(lw));
  double left = 78, right = p.width - 20.0, top = p.title.empty() ? 20 : 40, bottom = p.height - 52.0 - below.height();
  // A legend beside the plot taller than the drawing makes it taller (its last entry stays on the canvas).
  const double legend_end = p.legend_below ? 0 : top + 10 + legend_height(legend) - kLegendRow + 8;
  Doc d(width, std::max(p.height, static_cast<int>(std::ceil(legend_end))), p.strokes);
  if (!p.title.empty()) d.text((left + right) / 2, 24, p.title, 15, "middle", kBold);
  Axis ax{xlo, xhi, p.logx, left, right}, ay{ylo, yhi, p.logy, bottom, top};
  draw_axes(d, ax, ay, p.xlabel, p.ylabel);
  d.clip_begin(left, top, right - left, bottom - top);
  for (size_t i = 0; i < p.hlines.size(); ++i) {
    const auto &h = p.hlines[i];
    if (!ay.valid(h.y)) continue;
    std::string c = h.color.empty() ? palette(p.series.size() + i) : h.color;
    d.line(left, ay.px(h.y), right, ay.px(h.y), c, 1.8, h.dashed);
  }
  // Dashed series (training curves, references) over the solid ones: where a test curve lies on its training
  // curve, the dashes still show.
  for (bool dashed : {false, true})
    for (size_t si = 0; si < p.series.size(); ++si) {
      const auto &s = p.series[si];
      if (s.dashed == dashed) draw_series(d, s, s.color.empty() ? palette(si) : s.color, ax, ay, bottom);
    }
  d.clip_end();
  if (p.legend_below) draw_legend_below(d, p.width, p.height, legend, below);
  else draw_legend(d, p.width + 4.0, top + 10, legend);
  return d.finish();
}

Drawing draw(const HeatMap &h) {
  const HeatGrid g(h);
  const HeatScale sc = heat_scale(g);
  const HeatLayout lo = heat_layout(g);
  int width = static_cast<int>(lo.left + lo.pw + 110 + (h.value_label.empty() ? 0 : 22)), height = static_cast<int>(lo.top + lo.ph + lo.bottom_space + 10);
  Doc d(width, height);
  if (!h.title.empty()) d.text(lo.left + lo.pw / 2, 24, h.title, 15, "middle", kBold);
  draw_cells(d, g, sc, lo);
  draw_breaks(d, g, lo);
  draw_marks(d, g, lo);
  draw_heat_labels(d, g, lo);
  draw_colour_bar(d, h, sc, lo);
  return d.finish();
}

Drawing draw(const BarChart &b) {
  size_t ncat = b.categories.size(), ng = b.groups.size();
  double ylo = 0, yhi = 0;
  for (const auto &g : b.groups)
    for (size_t i = 0; i < g.values.size(); ++i) {
      const double v = g.values[i];
      if (!std::isfinite(v)) continue;
      const double e = i < g.errors.size() && std::isfinite(g.errors[i]) ? std::fabs(g.errors[i]) : 0.0;
      ylo = std::min(ylo, v - e);
      yhi = std::max(yhi, v + e);
    }
  if (yhi - ylo < 1e-300) yhi = ylo + 1;
  yhi += (yhi - ylo) * 0.05;
  if (ylo < 0) ylo -= (yhi - ylo) * 0.05;
  if (std::isfinite(b.ymin)) ylo = b.ymin;
  if (std::isfinite(b.ymax)) yhi = b.ymax;
  std::vector<LegendEntry> legend;
  for (size_t i = 0; i < ng; ++i)
    if (!b.groups[i].name.empty())
      legend.push_back({b.groups[i].name, b.groups[i].color.empty() ? palette(i) : b.groups[i].color, false, false,
                        false, {}});
  const double lw = b.legend_below ? 0 : legend_width(legend);
  const LegendGrid below = b.legend_below ? legend_grid(legend, b.width - 16.0) : LegendGrid{};
  double left = 78, right = b.width - 20.0, top = b.title.empty() ? 20 : 40, bottom = b.height - 52.0 - below.height();
  const double legend_end = b.legend_below ? 0 : top + 10 + legend_height(legend) - kLegendRow + 8;
  Doc d(b.width + static_cast<int>(std::ceil(lw)), std::max(b.height, static_cast<int>(std::ceil(legend_end))),
        b.strokes);
  if (!b.title.empty()) d.text((left + right) / 2, 24, b.title, 15, "middle", kBold);
  Axis ax{0, 1, false, left, right}, ay{ylo, yhi, false, bottom, top};
  draw_axes(d, ax, ay, b.xlabel, b.ylabel, false);
  if (ncat > 0 && ng > 0) {
    double slot = (right - left) / static_cast<double>(ncat), bw = slot * 0.8 / static_cast<double>(ng);
    double y0 = ay.px(std::max(ylo, std::min(yhi, 0.0)));
    size_t every = std::max<size_t>(1, ncat / 30);
    for (size_t c = 0; c < ncat; ++c) {
      double x0 = left + slot * static_cast<double>(c) + slot * 0.1;
      for (size_t g = 0; g < ng; ++g) {
        if (c >= b.groups[g].values.size()) continue;
        double v = b.groups[g].values[c];
        if (!std::isfinite(v)) continue;
        double py = ay.px(std::max(ylo, std::min(yhi, v)));
        const std::string col = b.groups[g].color.empty() ? palette(g) : b.groups[g].color;
        const double bx = x0 + bw * static_cast<double>(g);
        d.rect(bx, std::min(py, y0), bw, std::fabs(y0 - py), col);
        const double e = c < b.groups[g].errors.size() ? b.groups[g].errors[c] : 0.0;
        if (std::isfinite(e) && e > 0) {
          const double plo = ay.px(std::max(ylo, v - e)), phi = ay.px(std::min(yhi, v + e)), xm = bx + bw / 2;
          d.line(xm, plo, xm, phi, "#333", 1.2);
          d.line(xm - 3, plo, xm + 3, plo, "#333", 1.2);
          d.line(xm - 3, phi, xm + 3, phi, "#333", 1.2);
        }
      }
      if (c % every == 0) d.text(left + slot * (static_cast<double>(c) + 0.5), bottom + 16, b.categories[c], 10);
    }
  }
  if (b.legend_below) draw_legend_below(d, b.width, b.height, legend, below);
  else draw_legend(d, b.width + 4.0, top + 10, legend);
  return d.finish();
}

std::string render(const LinePlot &p) { return draw(p).svg; }
std::string render(const HeatMap &h) { return draw(h).svg; }
std::string render(const BarChart &b) { return draw(b).svg; }

Drawing hstack(const std::vector<Drawing> &parts) {
  Drawing out;
  std::vector<std::string> docs;
  double dx = 0;
  for (const auto &p : parts) {
    docs.push_back(p.svg);
    for (Op op : p.ops) {
      op.x += dx;
      if (op.kind == Op::Line) op.w += dx;
      for (size_t i = 0; i < op.points.size(); i += 2) op.points[i] += dx;
      out.ops.push_back(std::move(op));
    }
    dx += p.width;
    out.height = std::max(out.height, p.height);
  }
  out.width = static_cast<int>(dx);
  out.svg = hstack(docs);
  return out;
}

std::string hstack(const std::vector<std::string> &docs) {
  double total_w = 0, max_h = 0;
  std::vector<std::pair<double, std::string>> parts;
  for (const auto &d : docs) {
    size_t a = d.find("<svg ");
    if (a == std::string::npos) continue;
    double w = 0, h = 0;
    size_t wp = d.find("width=\"", a), hp = d.find("height=\"", a);
    if (wp != std::string::npos) w = std::atof(d.c_str() + wp + 7);
    if (hp != std::string::npos) h = std::atof(d.c_str() + hp + 8);
    std::string body = d.substr(a);
    // Nested <svg> placed at x = total_w (the inner document keeps its own viewBox).
    body.insert(4, " x=\"" + num(total_w) + "\" y=\"0\"");
    while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
    parts.emplace_back(total_w, body);
    total_w += w;
    max_h = std::max(max_h, h);
  }
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\""
    << static_cast<int>(total_w) << "\" height=\"" << static_cast<int>(max_h) << "\" viewBox=\"0 0 "
    << static_cast<int>(total_w) << ' ' << static_cast<int>(max_h) << "\">\n";
  for (const auto &p : parts) o << p.second << "\n";
  o << "</svg>\n";
  return o.str();
}

bool write_file(const std::string &path, const std::string &content) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return false;
  f << content;
  return static_cast<bool>(f);
}

}  // namespace am::svg
