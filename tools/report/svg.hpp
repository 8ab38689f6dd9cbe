// A small self-contained SVG plot writer for the attnmech report library: line plots (linear or log axes, error
// bars, horizontal reference lines, legend), heat maps (diverging or sequential colour scale, labelled
// axes, colour bar) and grouped bar charts. Output is a plain SVG 1.1 document as a string, and the same drawing
// as a list of primitives (Drawing) that the cairo back end (cairo_out.cpp) replays as PDF and PNG.
#ifndef ATTNMECH_REPORT_SVG_HPP
#define ATTNMECH_REPORT_SVG_HPP

#include <string>
#include <utility>
#include <vector>

namespace am::svg {

// A colour from the plot palette (cycles).
std::string palette(size_t i);

struct Series {
  std::string name;
  std::vector<double> x, y;
  std::vector<double> yerr;   // optional: symmetric error bars (same length as y)
  std::string color;          // "" = palette
  bool line = true;
  bool points = true;
  bool dashed = false;
};

struct HLine {
  double y = 0;
  std::string label;
  std::string color;          // "" = palette
  bool dashed = true;
};

// Line widths and marker radii of a drawing, relative to the default (a figure style's; 1 = today's drawing).
struct Strokes {
  double line = 1, marker = 1;
};

struct LinePlot {
  std::string title, xlabel, ylabel;
  bool logx = false, logy = false;
  std::vector<Series> series;
  std::vector<HLine> hlines;
  double xmin, xmax, ymin, ymax;   // NaN = automatic
  int width = 680, height = 440;
  Strokes strokes;
  bool legend_below = false;       // the legend in rows under the plot, inside width × height (a narrow page)
  LinePlot();
};

struct HeatMap {
  std::string title, xlabel, ylabel;
  size_t rows = 0, cols = 0;
  std::vector<double> values;     // row-major: values[i*cols + j] is row i, column j
  std::vector<std::string> row_labels, col_labels;   // optional (empty = indices)
  bool diverging = true;          // symmetric scale around 0 (blue–white–red); else sequential
  bool annotate = true;           // print values in cells when the matrix is small (≤ 10×10)
  int size = 480;                 // side of the square plot area in px
  double vmax;                    // diverging scale: colour limit ±vmax (NaN = max |value|)
  double clip_quantile;           // in (0, 1): the colour scale ends at this quantile of the values (|values| when
                                  // diverging), larger ones take the end colour; NaN = the full range
  bool upper_only = false;        // cells below the diagonal left blank (a symmetric matrix with marks below)
  std::vector<std::pair<size_t, size_t>> marks;  // (row, column) cells drawn over with a ring
  std::string mark_label;         // the marks' legend, above the map
  std::string value_label;        // the colour bar's label ("" = none)
  std::vector<size_t> row_breaks, col_breaks;  // rows / columns before which the index jumps (a trimmed axis)
  HeatMap();
};

struct BarGroup {
  std::string name;
  std::vector<double> values;     // one per category
  std::string color;
  std::vector<double> errors;     // optional: symmetric error bars (same length as values)
};

struct BarChart {
  std::string title, xlabel, ylabel;
  std::vector<std::string> categories;
  std::vector<BarGroup> groups;
  double ymin, ymax;              // NaN = automatic (from 0)
  int width = 720, height = 420;
  Strokes strokes;
  bool legend_below = false;       // as LinePlot's
  BarChart();
};

// One primitive of a drawing, in the SVG's user units (px; 1 px = 1 pt in the PDF).
struct Op {
  enum Kind { Rect, Line, Text, Circle, Polyline, ClipBegin, ClipEnd } kind = Rect;
  double x = 0, y = 0;        // rect / clip: top-left corner; line: start; text: anchor; circle: centre
  double w = 0, h = 0;        // rect / clip: size; line: the end point (x2, y2); circle: w = radius
  std::vector<double> points; // polyline: x0, y0, x1, y1, ...
  std::string fill, stroke;   // SVG colours ("#rgb", "#rrggbb", "white", "black"); "" = none
  double stroke_width = 1;
  bool dashed = false;        // stroke-dasharray 6 4
  std::string text;           // UTF-8
  double font = 12;
  char anchor = 'm';          // 's'tart, 'm'iddle, 'e'nd (text-anchor)
  double rotate = 0;          // degrees about the anchor (SVG sign: positive = clockwise on screen)
  bool bold = false;
};

// A drawing: its size, its primitives in paint order, and its SVG text. `page_width` × `page_height` (pt; 0 = the
// drawing's own size) is the page it is scaled onto, uniformly and centred (fit_page).
struct Drawing {
  int width = 0, height = 0;
  double page_width = 0, page_height = 0;
  std::vector<Op> ops;
  std::string svg;
};

Drawing draw(const LinePlot &p);
Drawing draw(const HeatMap &h);
Drawing draw(const BarChart &b);
std::string render(const LinePlot &p);  // draw(p).svg
std::string render(const HeatMap &h);
std::string render(const BarChart &b);

// Place rendered SVG documents side by side (left to right) in one document.
std::string hstack(const std::vector<std::string> &docs);
// The same for drawings: the SVG of hstack() and every part's primitives moved right by the widths before it.
Drawing hstack(const std::vector<Drawing> &parts);

// Put the drawing on a page of w × h pt: the SVG's width and height become the page's (its viewBox stays the
// drawing's, so it is scaled uniformly and centred), and the PDF and PNG take the page's size.
void fit_page(Drawing *d, double w, double h);

// Escape text for SVG/XML.
std::string escape(const std::string &s);
// Tick positions for an axis range (nice numbers; decades and 2/5 multiples on log axes).
std::vector<double> ticks(double lo, double hi, bool log);
std::string format_tick(double v);

// The cairo back end (cairo_out.cpp; built with -Dcairo): a drawing as a one-page PDF of width × height pt, and
// as a PNG of (width × scale) × (height × scale) pixels. Text is real text (cairo's toy API, DejaVu Sans) placed
// at the SVG's anchors. Returns the file's bytes; "" when cairo reports an error (*error says which).
std::string pdf_bytes(const Drawing &d, std::string *error);
std::string png_bytes(const Drawing &d, double scale, std::string *error);

// Write `content` to `path`; false on failure.
bool write_file(const std::string &path, const std::string &content);

}  // namespace am::svg

#endif
